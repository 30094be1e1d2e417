"""Spark writes of sorted and partitioned tables: ``write.distribution-mode`` resolved as
Iceberg Java does, the partition/sort transforms as Spark expressions (value for value the
Iceberg transforms), ``icefloe.spark.write`` distributing and sorting (range: files with
disjoint key ranges; hash: one task per partition), and the plain ``df.write.format("icefloe")``
path, whose tasks sort their files but do not distribute."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import random
import struct
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import icefloe.spark
from icefloe.arrow.transforms import transform_arrow
from icefloe.errors import ConfigError
from icefloe.manifest import DataFile
from icefloe.spark.types import to_spark_schema
from icefloe.spark.write import required_ordering, transform_column, write_requirements
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField
from icefloe.transforms import BucketTransform, DayTransform, IdentityTransform, parse_transform

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def _rows(n: int, seed: int = 0) -> pa.Table:
    rng = random.Random(seed)
    ids = list(range(n))
    rng.shuffle(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": [["a", "b", "c", "d"][i % 4] for i in ids],
            "ts": pa.array([i * 60_000_000 for i in ids], pa.timestamp("us", tz="UTC")),
        }
    )


def _df(spark: Any, table: Any, data: pa.Table, partitions: int = 3) -> Any:
    # round-robin: every Spark partition holds ids from the whole range
    return spark.createDataFrame(data, schema=to_spark_schema(table.schema())).repartition(partitions)


def _files(table: Any, **scan: Any) -> list[DataFile]:
    return [task.file for task in table.refresh().scan(**scan).plan_files()]


def _id_ranges(table: Any) -> list[tuple[int, int]]:
    fid = table.schema().find_field("id").field_id
    return sorted(
        (struct.unpack("<q", f.lower_bounds[fid])[0], struct.unpack("<q", f.upper_bounds[fid])[0])
        for f in _files(table)
    )


def _overlaps(ranges: list[tuple[int, int]]) -> int:
    return sum(1 for a, b in itertools.combinations(ranges, 2) if a[0] <= b[1] and b[0] <= a[1])


def _create(cat: Any, name: str, *terms: str, **kw: Any) -> Any:
    t = cat.create_table(name, SCHEMA, properties={"write.target-file-size-bytes": "20000"}, **kw)
    if terms:
        t.replace_sort_order(*terms)
    return t


# ------------------------------------------------------------------ Java's rules (no Spark job)


@pytest.mark.parametrize(
    ("partition_by", "order", "requested", "prop", "expected"),
    [
        (None, (), None, None, "none"),
        (["cat"], (), None, None, "hash"),
        (None, ("id",), None, None, "range"),
        (["cat"], ("id",), None, None, "range"),
        (None, (), "range", None, "none"),  # range on unpartitioned, unsorted -> none
        (None, (), "hash", None, "none"),  # hash on unpartitioned -> none
        (None, ("id",), "hash", None, "none"),
        (["cat"], (), "range", None, "range"),
        (["cat"], ("id",), "hash", None, "hash"),
        (["cat"], ("id",), None, "none", "none"),
        (["cat"], ("id",), "HASH", "none", "hash"),  # the argument beats the table property
        (["void(cat)"], (), None, None, "none"),
    ],
)
def test_distribution_mode_follows_java(
    spark_catalog: Any,
    table_name: str,
    partition_by: list[str] | None,
    order: tuple[str, ...],
    requested: str | None,
    prop: str | None,
    expected: str,
) -> None:
    t = _create(spark_catalog, table_name, *order, partition_by=partition_by)
    if prop is not None:
        with t.transaction() as tx:
            tx.set_properties(**{"write.distribution-mode": prop})
    assert write_requirements(t.metadata, requested).distribution_mode == expected


def test_session_conf_sits_between_argument_and_property(spark_catalog: Any, table_name: str) -> None:
    t = _create(spark_catalog, table_name, "id", partition_by=["cat"])
    assert write_requirements(t.metadata, None, "hash").distribution_mode == "hash"
    assert write_requirements(t.metadata, "none", "hash").distribution_mode == "none"
    with pytest.raises(ConfigError, match="'sideways' is not a distribution mode"):
        write_requirements(t.metadata, "sideways")


def test_required_ordering_is_javas_build_sort_order(spark_catalog: Any, table_name: str) -> None:
    t = _create(spark_catalog, table_name, "id desc", partition_by=["cat", "day(ts)"])
    cat, ts, ident = (t.schema().find_field(n).field_id for n in ("cat", "ts", "id"))
    assert required_ordering(t.spec(), t.sort_order()) == (
        SortField(cat, IdentityTransform()),
        SortField(ts, DayTransform()),
        SortField(ident, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST),
    )
    # a sort order that starts with the partition fields needs no prefix
    t.replace_sort_order("cat desc", "day(ts)", "id")
    assert [f.source_id for f in required_ordering(t.spec(), t.sort_order())] == [cat, ts, ident]
    # hour(ts) in the order satisfies the day(ts) partition: only cat is added in front
    t.replace_sort_order("hour(ts)", "id")
    assert [str(f.transform) for f in required_ordering(t.spec(), t.sort_order())] == [
        "identity",
        "hour",
        "identity",
    ]
    assert write_requirements(t.metadata).clustering == ()  # range: no hash clustering
    assert write_requirements(t.metadata, "hash").clustering == (
        (cat, IdentityTransform()),
        (ts, DayTransform()),
    )
    assert BucketTransform(4) not in [f.transform for f in required_ordering(t.spec(), t.sort_order())]


# ------------------------------------------------------------------ transforms as Spark expressions


def test_transform_columns_equal_icefloe_transforms(spark: Any, spark_catalog: Any, table_name: str) -> None:
    rnd = random.Random(7)
    n = 300
    data = pa.table(
        {
            "i": pa.array(
                [rnd.choice([None, rnd.randint(-(2**31), 2**31 - 1)]) for _ in range(n)], pa.int32()
            ),
            "l": pa.array([rnd.choice([None, rnd.randint(-(2**40), 2**40)]) for _ in range(n)], pa.int64()),
            "s": pa.array(
                [
                    rnd.choice([None, "".join(rnd.choice("aé😀b") for _ in range(rnd.randint(0, 6)))])
                    for _ in range(n)
                ]
            ),
            "b": pa.array([rnd.choice([None, rnd.randbytes(rnd.randint(0, 5))]) for _ in range(n)]),
            "dec": pa.array(
                [
                    rnd.choice([None, decimal.Decimal(rnd.randint(-(10**8), 10**8)).scaleb(-2)])
                    for _ in range(n)
                ],
                pa.decimal128(12, 2),
            ),
            "d": pa.array(
                [
                    rnd.choice([None, dt.date(1970, 1, 1) + dt.timedelta(days=rnd.randint(-99_999, 99_999))])
                    for _ in range(n)
                ],
                pa.date32(),
            ),
            "ts": pa.array(
                [rnd.choice([None, rnd.randint(-(2**52), 2**52)]) for _ in range(n)], pa.timestamp("us")
            ),
            "tstz": pa.array(
                [rnd.choice([None, rnd.randint(-(2**52), 2**52)]) for _ in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "u": pa.array([rnd.choice([None, rnd.randbytes(16)]) for _ in range(n)], pa.uuid()),
        }
    )
    t = spark_catalog.create_table(table_name, data.schema)
    t.append(data)
    checks = {
        "i": ["bucket[7]", "truncate[10]"],
        "l": ["bucket[16]", "truncate[3]"],
        "s": ["bucket[5]", "truncate[2]"],
        "b": ["bucket[3]", "truncate[2]"],
        "dec": ["bucket[4]", "truncate[50]"],
        "d": ["year", "month", "day", "bucket[9]"],
        "ts": ["year", "month", "day", "hour", "bucket[2]"],
        "tstz": ["year", "month", "day", "hour", "bucket[11]"],
        "u": ["bucket[13]", "identity"],
    }
    schema = t.schema()
    columns, expected = [], {}
    for name, transforms in checks.items():
        field = schema.find_field(name)
        for text in transforms:
            transform = parse_transform(text)
            alias = f"{name}_{text.replace('[', '_').rstrip(']')}"
            columns.append(transform_column(schema, field.field_id, transform).alias(alias))
            want = transform_arrow(transform, field.field_type, data.column(name))
            if pa.types.is_date32(want.type):
                want = want.cast(pa.int32())
            if name == "u" and text == "identity":
                want = pa.array([None if v is None else str(v) for v in want.to_pylist()])
            expected[alias] = want.to_pylist()
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")  # must not matter
    try:
        got = [
            r.asDict()
            for r in icefloe.spark.read(spark, table_name, engine="source").select(*columns).collect()
        ]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    for alias, want in expected.items():
        assert [r[alias] for r in got] == want, alias


# ------------------------------------------------------------------ the write helper


def test_range_distribution_gives_disjoint_files(spark: Any, spark_catalog: Any, table_name: str) -> None:
    """Helper + range distribution: the files' id ranges do not overlap (0 overlaps), and a
    selective filter plans fewer files than on an unsorted copy written the plain way."""
    data = _rows(30_000, seed=1)
    t = _create(spark_catalog, table_name, "id")
    unsorted = _create(spark_catalog, table_name + "_unsorted")
    applied = icefloe.spark.write(_df(spark, t, data), table_name, num_partitions=4)
    assert applied.distribution_mode == "range"
    _df(spark, unsorted, data).write.format("icefloe").mode("append").save(table_name + "_unsorted")
    files = _files(t)
    assert len(files) >= 6 and {f.sort_order_id for f in files} == {1}
    assert _overlaps(_id_ranges(t)) == 0
    for f in files:
        ids = pq.read_table(f.file_path.removeprefix("file://")).column("id").to_pylist()
        assert ids == sorted(ids)
    where = "id >= 12000 and id < 12500"
    planned, planned_unsorted = len(_files(t, row_filter=where)), len(_files(unsorted, row_filter=where))
    assert planned <= 2 < planned_unsorted
    assert _overlaps(_id_ranges(unsorted)) > 0
    got = t.scan(row_filter=where).to_arrow().column("id").to_pylist()
    assert sorted(got) == list(range(12000, 12500))
    assert t.scan().to_arrow().num_rows == 30_000


def test_plain_data_source_path_sorts_tasks_but_does_not_distribute(
    spark: Any, spark_catalog: Any, table_name: str
) -> None:
    t = _create(spark_catalog, table_name, "id desc")
    _df(spark, t, _rows(20_000, seed=2)).write.format("icefloe").mode("append").save(table_name)
    files = _files(t)
    assert {f.sort_order_id for f in files} == {1}
    for f in files:
        ids = pq.read_table(f.file_path.removeprefix("file://")).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)  # every task sorted its files
    assert _overlaps(_id_ranges(t)) > 0  # but three tasks each covered the whole id range


def test_hash_distribution_one_task_per_partition(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = spark_catalog.create_table(table_name, SCHEMA, partition_by=["cat", "bucket(2, id)"])
    applied = icefloe.spark.write(_df(spark, t, _rows(2_000, seed=3), partitions=4), table_name)
    assert applied.distribution_mode == "hash"
    files = _files(t)
    per_partition: dict[tuple[Any, ...], int] = {}
    for f in files:
        per_partition[f.partition] = per_partition.get(f.partition, 0) + 1
    assert len(per_partition) == 8 and set(per_partition.values()) == {1}
    plain = spark_catalog.create_table(table_name + "_plain", SCHEMA, partition_by=["cat", "bucket(2, id)"])
    _df(spark, plain, _rows(2_000, seed=3), partitions=4).write.format("icefloe").mode("append").save(
        table_name + "_plain"
    )
    assert len(_files(plain)) > len(files)  # every task wrote every partition


def test_distribution_none_and_options(spark: Any, spark_catalog: Any, table_name: str) -> None:
    t = _create(spark_catalog, table_name, "id")
    df = _df(spark, t, _rows(6_000, seed=4))
    applied = icefloe.spark.write(df, table_name, options={"distribution-mode": "none"})
    assert applied.distribution_mode == "none"
    files = _files(t)
    assert {f.sort_order_id for f in files} == {1}
    # overwrite through the helper, with a data source option passed on
    icefloe.spark.write(
        df.filter(F.col("id") < 10), table_name, mode="overwrite", options={"overwrite-filter": "id < 100"}
    )
    assert sorted(t.refresh().scan(row_filter="id < 100").to_arrow().column("id").to_pylist()) == list(
        range(10)
    )
    assert t.scan().to_arrow().num_rows == 6_000 - 90
