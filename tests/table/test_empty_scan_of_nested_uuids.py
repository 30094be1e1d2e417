"""A scan that reads no rows of a table with a uuid nested in a list of structs returns an empty
table of the right schema (pyarrow's Schema.empty_table() fails on nested extension types; found
by the differential harness, seed 20261 case 76)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import icefloe


def test_empty_results_with_nested_uuids(tmp_path: Path) -> None:
    cat = icefloe.load_catalog(
        "u", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("n")
    schema = pa.schema(
        [pa.field("id", pa.int64()), pa.field("l", pa.list_(pa.struct([pa.field("u", pa.uuid())])))]
    )
    t = cat.create_table("n.t", schema=schema)
    assert t.scan().to_arrow().num_rows == 0  # no snapshot
    u = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuid.uuid4().bytes], pa.binary(16)))
    nested = pa.ListArray.from_arrays([0, 1], pa.StructArray.from_arrays([u], names=["u"]))
    t.append(pa.Table.from_arrays([pa.array([1], pa.int64()), nested], schema=schema))
    assert t.scan().to_arrow().num_rows == 1
    out = t.scan(row_filter="id = 2").to_arrow()
    assert out.num_rows == 0 and out.schema.field("l").type.value_type.field("u").type == pa.uuid()
    t.delete("id = 1")
    assert t.scan().to_arrow().num_rows == 0
    pytest.importorskip("polars")
    assert t.scan().to_polars().collect().height == 0
    cat.close()
