"""``icefloe.spark.read``: planning in Python, reading with Spark's Parquet reader by field id."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

import pyarrow as pa
import pytest

import icefloe.spark
from icefloe.errors import UnsupportedFeatureError
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.updates import AddSchema, SetCurrentSchema

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]
)


def _data(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "name": [None if i % 4 == 0 else f"n{i}" for i in ids],
            "ts": pa.array(
                [dt.datetime(2024, 1, 1 + i % 3, tzinfo=dt.UTC) for i in ids], pa.timestamp("us", tz="UTC")
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 1, i % 24) for i in ids], pa.timestamp("us")),
            "st": [{"x": i, "y": str(i)} for i in ids],
        },
        schema=SCHEMA,
    )


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize(
    "where",
    [
        "id >= 5 and id < 15",
        "name != 'n5'",  # Iceberg semantics: != keeps nulls
        "name is null or id in (1, 2, 3)",
        "ts >= '2024-01-02T00:00:00+00:00'",
        "ntz < '2024-01-01T03:00:00'",
        "name like 'n1%'",
        "st.x > 17",
    ],
)
def test_parquet_path_matches_icefloe_read(
    spark: Any, spark_catalog: Any, table_name: str, where: str
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["day(ts)"])
    t.append(_data(range(0, 12)))
    t.append(_data(range(12, 24)))
    expected = t.scan(row_filter=where, selected_fields=("id", "name")).to_arrow()
    df = icefloe.spark.read(spark, table_name, columns=["id", "name"], where=where, engine="parquet")
    assert df.columns == ["id", "name"]
    assert _rows(df) == sorted(
        zip(expected.column("id").to_pylist(), expected.column("name").to_pylist(), strict=True)
    )
    source = icefloe.spark.read(spark, table_name, columns=["id", "name"], where=where, engine="source")
    assert _rows(source) == _rows(df)


def test_renamed_and_added_columns_resolve_by_field_id(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA)
    t.append(_data(range(0, 5)))
    old = t.schema()
    renamed = [
        NestedField(f.field_id, "label" if f.name == "name" else f.name, f.field_type, f.required)
        for f in old.fields
    ]
    new_id = t.metadata.last_column_id + 1
    evolved = Schema(*renamed, NestedField(new_id, "extra", LongType(), False), schema_id=old.schema_id + 1)
    spark_catalog.commit_table(t.identifier, [], [AddSchema(evolved, new_id), SetCurrentSchema(-1)])
    t.refresh()
    t.append(pa.table({"id": [100], "label": ["new"], "extra": [7]}))
    df = icefloe.spark.read(
        spark, table_name, columns=["id", "label", "extra", "st.x"], where="id >= 3", engine="parquet"
    )
    assert [f.name for f in df.schema.fields] == ["id", "label", "st", "extra"] or df.columns[:2] == [
        "id",
        "label",
    ]
    got = {r["id"]: (r["label"], r["extra"], r["st"]["x"] if r["st"] else None) for r in df.collect()}
    assert got == {3: ("n3", None, 3), 4: (None, None, 4), 100: ("new", 7, None)}


def test_unsupported_types_fall_back_to_the_data_source(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    u = uuid.uuid4()
    t = spark_catalog.create_table(table_name, pa.schema([("id", pa.int64()), ("u", pa.uuid())]))
    t.append(pa.table({"id": [1, 2], "u": pa.array([u.bytes, None], pa.uuid())}))
    with pytest.raises(UnsupportedFeatureError, match="'u'"):
        icefloe.spark.read(spark, table_name, engine="parquet")
    df = icefloe.spark.read(spark, table_name, where="id = 1")  # auto -> data source
    assert [tuple(r) for r in df.collect()] == [(1, str(u))]
    # a projection without the uuid column can use the fast path
    assert _rows(icefloe.spark.read(spark, table_name, columns=["id"], engine="parquet")) == [(1,), (2,)]


def test_empty_scan_and_time_travel(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA)
    empty = icefloe.spark.read(spark, table_name, columns=["id"])
    assert empty.columns == ["id"] and empty.count() == 0
    s1 = t.append(_data(range(0, 3)))
    t.append(_data(range(3, 6)))
    assert s1 is not None
    old = icefloe.spark.read(spark, table_name, columns=["id"], snapshot_id=s1.snapshot_id)
    assert _rows(old) == [(0,), (1,), (2,)]
    assert icefloe.spark.read(spark, table_name, columns=["id"], where="id > 100").count() == 0


def test_promoted_types_read_like_icefloe(spark: Any, spark_catalog: Any, table_name: str) -> None:
    from icefloe.spec.types import DecimalType, DoubleType

    schema = pa.schema([("i", pa.int32()), ("f", pa.float32()), ("dec", pa.decimal128(9, 2))])
    t = spark_catalog.create_table(table_name, schema)
    t.append(
        pa.table(
            {
                "i": pa.array([1, -2], pa.int32()),
                "f": pa.array([1.5, None], pa.float32()),
                "dec": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(9, 2)),
            }
        )
    )
    old = t.schema()
    promoted = {"i": LongType(), "f": DoubleType(), "dec": DecimalType(18, 2)}
    evolved = Schema(
        *[NestedField(f.field_id, f.name, promoted[f.name], f.required) for f in old.fields],
        schema_id=old.schema_id + 1,
    )
    spark_catalog.commit_table(
        t.identifier, [], [AddSchema(evolved, t.metadata.last_column_id), SetCurrentSchema(-1)]
    )
    t.refresh()
    t.append(pa.table({"i": [2**40], "f": [2.5], "dec": [decimal.Decimal("1234567890123.45")]}))
    expected = sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())
    assert _rows(icefloe.spark.read(spark, table_name, engine="parquet")) == expected
