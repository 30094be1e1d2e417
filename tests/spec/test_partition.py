"""Partition specs: building from human forms, partition types, Java-compatible paths, JSON."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import InvalidMetadataError, PartitionSpecError
from icefloe.spec.partition import (
    UNPARTITIONED_SPEC,
    PartitionField,
    PartitionSpec,
    build_partition_spec,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)
from icefloe.transforms import (
    BucketTransform,
    IdentityTransform,
    VoidTransform,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "s", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "dt", DateType()),
    NestedField(5, "v", DoubleType()),
    NestedField(6, "cat", StringType()),
    NestedField(7, "flag", BooleanType()),
    NestedField(8, "f", FloatType()),
    NestedField(9, "dec", DecimalType(10, 2)),
    NestedField(
        10, "st", StructType(NestedField(11, "a", IntegerType()), NestedField(12, "b", StringType()))
    ),
    NestedField(13, "tags", ListType(14, StringType())),
    NestedField(15, "props", MapType(16, StringType(), 17, StructType(NestedField(18, "x", IntegerType())))),
    NestedField(19, "ts_local", TimestampType()),
    NestedField(20, "u", UUIDType()),
    NestedField(21, "bin", BinaryType()),
    NestedField(22, "Mixed Case", IntegerType()),
)


def fields_of(spec: PartitionSpec) -> list[tuple[int, int, str, str]]:
    return [(f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields]


# --------------------------------------------------------------------------- building


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("day(ts)", (3, "day", "ts_day")),
        ("days(ts)", (3, "day", "ts_day")),
        ("DAYS( ts )", (3, "day", "ts_day")),
        ("date(ts)", (3, "day", "ts_day")),
        ("year(dt)", (4, "year", "dt_year")),
        ("years(ts)", (3, "year", "ts_year")),
        ("month(ts)", (3, "month", "ts_month")),
        ("months(dt)", (4, "month", "dt_month")),
        ("hour(ts)", (3, "hour", "ts_hour")),
        ("hours(ts_local)", (19, "hour", "ts_local_hour")),
        ("bucket(16, id)", (1, "bucket[16]", "id_bucket")),
        ("bucket(id, 16)", (1, "bucket[16]", "id_bucket")),
        ("bucket(8, u)", (20, "bucket[8]", "u_bucket")),
        ("truncate(4, s)", (2, "truncate[4]", "s_trunc")),
        ("truncate(s, 4)", (2, "truncate[4]", "s_trunc")),
        ("truncate(10, dec)", (9, "truncate[10]", "dec_trunc")),
        ("cat", (6, "identity", "cat")),
        ("identity(cat)", (6, "identity", "cat")),
        ("void(cat)", (6, "void", "cat_null")),
        ("st.a", (11, "identity", "st.a")),
        ("bucket(4, st.b)", (12, "bucket[4]", "st.b_bucket")),
        ("`Mixed Case`", (22, "identity", "Mixed Case")),
        ("bucket(2, `Mixed Case`)", (22, "bucket[2]", "Mixed Case_bucket")),
        ("identity(v)", (5, "identity", "v")),
        ("identity(flag)", (7, "identity", "flag")),
    ],
)
def test_build_human_forms(text: str, expected: tuple[int, str, str]) -> None:
    spec = build_partition_spec(SCHEMA, [text])
    assert fields_of(spec) == [(expected[0], 1000, expected[1], expected[2])]
    spec.check_compatibility(SCHEMA)


def test_build_multiple_fields_assigns_ids_in_order() -> None:
    spec = build_partition_spec(
        SCHEMA, ["day(ts)", "bucket(16, id)", "cat"], spec_id=3, last_partition_id=1004
    )
    assert spec.spec_id == 3
    assert fields_of(spec) == [
        (3, 1005, "day", "ts_day"),
        (1, 1006, "bucket[16]", "id_bucket"),
        (6, 1007, "identity", "cat"),
    ]
    assert spec.last_assigned_field_id == 1007


def test_build_with_partition_fields_and_case_insensitive() -> None:
    custom = PartitionField(1, 1010, BucketTransform(4), "by_id")
    spec = build_partition_spec(SCHEMA, [custom, "DAY(TS)"], case_sensitive=False)
    assert fields_of(spec) == [(1, 1010, "bucket[4]", "by_id"), (3, 1011, "day", "ts_day")]


@pytest.mark.parametrize(
    ("partition_by", "message"),
    [
        (["day(nope)"], "no column named 'nope'"),
        (["nope"], "no column named 'nope'"),
        (["day(s)"], "day does not apply to string"),
        (["hour(dt)"], "hour does not apply to date"),
        (["bucket(16, v)"], "does not apply to double"),
        (["bucket(16, f)"], "does not apply to float"),
        (["bucket(16, flag)"], "does not apply to boolean"),
        (["truncate(4, ts)"], "does not apply to timestamptz"),
        (["truncate(4, u)"], "does not apply to uuid"),
        (["tags.element"], "inside a list or map"),
        (["props.value.x"], "inside a list or map"),
        (["props.key"], "inside a list or map"),
        (["st"], "not a primitive column"),
        (["bucket(0, id)"], "number of buckets"),
        (["bucket(-2, id)"], "number of buckets"),
        (["truncate(0, s)"], "truncate width"),
        (["bucket(id)"], "takes a number and a column"),
        (["bucket(x, id)"], "needs an integer bucket count"),
        (["truncate(s, w)"], "needs an integer width"),
        (["day(ts, 1)"], "takes one column"),
        (["zorder(id)"], "unknown partition transform"),
        (["day(ts)", "hour(ts)"], "redundant"),
        (["day(ts)", "day(ts)"], "redundant"),
        (["bucket(4, id)", "bucket(4, id)"], "redundant"),
        (["cat", "identity(cat)"], "redundant"),
        ([PartitionField(1, 1000, BucketTransform(4), "s")], "clashes with a column"),
        ([PartitionField(6, 1000, IdentityTransform(), "s")], "clashes with a column"),
        ([PartitionField(6, 1000, IdentityTransform(), "")], "must not be empty"),
        ([PartitionField(99, 1000, IdentityTransform(), "x")], "not in the schema"),
        (["bucket(4, id)", PartitionField(6, 1005, IdentityTransform(), "id_bucket")], "more than once"),
        ("day(ts)", "must be a list"),
        ([42], "must be strings"),
        (["`unterminated"], "unbalanced quote"),
    ],
)
def test_build_errors(partition_by: Any, message: str) -> None:
    with pytest.raises(PartitionSpecError, match=message):
        build_partition_spec(SCHEMA, partition_by)


def test_bucket_and_truncate_allowed_alongside_identity() -> None:
    spec = build_partition_spec(SCHEMA, ["cat", "bucket(4, cat)", "truncate(2, cat)"])
    assert [f.name for f in spec.fields] == ["cat", "cat_bucket", "cat_trunc"]


# --------------------------------------------------------------------------- spec model


def test_partition_type() -> None:
    spec = build_partition_spec(
        SCHEMA,
        [
            "day(ts)",
            "bucket(16, id)",
            "truncate(4, s)",
            "year(dt)",
            "cat",
            "truncate(10, dec)",
            "void(u)",
            "st.a",
        ],
    )
    struct = spec.partition_type(SCHEMA)
    assert struct == StructType(
        NestedField(1000, "ts_day", DateType(), False),
        NestedField(1001, "id_bucket", IntegerType(), False),
        NestedField(1002, "s_trunc", StringType(), False),
        NestedField(1003, "dt_year", IntegerType(), False),
        NestedField(1004, "cat", StringType(), False),
        NestedField(1005, "dec_trunc", DecimalType(10, 2), False),
        NestedField(1006, "u_null", UUIDType(), False),
        NestedField(1007, "st.a", IntegerType(), False),
    )
    assert UNPARTITIONED_SPEC.partition_type(SCHEMA) == StructType()


def test_partition_type_needs_the_source_column() -> None:
    spec = PartitionSpec(PartitionField(99, 1000, IdentityTransform(), "gone"))
    with pytest.raises(PartitionSpecError, match="not in the schema"):
        spec.partition_type(SCHEMA)
    with pytest.raises(PartitionSpecError, match="not in the schema"):
        spec.check_compatibility(SCHEMA)


def test_partition_path() -> None:
    spec = build_partition_spec(SCHEMA, ["day(ts)", "bucket(16, id)", "cat", "hour(ts_local)", "month(dt)"])
    assert (
        spec.partition_path((19753, 3, "a b/c&d=é~*", -1, 647), SCHEMA)
        == "ts_day=2024-01-31/id_bucket=3/cat=a+b%2Fc%26d%3D%C3%A9%7E*"
        "/ts_local_hour=1969-12-31-23/dt_month=2023-12"
    )
    assert spec.partition_path((None, None, None, None, None), SCHEMA) == (
        "ts_day=null/id_bucket=null/cat=null/ts_local_hour=null/dt_month=null"
    )
    assert UNPARTITIONED_SPEC.partition_path((), SCHEMA) == ""
    with pytest.raises(PartitionSpecError, match="has 1 values"):
        spec.partition_path((1,), SCHEMA)


def test_partition_path_identity_types() -> None:
    spec = build_partition_spec(SCHEMA, ["ts", "dt", "bin", "dec", "u", "v", "Mixed Case", "flag"])
    values = (
        1_706_696_130_000_000,
        -1,
        b"\xff\xfe",
        Decimal("-1.50"),
        uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        1e10,
        7,
        False,
    )
    assert spec.partition_path(values, SCHEMA) == (
        "ts=2024-01-31T10%3A15%3A30%2B00%3A00/dt=1969-12-31/bin=%2F%2F4%3D/dec=-1.50"
        "/u=f79c3e09-677c-4bbd-a479-3f349cb785e7/v=1.0E10/Mixed+Case=7/flag=false"
    )


def test_equality_and_compatibility() -> None:
    a = build_partition_spec(SCHEMA, ["day(ts)", "bucket(16, id)"], spec_id=0)
    b = build_partition_spec(SCHEMA, ["day(ts)", "bucket(16, id)"], spec_id=5)
    c = build_partition_spec(SCHEMA, ["day(ts)", "bucket(16, id)"], last_partition_id=1010)
    d = build_partition_spec(SCHEMA, ["day(ts)", "bucket(8, id)"])
    assert a == b and hash(a) == hash(b)  # spec ids do not matter
    assert a != c and a.compatible_with(c)  # field ids differ
    assert not a.compatible_with(d)
    assert not a.compatible_with(UNPARTITIONED_SPEC)
    assert a.with_spec_id(9).spec_id == 9
    assert UNPARTITIONED_SPEC.is_unpartitioned()
    assert PartitionSpec(PartitionField(6, 1000, VoidTransform(), "cat_null")).is_unpartitioned()
    assert not a.is_unpartitioned()
    assert a.fields_by_source_id(3) == [a.fields[0]]
    assert a.field_by_id(1001) == a.fields[1]
    assert a.field_by_id(5) is None
    assert a.identity_source_ids() == set()
    assert UNPARTITIONED_SPEC.last_assigned_field_id == 999


def test_constructor_rejects_duplicates() -> None:
    with pytest.raises(PartitionSpecError, match="field id 1000"):
        PartitionSpec(
            PartitionField(1, 1000, IdentityTransform(), "a"),
            PartitionField(2, 1000, IdentityTransform(), "b"),
        )
    with pytest.raises(PartitionSpecError, match="name 'a'"):
        PartitionSpec(
            PartitionField(1, 1000, IdentityTransform(), "a"),
            PartitionField(2, 1001, IdentityTransform(), "a"),
        )


# --------------------------------------------------------------------------- JSON


def test_json_round_trip() -> None:
    spec = build_partition_spec(
        SCHEMA, ["day(ts)", "bucket(16, id)", "truncate(4, s)", "void(cat)"], spec_id=2
    )
    obj = spec.to_json()
    assert obj == {
        "spec-id": 2,
        "fields": [
            {"name": "ts_day", "transform": "day", "source-id": 3, "field-id": 1000},
            {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001},
            {"name": "s_trunc", "transform": "truncate[4]", "source-id": 2, "field-id": 1002},
            {"name": "cat_null", "transform": "void", "source-id": 6, "field-id": 1003},
        ],
    }
    back = PartitionSpec.from_json(json.loads(json.dumps(obj)))
    assert back == spec and back.spec_id == 2
    assert UNPARTITIONED_SPEC.to_json() == {"spec-id": 0, "fields": []}


def test_from_json_v1_forms() -> None:
    v1_fields = [
        {"name": "cat", "transform": "identity", "source-id": 6},
        {"name": "ts_day", "transform": "day", "source-id": 3},
    ]
    spec = PartitionSpec.from_json({"spec-id": 0, "fields": v1_fields})
    assert fields_of(spec) == [(6, 1000, "identity", "cat"), (3, 1001, "day", "ts_day")]
    assert PartitionSpec.from_json(v1_fields) == spec  # v1's bare "partition-spec" list


@pytest.mark.parametrize(
    "obj",
    [
        {"spec-id": 0, "fields": [{"name": "x", "transform": "identity"}]},
        {"spec-id": 0, "fields": [{"name": "x", "source-id": "one", "transform": "identity"}]},
        {"spec-id": "zero", "fields": []},
        {"spec-id": 0, "fields": "nope"},
        "nope",
    ],
)
def test_from_json_rejects(obj: Any) -> None:
    with pytest.raises(InvalidMetadataError):
        PartitionSpec.from_json(obj)
    with pytest.raises(PartitionSpecError, match="unknown transform"):
        PartitionSpec.from_json({"fields": [{"name": "x", "source-id": 1, "transform": "zorder"}]})


_TRANSFORM_TEXTS = st.sampled_from(
    [
        "day(ts)",
        "hour(ts)",
        "month(dt)",
        "year(ts_local)",
        "bucket(3, id)",
        "bucket(7, s)",
        "truncate(2, s)",
        "truncate(5, dec)",
        "cat",
        "void(v)",
        "st.a",
        "bucket(11, u)",
        "identity(bin)",
    ]
)


@given(st.lists(_TRANSFORM_TEXTS, unique=True, max_size=6), st.integers(0, 50), st.integers(999, 5000))
def test_json_round_trip_property(texts: list[str], spec_id: int, last_id: int) -> None:
    try:
        spec = build_partition_spec(SCHEMA, texts, spec_id=spec_id, last_partition_id=last_id)
    except PartitionSpecError:
        return  # e.g. two temporal transforms of one column
    back = PartitionSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert back == spec and back.spec_id == spec.spec_id
    assert [f.field_id for f in spec.fields] == list(range(last_id + 1, last_id + 1 + len(texts)))


# --------------------------------------------------------------------------- golden: Iceberg Java tables

ORACLE = Path(os.environ["ICEFLOE_ORACLE_REF"])


def _oracle_tables() -> list[dict[str, Any]]:
    index = ORACLE / "index.json"
    if not index.exists():
        return []
    tables: list[dict[str, Any]] = json.loads(index.read_text())["tables"]
    return [t for t in tables if t.get("catalog_kind") == "hadoop"]


def _internal(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        delta = value - dt.datetime(1970, 1, 1, tzinfo=value.tzinfo)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return value


@pytest.mark.skipif(not _oracle_tables(), reason=f"Iceberg Java reference tables not generated at {ORACLE}")
@pytest.mark.parametrize("table", _oracle_tables(), ids=lambda t: str(t["table"]))
def test_java_written_partitions(table: dict[str, Any]) -> None:
    """Every data file Java wrote: our partition path equals its directory, our transforms of its
    rows equal its manifest partition tuple, our spec JSON equals Java's."""
    import fastavro
    import pyarrow.parquet as pq

    from icefloe.arrow.transforms import transform_arrow

    metadata = json.loads(Path(table["metadata_location"]).read_text())
    schema = Schema.from_json(
        next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    )
    specs = {}
    for obj in metadata["partition-specs"]:
        spec = PartitionSpec.from_json(obj)
        assert spec.to_json() == {
            "spec-id": obj["spec-id"],
            "fields": [
                {
                    "name": f["name"],
                    "transform": f["transform"],
                    "source-id": f["source-id"],
                    "field-id": f["field-id"],
                }
                for f in obj["fields"]
            ],
        }
        spec.check_compatibility(schema)
        specs[spec.spec_id] = spec
    if metadata.get("current-snapshot-id") in (None, -1):
        pytest.skip("table has no snapshot")
    snapshot = next(s for s in metadata["snapshots"] if s["snapshot-id"] == metadata["current-snapshot-id"])
    checked = 0
    with open(snapshot["manifest-list"].removeprefix("file:"), "rb") as f:
        manifests = list(fastavro.reader(f))
    for mf in manifests:
        spec = specs[mf["partition_spec_id"]]
        with open(mf["manifest_path"].removeprefix("file:"), "rb") as f:
            reader = fastavro.reader(f)
            avro_partition = next(
                fld["type"]
                for fld in next(
                    fld["type"]["fields"]
                    for fld in reader.writer_schema["fields"]
                    if fld["name"] == "data_file"
                )
                if fld["name"] == "partition"
            )
            entries = list(reader)
        if spec.fields:
            assert [fld["field-id"] for fld in avro_partition["fields"]] == [f.field_id for f in spec.fields]
            assert [fld["name"] for fld in avro_partition["fields"]] == [f.name for f in spec.fields]
        for entry in entries:
            data_file = entry["data_file"]
            if entry["status"] == 2 or data_file.get("content", 0) != 0:
                continue
            values = tuple(_internal(data_file["partition"][f.name]) for f in spec.fields)
            path = data_file["file_path"].removeprefix("file:")
            relative = path.split("/data/", 1)[1].rsplit("/", 1)
            expected_dir = relative[0] if len(relative) == 2 else ""
            assert spec.partition_path(values, schema) == expected_dir
            if not spec.fields:
                continue
            rows = pq.read_table(path, columns=sorted({schema.column_name(f.source_id) for f in spec.fields}))
            for f, value in zip(spec.fields, values, strict=True):
                source_type = schema.find_type(f.source_id)
                column = rows.column(schema.column_name(f.source_id))
                result = transform_arrow(f.transform, source_type, column).combine_chunks()
                if result.type == pa_date32():
                    result = result.view(pa_int32())
                distinct = set(result.to_pylist())
                assert distinct == {value}, (path, f.name)
                first = column.combine_chunks().slice(0, 1)
                first_value = _internal(first.to_pylist()[0])
                assert f.transform.apply(source_type, first_value) == value
            checked += 1
    if any(spec.fields for spec in specs.values()):
        assert checked > 0


def pa_date32() -> Any:
    import pyarrow as pa

    return pa.date32()


def pa_int32() -> Any:
    import pyarrow as pa

    return pa.int32()
