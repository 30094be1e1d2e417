"""The main job on Spark at a tiny scale, in the suite's shared session: ingest, queries, the late
batch and time travel through the icefloe data source, with the demo's own cross-checks (Q6 against
the source Parquet, every source row readable, time travel returning the earlier answer)."""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

import icefloe
from icefloe.cli._demo_spark import run_spark


def test_spark_demo_smoke(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")
    run_spark(tmp_path, 0.005, fresh=True, spark=spark)
    out = capsys.readouterr().out
    assert "Q6 now matches Q6 computed directly on the source Parquet" in out
    assert "every source row is readable" in out
    assert "tpch.lineitem: 2 snapshots" in out
    assert "tpch.orders: 1 snapshots" in out

    cat = icefloe.load_catalog(
        "demo",
        type="sql",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=(tmp_path / "warehouse").as_uri(),
    )
    lineitem = cat.load_table("tpch.lineitem")
    first, second = lineitem.snapshots()
    # the late batch landed in old partitions: its files share months with the first append's
    assert [s.summary.operation.value for s in (first, second)] == ["append", "append"]
    assert int(second.summary.properties["added-records"]) > 0
    assert str(lineitem.spec().fields[0].transform) == "month"
    assert str(cat.load_table("tpch.orders").spec().fields[0].transform) == "bucket[16]"


@pytest.mark.s3
@pytest.mark.postgres
def test_spark_demo_on_s3_with_a_postgres_catalog(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    """The same job with its tables on S3 (SeaweedFS on loopback) and its catalog in PostgreSQL:
    Spark's executors write and read every data file through icefloe's FileIO on the object store."""
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")
    s3 = request.getfixturevalue("seaweedfs_server")
    pg = request.getfixturevalue("postgres_server")
    warehouse = s3.warehouse(f"demo-{uuid.uuid4().hex[:8]}")
    props = {
        "type": "sql",
        "uri": pg.create_schema(f"demo_{uuid.uuid4().hex[:8]}"),
        "warehouse": warehouse,
        **s3.file_io_properties(),
    }
    run_spark(tmp_path, 0.005, fresh=True, spark=spark, catalog=props)
    out = capsys.readouterr().out
    assert "Q6 now matches Q6 computed directly on the source Parquet" in out
    assert "every source row is readable" in out
    assert f"warehouse: {warehouse}" in out
    assert pg.password not in out

    cat = icefloe.load_catalog("demo", **props)  # the demo's catalog name keys its rows
    try:
        lineitem = cat.load_table("tpch.lineitem")
        assert len(lineitem.snapshots()) == 2
        files = [t.file.file_path for t in lineitem.scan().plan_files()]
        assert files and all(f.startswith(f"{warehouse}/tpch/lineitem/data/") for f in files)
        listed = s3.filesystem().get_file_info(
            pafs.FileSelector(warehouse[len("s3://") :] + "/tpch/lineitem/data", recursive=True)
        )
        assert {f"s3://{i.path}" for i in listed if i.type == pafs.FileType.File} == set(files)
        assert not (tmp_path / "warehouse").exists() and not (tmp_path / "catalog.db").exists()
    finally:
        cat.close()
