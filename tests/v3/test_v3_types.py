"""Format v3 types on the Arrow path: ``timestamp_ns`` / ``timestamptz_ns`` (create, write,
bounds, partition transforms, pruning, filters, evolution) and ``unknown`` (schema JSON, Arrow
mapping, never stored in data files, always null, promotion to a real type).

Expected values come from plain integer arithmetic on the nanosecond values written, never from
icefloe's own read path."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.errors import (
    PartitionSpecError,
    SchemaError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DateType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestamptzNsType,
    UnknownType,
    type_from_json,
    type_to_json,
)
from icefloe.spec.values import from_bytes, to_bytes
from icefloe.transforms import BucketTransform, bucket_hash

NS = pa.timestamp("ns")
NS_TZ = pa.timestamp("ns", tz="UTC")
NS_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ts", NS), pa.field("tz", NS_TZ)])
NANOS_PER_DAY = 86_400 * 10**9
NANOS_PER_HOUR = 3_600 * 10**9

# 2023-11-14T22:13:20.123456789, one nanosecond before the epoch, a pre-1970 instant, 2024-01-01
VALUES = [1_700_000_000_123_456_789, -1, -86_400 * 10**9 * 400 + 7, 1_704_067_200_000_000_000]


def _ns_rows(ids: list[int], ts: list[int | None], tz: list[int | None]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "ts": pa.array(ts, NS), "tz": pa.array(tz, NS_TZ)}, schema=NS_SCHEMA
    )


def _local(location: str) -> str:
    return location.removeprefix("file://")


def _as_ints(table: pa.Table, column: str) -> list[int | None]:
    return table.column(column).cast(pa.int64()).to_pylist()


# ------------------------------------------------------------------ timestamp_ns: create


def test_arrow_nanosecond_schema_creates_ns_columns_on_v3(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=NS_SCHEMA, properties={"format-version": "3"})
    assert t.schema().find_field("ts").field_type == TimestampNsType()
    assert t.schema().find_field("tz").field_type == TimestamptzNsType()
    assert t.format_version == 3


@pytest.mark.parametrize("kind", ["memory", "rest"])
def test_every_catalog_maps_arrow_ns_and_null_on_v3(catalog_opener: Any, tmp_path: Path, kind: str) -> None:
    cat = catalog_opener(kind, (tmp_path / "wh").as_uri())()
    cat.create_namespace("ns")
    schema = pa.schema([*NS_SCHEMA, pa.field("u", pa.null())])
    t = cat.create_table("ns.t", schema=schema, properties={"format-version": "3"})
    types = [f.field_type for f in t.schema().fields]
    assert types[1:] == [TimestampNsType(), TimestamptzNsType(), UnknownType()]
    with pytest.raises(SchemaError, match="nanosecond"):
        cat.create_table("ns.t2", schema=schema)


def test_arrow_nanosecond_schema_is_refused_on_v2(catalog: Any) -> None:
    with pytest.raises(SchemaError, match="format-version") as info:
        catalog.create_table("ns.t", schema=NS_SCHEMA, properties={"format-version": "2"})
    assert info.value.context["column"] == "ts"
    assert not catalog.table_exists("ns.t")


def test_icefloe_ns_schema_is_refused_on_v2(catalog: Any) -> None:
    schema = Schema(NestedField(1, "ts", TimestampNsType()))
    with pytest.raises(UnsupportedFeatureError, match="version 3"):
        catalog.create_table("ns.t", schema=schema)
    assert not catalog.table_exists("ns.t")


# ------------------------------------------------------------------ timestamp_ns: data


def test_ns_values_bounds_and_partitions(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t",
        schema=NS_SCHEMA,
        partition_by=["day(ts)", "bucket(8, tz)"],
        properties={"format-version": "3"},
    )
    t.append(_ns_rows([0, 1, 2, 3, 4], [*VALUES, None], [VALUES[1], VALUES[0], 5, VALUES[3], None]))
    got = t.scan().to_arrow().sort_by("id")
    assert _as_ints(got, "ts") == [*VALUES, None]
    assert _as_ints(got, "tz") == [VALUES[1], VALUES[0], 5, VALUES[3], None]
    bucket = BucketTransform(8)
    for task in t.scan().plan_files():
        f = task.file
        rows = pq.read_table(_local(f.file_path))
        ts = [v for v in _as_ints(rows, "ts") if v is not None]
        tz = [v for v in _as_ints(rows, "tz") if v is not None]
        # the partition values: days and Iceberg buckets of the microseconds (spec: hashLong(micros))
        want_day = ts[0] // NANOS_PER_DAY if ts else None
        want_bucket = bucket.apply(TimestamptzNsType(), tz[0]) if tz else None
        assert f.partition == (want_day, want_bucket)
        if tz:
            assert want_bucket == (bucket_hash(LongType(), tz[0] // 1000) & 0x7FFFFFFF) % 8
        # bounds are nanoseconds, 8-byte little-endian
        if ts:
            assert f.lower_bounds[2] == to_bytes(TimestampNsType(), min(ts))
            assert from_bytes(TimestampNsType(), f.upper_bounds[2]) == max(ts)
        if tz:
            assert from_bytes(TimestamptzNsType(), f.lower_bounds[3]) == min(tz)
            assert from_bytes(TimestamptzNsType(), f.upper_bounds[3]) == max(tz)
        assert f.null_value_counts[2] == len(rows) - len(ts)


@pytest.mark.parametrize(
    ("transform", "expected"),
    [
        ("hour(ts)", lambda v: v // NANOS_PER_HOUR),
        ("day(ts)", lambda v: v // NANOS_PER_DAY),
        ("month(ts)", lambda v: _months(v)),
        ("year(ts)", lambda v: _months(v) // 12),
        ("ts", lambda v: v),
    ],
)
def test_ns_temporal_and_identity_partitions(catalog: Any, transform: str, expected: Any) -> None:
    t = catalog.create_table(
        "ns.t", schema=NS_SCHEMA, partition_by=[transform], properties={"format-version": "3"}
    )
    t.append(_ns_rows(list(range(len(VALUES))), VALUES, VALUES))
    parts = {task.file.partition[0] for task in t.scan().plan_files()}
    assert parts == {expected(v) for v in VALUES}


def _months(nanos: int) -> int:
    d = dt.date(1970, 1, 1) + dt.timedelta(days=nanos // NANOS_PER_DAY)
    return (d.year - 1970) * 12 + d.month - 1


def test_truncate_of_ns_is_refused(catalog: Any) -> None:
    with pytest.raises(PartitionSpecError, match="truncate"):
        catalog.create_table(
            "ns.t", schema=NS_SCHEMA, partition_by=["truncate(4, ts)"], properties={"format-version": "3"}
        )


def test_ns_literals_filter_and_prune_to_the_nanosecond(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=NS_SCHEMA, properties={"format-version": "3"})
    base = VALUES[0]
    for i in range(3):  # one file per value: base - 1, base, base + 1 nanoseconds
        t.append(_ns_rows([i], [base - 1 + i], [base - 1 + i]))
    text = "2023-11-14T22:13:20.123456789"
    assert len(list(t.scan(row_filter=f"ts = '{text}'").plan_files())) == 1  # metrics pruning
    assert t.scan(row_filter=f"ts = '{text}'").to_arrow()["id"].to_pylist() == [1]
    assert sorted(t.scan(row_filter=f"ts > '{text}'").to_arrow()["id"].to_pylist()) == [2]
    assert sorted(t.scan(row_filter=f"tz <= '{text}+00:00'").to_arrow()["id"].to_pylist()) == [0, 1]


def test_ns_partition_pruning(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t", schema=NS_SCHEMA, partition_by=["day(ts)"], properties={"format-version": "3"}
    )
    t.append(_ns_rows(list(range(len(VALUES))), VALUES, VALUES))
    tasks = list(t.scan(row_filter="ts >= '2024-01-01T00:00:00.000000000'").plan_files())
    assert [task.file.partition for task in tasks] == [(VALUES[3] // NANOS_PER_DAY,)]


def test_ns_overwrite_delete_and_upsert(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t", schema=NS_SCHEMA, partition_by=["day(ts)"], properties={"format-version": "3"}
    )
    t.append(_ns_rows([0, 1, 2, 3], VALUES, VALUES))
    t.delete("ts = '1969-12-31T23:59:59.999999999'")  # VALUES[1], one nanosecond before the epoch
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [0, 2, 3]
    t.upsert(_ns_rows([0, 9], [VALUES[0] + 1, 42], [None, 43]), key_columns=["id"])
    got = {
        r["id"]: r
        for r in t.scan()
        .to_arrow()
        .cast(pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("tz", pa.int64())]))
        .to_pylist()
    }
    assert got[0] == {"id": 0, "ts": VALUES[0] + 1, "tz": None}
    assert got[9] == {"id": 9, "ts": 42, "tz": 43}
    t.overwrite(_ns_rows([5], [7], [8]), where="ts < '1970-01-02T00:00:00.000000000'")
    ids = sorted(t.scan().to_arrow()["id"].to_pylist())
    assert ids == [0, 3, 5]  # 2 (before 1970), 9 (42 ns) replaced by 5


def test_microsecond_input_widens_into_ns_columns(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=NS_SCHEMA, properties={"format-version": "3"})
    us = pa.table(
        {
            "id": pa.array([1], pa.int64()),
            "ts": pa.array([1_700_000_000_123_456], pa.timestamp("us")),
            "tz": pa.array([5], pa.timestamp("us", tz="UTC")),
        }
    )
    t.append(us)
    got = t.scan().to_arrow()
    assert _as_ints(got, "ts") == [1_700_000_000_123_456_000]
    assert _as_ints(got, "tz") == [5_000]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.one_of(st.none(), st.integers(-(2**63) + 1, 2**63 - 1)), min_size=1, max_size=30),
)
def test_ns_values_round_trip_with_exact_bounds(tmp_path: Path, values: list[int | None]) -> None:
    import uuid

    import icefloe

    root = tmp_path / uuid.uuid4().hex
    cat = icefloe.load_catalog("h", type="sql", uri=f"sqlite:///{root}.db", warehouse=root.as_uri())
    cat.create_namespace("ns")
    t = cat.create_table("ns.t", schema=NS_SCHEMA, properties={"format-version": "3"})
    t.append(_ns_rows(list(range(len(values))), values, values))
    got = t.scan().to_arrow().sort_by("id")
    assert _as_ints(got, "ts") == values
    assert _as_ints(got, "tz") == values
    present = [v for v in values if v is not None]
    (task,) = list(t.scan().plan_files())
    if present:
        assert from_bytes(TimestampNsType(), task.file.lower_bounds[2]) == min(present)
        assert from_bytes(TimestamptzNsType(), task.file.upper_bounds[3]) == max(present)
    else:
        assert 2 not in task.file.lower_bounds


# ------------------------------------------------------------------ timestamp_ns: evolution


def test_ns_columns_are_refused_by_update_schema_on_v2(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=pa.schema([pa.field("id", pa.int64())]))
    for field_type in (TimestampNsType(), "timestamptz_ns", NS):
        with pytest.raises(SchemaError, match=r"version 3|format-version"):
            t.update_schema().add_column("ts", field_type)
    assert t.refresh().schema().fields == t.schema().fields


def test_ns_columns_after_upgrade_and_date_promotion(catalog: Any) -> None:
    t = catalog.create_table(
        "ns.t", schema=pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.date32())])
    )
    t.append(pa.table({"id": [1], "d": pa.array([dt.date(2024, 1, 2)], pa.date32())}))
    with pytest.raises(SchemaError):
        t.update_schema().update_column("d", field_type="timestamp_ns").commit()
    t.upgrade_format_version(3)
    with t.update_schema() as u:
        u.add_column("ts", NS)
        u.update_column("d", field_type="timestamp_ns")
    assert t.schema().find_field("d").field_type == TimestampNsType()
    t.append(_ns_rows([2], [3], [None]).rename_columns(["id", "ts", "d"]).select(["id", "ts"]))
    got = t.scan().to_arrow().sort_by("id")
    # the date written before reads as midnight, in nanoseconds
    assert _as_ints(got, "d") == [(dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days * NANOS_PER_DAY, None]
    assert _as_ints(got, "ts") == [None, 3]


# ------------------------------------------------------------------ unknown


def test_unknown_type_json_and_arrow() -> None:
    from icefloe.arrow.schema import arrow_to_schema, schema_to_arrow

    assert type_from_json("unknown") == UnknownType()
    struct = StructType(NestedField(1, "u", UnknownType()), NestedField(2, "x", IntegerType()))
    assert type_from_json(type_to_json(struct)) == struct
    arrow = schema_to_arrow(Schema(*struct.fields))
    assert arrow.field("u").type == pa.null()
    back = arrow_to_schema(pa.schema([pa.field("u", pa.null())]), format_version=3)
    assert back.fields[0].field_type == UnknownType() and not back.fields[0].required
    with pytest.raises(SchemaError, match="format v3"):
        arrow_to_schema(pa.schema([pa.field("u", pa.null())]))
    with pytest.raises(SchemaError, match="null"):
        type_from_json(
            {
                "type": "struct",
                "fields": [
                    {"id": 1, "name": "u", "required": False, "type": "unknown", "initial-default": 1}
                ],
            }
        )


UNKNOWN_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("u", pa.null()),
        pa.field("s", pa.struct([pa.field("a", pa.int32()), pa.field("n", pa.null())])),
    ]
)


def test_unknown_columns_are_never_stored_and_read_as_null(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=UNKNOWN_SCHEMA, properties={"format-version": "3"})
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "u": pa.nulls(2),
                "s": pa.array([{"a": 1, "n": None}, None], UNKNOWN_SCHEMA.field("s").type),
            }
        )
    )
    t.append(pa.table({"id": pa.array([3], pa.int64())}))
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "u": None, "s": {"a": 1, "n": None}},
        {"id": 2, "u": None, "s": None},
        {"id": 3, "u": None, "s": None},
    ]
    for task in t.scan().plan_files():
        file_schema = pq.read_schema(_local(task.file.file_path))
        assert file_schema.names == ["id", "s"]
        assert [
            file_schema.field("s").type.field(i).name for i in range(file_schema.field("s").type.num_fields)
        ] == ["a"]
        assert set(task.file.value_counts) == {1, 4}  # id and s.a; nothing for the unknown fields


def test_unknown_rules(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=UNKNOWN_SCHEMA, properties={"format-version": "3"})
    with pytest.raises(SchemaMismatchError, match="'u'"):
        t.append(pa.table({"id": pa.array([1], pa.int64()), "u": pa.array([5], pa.int64())}))
    with pytest.raises(PartitionSpecError, match="unknown"):
        t.update_spec().add_field("u").commit()
    with pytest.raises(SchemaError, match="always optional"):
        t.update_schema().add_column("v", "unknown", required=True)
    with pytest.raises(SchemaError, match="always optional"):
        t.update_schema().allow_incompatible_changes().update_column("u", required=True)
    with pytest.raises(SchemaError, match="null"):
        t.update_schema().add_column("v", "unknown", default=1)
    assert t.snapshots() == [] and t.refresh().schema() == t.schema()
    v2 = catalog.create_table("ns.v2", schema=pa.schema([pa.field("id", pa.int64())]))
    with pytest.raises(SchemaError, match="version 3"):
        v2.update_schema().add_column("u", "unknown")
    assert v2.refresh().schema() == v2.schema() and v2.format_version == 2
    with pytest.raises(SchemaError, match="format v3"):
        catalog.create_table("ns.v2b", schema=UNKNOWN_SCHEMA)
    assert not catalog.table_exists("ns.v2b")


def test_unknown_promotes_to_any_type(catalog: Any) -> None:
    t = catalog.create_table("ns.t", schema=UNKNOWN_SCHEMA, properties={"format-version": "3"})
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with t.update_schema() as u:
        u.update_column("u", field_type="long")
        u.update_column("s.n", field_type=StructType(NestedField(100, "x", StringType())))
    schema = t.schema()
    assert schema.find_field("u").field_type == LongType()
    promoted = schema.find_field("s.n").field_type
    assert isinstance(promoted, StructType) and promoted.fields[0].field_id == 6  # a fresh id
    assert t.metadata.last_column_id == 6
    t.append(
        pa.table(
            {
                "id": pa.array([2], pa.int64()),
                "u": pa.array([7], pa.int64()),
                "s": pa.array(
                    [{"a": 2, "n": {"x": "hi"}}],
                    pa.struct([("a", pa.int32()), ("n", pa.struct([("x", pa.string())]))]),
                ),
            }
        )
    )
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "u": None, "s": None}, {"id": 2, "u": 7, "s": {"a": 2, "n": {"x": "hi"}}}]
    with pytest.raises(SchemaError):  # long is no longer unknown: ordinary promotion rules
        t.update_schema().update_column("u", field_type="string")


def test_unknown_maps_to_spark_null_type() -> None:
    spark_types = pytest.importorskip("icefloe.spark.types")
    from pyspark.sql import types as pst

    assert spark_types.to_spark_type(UnknownType()) == pst.NullType()
    assert spark_types.to_spark_type(TimestampNsType()) == pst.TimestampNTZType()
    assert spark_types.to_spark_type(TimestamptzNsType()) == pst.TimestampType()


def test_date_stays_date_for_v3_arrow_inputs(catalog: Any) -> None:
    # a v3 table does not change the mapping of the other Arrow types
    schema = pa.schema([pa.field("d", pa.date32()), pa.field("t", pa.timestamp("us"))])
    t = catalog.create_table("ns.t", schema=schema, properties={"format-version": "3"})
    assert t.schema().fields[0].field_type == DateType()
    assert str(t.schema().fields[1].field_type) == "timestamp"


def test_spark_shaped_batches_write_ns_and_defaults(catalog: Any) -> None:
    """What the Spark data source's tasks hand to the writer: Spark's microsecond timestamps (its
    only precision) widen into the ns columns; a column Spark's DataFrame lacks gets its write
    default. (The driver's check is the same Arrow schema check.)"""
    pytest.importorskip("pyspark")
    from pyspark.sql import types as pst
    from pyspark.sql.pandas.types import to_arrow_schema

    from icefloe.arrow.conform import check_arrow_schema
    from icefloe.arrow.spark_layout import from_spark_batch

    t = catalog.create_table("ns.t", schema=NS_SCHEMA, properties={"format-version": "3"})
    with t.update_schema() as u:
        u.add_column("region", "string", required=True, default="EU")
    spark_schema = pst.StructType(
        [
            pst.StructField("id", pst.LongType(), False),
            pst.StructField("ts", pst.TimestampNTZType()),
            pst.StructField("tz", pst.TimestampType()),
        ]
    )
    arrow_schema = to_arrow_schema(spark_schema, timezone="UTC")
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([1], pa.int64()),
            pa.array([1_700_000_000_123_456], arrow_schema.field("ts").type),
            pa.array([-1], arrow_schema.field("tz").type),
        ],
        schema=arrow_schema,
    )
    converted = from_spark_batch(batch, t.schema())
    check_arrow_schema(converted.schema, t.schema())
    t.append(pa.Table.from_batches([converted]))
    got = t.scan().to_arrow()
    assert _as_ints(got, "ts") == [1_700_000_000_123_456_000]
    assert _as_ints(got, "tz") == [-1_000]
    assert got["region"].to_pylist() == ["EU"]


def test_arrow_row_level_changes_keep_nanoseconds_of_other_rows(catalog: Any) -> None:
    for mode in ("copy-on-write", "merge-on-read"):
        props = {"format-version": "3", "write.update.mode": mode, "write.delete.mode": mode}
        t = catalog.create_table(f"ns.t_{mode[0]}", schema=NS_SCHEMA, properties=props)
        t.append(_ns_rows([0, 1, 2, 3], VALUES, VALUES))  # one data file
        t.update("id = 0", {"tz": VALUES[0] + 1})
        t.delete("id = 3")
        got = t.scan().to_arrow().sort_by("id")
        assert _as_ints(got, "ts") == VALUES[:3], mode
        assert _as_ints(got, "tz") == [VALUES[0] + 1, *VALUES[1:3]], mode


def test_void_partition_of_an_unknown_column_is_refused_on_write(catalog: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("u", pa.null())])
    t = catalog.create_table(
        "ns.t", schema=schema, partition_by=["void(u)"], properties={"format-version": "3"}
    )
    with pytest.raises(UnsupportedFeatureError, match="unknown"):
        t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert t.refresh().snapshots() == []
    with t.update_schema() as u:  # promoted, the column is written and partitioned by void
        u.update_column("u", field_type="int")
    t.append(pa.table({"id": pa.array([1], pa.int64()), "u": pa.array([4], pa.int32())}))
    assert [task.file.partition for task in t.scan().plan_files()] == [(None,)]
