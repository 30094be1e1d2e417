"""Tables on S3 (the suite's SeaweedFS server) shared with PyIceberg 0.12: one SQLite catalog,
the same s3.* properties on both sides. PyIceberg reads what icefloe wrote (appends, a
merge-on-read delete, a copy-on-write overwrite) and icefloe reads and extends what PyIceberg
wrote."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe

pytest.importorskip("pyiceberg")
pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
NAME = "s3shared"


def rows(t: Any) -> list[tuple[int, str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = t.scan().to_arrow()
    return sorted(zip(data["id"].to_pylist(), data["s"].to_pylist(), strict=True))


def test_pyiceberg_and_icefloe_share_tables_on_s3(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    s3 = request.getfixturevalue("seaweedfs_server")
    warehouse = s3.warehouse(f"shared-{uuid.uuid4().hex[:8]}")
    props = {"uri": f"sqlite:///{tmp_path / 'catalog.db'}", "warehouse": warehouse, **s3.file_io_properties()}
    ours = icefloe.load_catalog(NAME, type="sql", **props)
    theirs = SqlCatalog(NAME, **props)
    try:
        ours.create_namespace("ns")
        t = ours.create_table(
            "ns.ice",
            SCHEMA,
            partition_by=["bucket(2, id)"],
            properties={"write.delete.mode": "merge-on-read"},
        )
        t.append(pa.table({"id": list(range(10)), "s": [f"a{i}" for i in range(10)]}, schema=SCHEMA))
        t.delete("id in (2, 3)")
        t.overwrite(pa.table({"id": [100], "s": ["x"]}, schema=SCHEMA), "id >= 8")
        want = sorted([(i, f"a{i}") for i in range(10) if i not in (2, 3, 8, 9)] + [(100, "x")])
        assert rows(t) == want
        loaded = theirs.load_table("ns.ice")
        assert loaded.metadata_location == t.refresh().metadata_location
        assert loaded.metadata_location.startswith(f"{warehouse}/ns/ice/metadata/")
        assert rows(loaded) == want

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            py_table = theirs.create_table("ns.py", schema=SCHEMA)
            py_table.append(pa.table({"id": [1, 2], "s": ["p", "q"]}, schema=SCHEMA))
        mine = ours.load_table("ns.py")
        assert mine.location.startswith(warehouse)
        assert rows(mine) == [(1, "p"), (2, "q")]
        mine.append(pa.table({"id": [3], "s": ["r"]}, schema=SCHEMA))
        assert rows(theirs.load_table("ns.py")) == [(1, "p"), (2, "q"), (3, "r")]
    finally:
        ours.close()
        theirs.engine.dispose()
