"""Every Iceberg type through Spark: Arrow write -> Spark read, and Spark write -> icefloe read."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

import pyarrow as pa

from icefloe.arrow.spark_layout import to_spark_batch
from icefloe.spark.types import to_spark_schema

U1, U2 = uuid.UUID(int=1), uuid.uuid4()

ALL_TYPES = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("b", pa.bool_()),
        pa.field("i", pa.int32()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("wide", pa.decimal128(38, 9)),
        pa.field("date", pa.date32()),
        pa.field("time", pa.time64("us")),
        pa.field("ntz", pa.timestamp("us")),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("s", pa.string()),
        pa.field("u", pa.uuid()),
        pa.field("fx", pa.binary(3)),
        pa.field("bin", pa.binary()),
        pa.field("st", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())])),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.float64())),
        pa.field("ls", pa.list_(pa.struct([pa.field("k", pa.string())]))),
    ]
)


def _rows() -> pa.Table:
    rows: list[dict[str, Any]] = [
        {
            "id": 1,
            "b": True,
            "i": -7,
            "f": 1.5,
            "d": float("-inf"),
            "dec": decimal.Decimal("12.34"),
            "wide": decimal.Decimal("-12345678901234567890123456789.123456789"),
            "date": dt.date(1969, 12, 31),
            "time": dt.time(23, 59, 59, 999999),
            "ntz": dt.datetime(2024, 2, 29, 12, 0, 0, 1),
            "ts": dt.datetime(1960, 1, 1, 0, 0, 0, 5, tzinfo=dt.UTC),
            "s": "héllo",
            "u": U1.bytes,
            "fx": b"abc",
            "bin": b"\x00\xff",
            "st": {"x": 1, "y": "y"},
            "l": [1, None, 3],
            "m": [("a", 1.0), ("b", None)],
            "ls": [{"k": "v"}, None],
        },
        {"id": 2, "st": None, "l": [], "m": [], "u": U2.bytes},
        {"id": 3},
    ]
    return pa.Table.from_pylist(rows, schema=ALL_TYPES)


def test_arrow_write_spark_read_every_type(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, ALL_TYPES)
    data = _rows()
    t.append(data)
    df = spark.read.format("icefloe").load(table_name)
    assert df.schema == to_spark_schema(t.schema())
    got = df.toArrow().sort_by("id")
    expected = pa.Table.from_batches(
        [to_spark_batch(b, t.schema(), got.schema) for b in t.scan().to_arrow().sort_by("id").to_batches()]
    )
    for name in got.column_names:
        assert got.column(name).equals(expected.column(name)), (name, got.column(name), expected.column(name))
    assert got.equals(expected)
    # spot checks independent of the conversion code
    first = got.slice(0, 1).to_pylist()[0]
    assert first["u"] == str(U1)
    assert first["ts"] == dt.datetime(1960, 1, 1, 0, 0, 0, 5, tzinfo=dt.UTC)
    assert first["ntz"] == dt.datetime(2024, 2, 29, 12, 0, 0, 1)
    assert first["fx"] == b"abc"
    assert first["m"] == [("a", 1.0), ("b", None)]
    assert got.column("u").to_pylist()[1] == str(U2)


def test_spark_write_icefloe_read_every_type(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, ALL_TYPES)
    data = _rows()
    spark_schema = to_spark_schema(t.schema())
    from pyspark.sql.pandas.types import to_arrow_schema

    spark_layout = pa.Table.from_batches(
        [
            to_spark_batch(b, t.schema(), to_arrow_schema(spark_schema, timezone="UTC"))
            for b in data.to_batches()
        ]
    )
    df = spark.createDataFrame(spark_layout, schema=spark_schema)
    df.write.format("icefloe").mode("append").save(table_name)
    t.refresh()
    got = t.scan().to_arrow().sort_by("id")
    assert got.equals(data.sort_by("id").cast(got.schema))
    assert len(t.snapshots()) == 1
