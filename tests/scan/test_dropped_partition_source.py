"""Tables whose older partition spec's source column was dropped from the schema (Iceberg allows
it once the current spec no longer uses the column; Iceberg Java then sees the source as of
unknown type). The files of the older spec keep their partition values: scans must still read and
prune them, time travel to before the drop must still filter on the column, and writes must
still rewrite their manifests.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
from icefloe.errors import PartitionSpecError
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, LongType, NestedField, StringType
from icefloe.transforms import parse_transform

ARROW = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.decimal128(5, 2)),
        pa.field("day", pa.date32()),
        pa.field("n", pa.int32()),
    ]
)
ROWS = {
    "id": [1, 2, 3, 4],
    "s": ["aa", "ab", "zz", None],
    "d": [Decimal("1.25"), Decimal("-3.50"), None, Decimal("999.99")],
    "day": [dt.date(2020, 1, 1), dt.date(1969, 12, 31), None, dt.date(2024, 2, 29)],
    "n": [1, 2, 3, 4],
}


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    cat = icefloe.load_catalog(
        "c", type="sql", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("ns")
    yield cat
    cat.close()


def _ids(table: Any, **scan: Any) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())


@pytest.mark.parametrize(
    "partition_by",
    [
        ["s"],
        ["truncate(1, s)"],
        ["bucket(3, s)"],
        ["truncate(10, d)", "d"],
        ["day(day)"],
        ["month(day)", "bucket(2, day)"],
        ["day"],
    ],
    ids=str,
)
def test_files_of_a_spec_whose_source_column_was_dropped_are_read(
    catalog: Any, partition_by: list[str]
) -> None:
    column = partition_by[0].split("(")[-1].split(",")[-1].strip(" )")
    t = catalog.create_table("ns.t", schema=ARROW, partition_by=partition_by)
    t.append(pa.table(ROWS, ARROW))
    before_drop = t.current_snapshot().snapshot_id
    with t.update_spec() as u:
        for f in t.spec().fields:
            u.remove_field(f.name)
        u.add_field("bucket(2, n)")
    t = t.refresh()
    t.append(pa.table({**{k: [v[0]] for k, v in ROWS.items()}, "id": [5]}, ARROW))
    with t.update_schema() as u:
        u.delete_column(column)
    t = t.refresh()
    assert t.schema().find_field_or_none(column) is None

    assert _ids(t) == [1, 2, 3, 4, 5]
    assert _ids(t, row_filter="id >= 2 and n != 3") == [2, 4, 5]
    assert _ids(t, row_filter="n in (1, 4)") == [1, 4, 5]
    # Time travel reads with the schema of the snapshot, where the column and its spec exist.
    old = t.scan(snapshot_id=before_drop, row_filter=f"{column} is null").to_arrow()
    assert old.column("id").to_pylist() == [
        i for i, v in zip(ROWS["id"], ROWS[column], strict=True) if v is None
    ]
    # Writes rewrite the older spec's manifests.
    t.delete("id = 2")
    rest = pa.schema([f for f in ARROW if f.name != column])
    t.append(pa.table({**{k: [v[1]] for k, v in ROWS.items() if k != column}, "id": [6]}, rest))
    assert _ids(t.refresh()) == [1, 3, 4, 5, 6]
    assert _ids(t, row_filter="id > 3") == [4, 5, 6]


def test_partition_type_of_a_spec_whose_source_column_is_unknown() -> None:
    """Without the older schema (a table whose unused schemas were removed), the transforms whose
    values are ints whatever the source still give the partition type; the others say what is
    missing."""
    schema = Schema(NestedField(1, "id", LongType()))
    spec = PartitionSpec(
        PartitionField(2, 1000, parse_transform("bucket[4]"), "s_bucket"),
        PartitionField(3, 1001, parse_transform("day"), "ts_day"),
    )
    assert [f.field_type for f in spec.partition_type(schema).fields] == [IntegerType(), IntegerType()]
    identity = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "s"))
    with pytest.raises(PartitionSpecError, match="source column id 2"):
        identity.partition_type(schema)
    older = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    known = identity.with_dropped_source_types(schema, [older])
    assert known == identity
    assert [f.field_type for f in known.partition_type(schema).fields] == [StringType()]
