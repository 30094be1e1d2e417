"""Regressions found by the differential read harness (tests/differential), one section per bug.

A. ``delete``/``overwrite`` with a filter that binding settles by the schema alone (``id is null``
   on a required column, a literal beyond an int column's range) raised ExpressionError.
B. Appending a null struct whose required fields have no placeholder value of their type (every
   decimal, uuid) raised ArrowInvalid/ArrowNotImplementedError.
F. An equality delete on a column dropped later made every read fail with SchemaError: the delete
   still applies (the data files keep the column by id), and reads must honour it.
K. The batches handed to Spark for a null struct with a required field held nulls in that
   non-nullable field (flatten() folds the struct's nulls into its children): an invalid batch,
   which Arrow refuses to cast to its own schema ("nulls in input cannot be viewed as
   non-nullable").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icefloe
from icefloe.arrow.apply_deletes import _with_equality_columns, default_delete_loader
from icefloe.arrow.conform import conform_batch
from icefloe.arrow.deletes import write_equality_deletes
from icefloe.arrow.row_match import FilterMatcher
from icefloe.arrow.schema import schema_to_arrow
from icefloe.errors import SchemaError
from icefloe.expressions import parse
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

ModeParam = pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])


@pytest.fixture
def catalog(warehouse: Path) -> Any:
    cat = icefloe.load_catalog("regressions", type="memory", warehouse=warehouse.as_uri())
    cat.create_namespace("d")
    return cat


def _rows(table: Any, **scan: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.refresh().scan(**scan).to_arrow().sort_by("id").to_pylist()
    return rows


# ------------------------------------------------------------------ A: filters folding to constants

A_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("x", pa.int32())])
A_ROWS = [{"id": 1, "x": 1}, {"id": 2, "x": None}, {"id": 3, "x": 3}, {"id": 4, "x": 4}]


def _a_table(catalog: Any, mode: str) -> Any:
    t = catalog.create_table(
        "d.a", schema=A_SCHEMA, properties={"write.delete.mode": mode, "write.update.mode": mode}
    )
    # Two files: one matched in part, one that metadata may settle whole.
    t.append(pa.Table.from_pylist(A_ROWS[:3], schema=A_SCHEMA))
    t.append(pa.Table.from_pylist(A_ROWS[3:], schema=A_SCHEMA))
    return t.refresh()


@ModeParam
@pytest.mark.parametrize(
    ("where", "deleted_ids"),
    [
        ("id is null", []),  # a required column is never null: matches nothing
        ("x = 9999999999", []),  # beyond int: no value equals it
        ("id is not null", [1, 2, 3, 4]),
        ("x != 9999999999", [1, 2, 3, 4]),  # every value differs, and != holds on null
        ("id is null or x = 1", [1]),  # folds in part: only x is read
        ("not (id is null) and x = 3", [3]),
    ],
)
def test_delete_with_a_filter_that_binding_settles(
    catalog: Any, mode: str, where: str, deleted_ids: list[int]
) -> None:
    t = _a_table(catalog, mode)
    snapshots = len(t.snapshots())
    snap = t.delete(where)
    t = t.refresh()
    assert _rows(t) == [r for r in A_ROWS if r["id"] not in deleted_ids]
    if deleted_ids:
        assert snap is not None and len(t.snapshots()) == snapshots + 1
    else:
        # Like any delete that matches nothing: no snapshot.
        assert snap is None and len(t.snapshots()) == snapshots


@ModeParam
@pytest.mark.parametrize(
    ("where", "replaced_ids"),
    [
        ("id is null", []),
        ("id is not null", [1, 2, 3, 4]),
        ("x = 9999999999", []),
        ("x = 1 or id is null", [1]),
    ],
)
def test_overwrite_with_a_filter_that_binding_settles(
    catalog: Any, mode: str, where: str, replaced_ids: list[int]
) -> None:
    t = _a_table(catalog, mode)
    new = [{"id": 9, "x": 9}]
    t.overwrite(pa.Table.from_pylist(new, schema=A_SCHEMA), where=where)
    assert _rows(t) == [r for r in A_ROWS if r["id"] not in replaced_ids] + new


def test_filter_matcher_of_a_constant_filter_reads_no_column() -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "x", IntegerType()))
    batch = pa.record_batch({"x": pa.array([1, None], pa.int32())})
    none = FilterMatcher(schema, parse("id is null"))
    assert none.field_ids == set() and not none.read_schema.fields
    assert none.matches(batch).tolist() == [False, False]
    every = FilterMatcher(schema, parse("x != 9999999999"))
    assert every.matches(batch).tolist() == [True, True]
    partial = FilterMatcher(schema, parse("id is null or x = 1"))
    assert partial.field_ids == {2}
    assert partial.matches(batch).tolist() == [True, False]


# ------------------------------------------------------------------ B: null structs, required fields

# (type, a value of it) for every primitive, with the decimal edge cases: precision 1 and 38,
# scale 0, scale = precision, and scales that leave fewer than 19 integer digits.
B_PRIMITIVES: dict[str, tuple[IcebergType, Any]] = {
    "boolean": (BooleanType(), True),
    "int": (IntegerType(), -7),
    "long": (LongType(), 2**40),
    "float": (FloatType(), 1.5),
    "double": (DoubleType(), -2.25),
    "dec_1_0": (DecimalType(1, 0), Decimal("7")),
    "dec_1_1": (DecimalType(1, 1), Decimal("0.7")),
    "dec_9_1": (DecimalType(9, 1), Decimal("12345678.9")),
    "dec_9_9": (DecimalType(9, 9), Decimal("0.123456789")),
    "dec_18_17": (DecimalType(18, 17), Decimal("1.23456789012345678")),
    "dec_19_0": (DecimalType(19, 0), Decimal("9999999999999999999")),
    "dec_38_0": (DecimalType(38, 0), Decimal("9" * 38)),
    "dec_38_10": (DecimalType(38, 10), Decimal("-1234567890123456789012345678.0123456789")),
    "dec_38_37": (DecimalType(38, 37), Decimal("1." + "1" * 37)),
    "dec_38_38": (DecimalType(38, 38), Decimal("0." + "9" * 38)),
    "date": (DateType(), dt.date(1969, 7, 20)),
    "time": (TimeType(), dt.time(23, 59, 59, 999999)),
    "timestamp": (TimestampType(), dt.datetime(1900, 1, 1, 0, 0, 1)),
    "timestamptz": (TimestamptzType(), dt.datetime(2030, 5, 6, 7, 8, 9, tzinfo=dt.UTC)),
    "string": (StringType(), "héllo"),
    "binary": (BinaryType(), b"\x00\xff"),
    "fixed_1": (FixedType(1), b"\x01"),
    "fixed_16": (FixedType(16), bytes(range(16))),
    "uuid": (UUIDType(), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
}
# v3 types: the conversion must handle them, though icefloe does not write v3 tables yet.
B_V3_PRIMITIVES: dict[str, tuple[IcebergType, Any]] = {
    "timestamp_ns": (TimestampNsType(), dt.datetime(2001, 2, 3, 4, 5, 6, 7)),
    "timestamptz_ns": (TimestamptzNsType(), dt.datetime(2001, 2, 3, 4, 5, 6, 7, tzinfo=dt.UTC)),
}


def _nested_cases(next_id: list[int]) -> dict[str, tuple[IcebergType, Any]]:
    """Nested required types under the null struct: structs, lists and maps of required fields."""

    def fid() -> int:
        next_id[0] += 1
        return next_id[0]

    dec = DecimalType(9, 1)
    inner = StructType(
        NestedField(fid(), "d", dec, required=True), NestedField(fid(), "u", UUIDType(), required=True)
    )
    lst = ListType(fid(), dec, element_required=True)
    mp = MapType(fid(), StringType(), fid(), FixedType(2), value_required=True)
    deep = StructType(
        NestedField(
            fid(),
            "t",
            StructType(
                NestedField(
                    fid(), "l", ListType(fid(), DecimalType(38, 38), element_required=True), required=True
                ),
                NestedField(fid(), "o", StringType()),
            ),
            required=True,
        )
    )
    list_of_structs = ListType(
        fid(), StructType(NestedField(fid(), "e", DecimalType(5, 5), required=True)), element_required=False
    )
    return {
        "struct": (inner, {"d": Decimal("1.5"), "u": uuid.UUID(int=5)}),
        "list": (lst, [Decimal("1.0"), Decimal("-2.5")]),
        "map": (mp, [("k", b"ab")]),
        "deep": (deep, {"t": {"l": [Decimal("0." + "1" * 38)], "o": None}}),
        "list_of_structs": (list_of_structs, [{"e": Decimal("0.12345")}, None]),
    }


def _b_schema(cases: dict[str, tuple[IcebergType, Any]]) -> Schema:
    """``id`` and, per case, an optional struct ``s_<case>`` holding one required field ``v``."""
    fields = [NestedField(1, "id", LongType(), required=True)]
    next_id = 1000
    for name, (t, _) in cases.items():
        next_id += 2
        fields.append(
            NestedField(next_id, f"s_{name}", StructType(NestedField(next_id + 1, "v", t, required=True)))
        )
    return Schema(*fields)


def _input_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type users hand in: uuids as their 16-byte storage (pyarrow cannot build nested
    arrays of the extension type from Python values)."""
    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_input_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_input_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_input_type(t.key_type)), t.item_field.with_type(_input_type(t.item_type))
        )
    return t


def _py_input(v: Any) -> Any:
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, dict):
        return {k: _py_input(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_py_input(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_py_input(x) for x in v)
    return v


def _b_batch(schema: Schema, cases: dict[str, tuple[IcebergType, Any]]) -> pa.RecordBatch:
    """Row 1: every struct null. Row 2: every struct holding the case's value."""
    target = schema_to_arrow(schema, include_field_ids=False)
    arrays = [pa.array([1, 2], pa.int64())]
    for name, (_, value) in cases.items():
        typ = _input_type(target.field(f"s_{name}").type)
        arrays.append(pa.array([None, {"v": _py_input(value)}], typ))
    return pa.RecordBatch.from_arrays(arrays, names=target.names)


def _expected_b(cases: dict[str, tuple[IcebergType, Any]]) -> list[dict[str, Any]]:
    def out(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: out(x) for k, x in v.items()}
        if isinstance(v, list):
            return [out(x) for x in v]
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(dt.UTC)
        return v

    return [
        {"id": 1, **{f"s_{n}": None for n in cases}},
        {"id": 2, **{f"s_{n}": {"v": out(v)} for n, (_, v) in cases.items()}},
    ]


def _all_b_cases(v3: bool) -> dict[str, tuple[IcebergType, Any]]:
    cases = dict(B_PRIMITIVES)
    if v3:
        cases.update(B_V3_PRIMITIVES)
    cases.update(_nested_cases([5000]))
    return cases


def _as_py(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


@pytest.mark.parametrize("name", [*B_PRIMITIVES, *B_V3_PRIMITIVES, *_nested_cases([5000])])
def test_null_struct_with_a_required_field_conforms_and_writes(name: str) -> None:
    """Each type alone: conform gives placeholders under the null struct that Parquet accepts,
    and the struct reads back as null."""
    case = {name: _all_b_cases(v3=True)[name]}
    schema = _b_schema(case)
    out = conform_batch(_b_batch(schema, case), schema)
    out.validate(full=True)
    assert out.schema == schema_to_arrow(schema)
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_batches([out]), buf)
    back = pq.read_table(io.BytesIO(buf.getvalue()))
    assert back.column(f"s_{name}").to_pylist()[0] is None
    # Under the null struct the required field holds a placeholder, never a null.
    assert out.column(1).field(0).null_count == 0


def test_null_struct_with_required_fields_of_every_type_round_trips(catalog: Any) -> None:
    cases = _all_b_cases(v3=False)
    schema = _b_schema(cases)
    t = catalog.create_table("d.b", schema=schema)
    t.append(pa.Table.from_batches([_b_batch(schema, cases)]))
    got = _as_py(t.refresh().scan().to_arrow().sort_by("id"))
    assert got == _expected_b(cases)


def test_placeholders_fill_nested_required_values_under_a_null_struct() -> None:
    """The placeholder of a struct holds placeholders for its required children, recursively,
    and empty lists and maps; optional children stay null."""
    cases = _nested_cases([5000])
    schema = _b_schema({"deep": cases["deep"]})
    out = conform_batch(_b_batch(schema, {"deep": cases["deep"]}), schema)
    s = out.column(1)
    v = s.field(0)  # the raw child, under the null struct in row 1
    t = v.field(0)
    assert s.is_null().to_pylist() == [True, False]
    assert v.null_count == 0 and t.null_count == 0  # required all the way down
    assert t.field(1).null_count == 2  # "o" is optional: null in both rows


# ------------------------------------------------------------------ F: equality deletes on dropped columns


def _read_variants(t: Any) -> dict[str, list[dict[str, Any]]]:
    """Full scan, projection without the equality columns, and a filter on another column; each
    with a cold delete cache (the equality rows read under the current schema) and a warm one."""
    out = {}
    for warm in (False, True):
        if not warm:
            default_delete_loader().clear()
        out[f"all{warm}"] = _rows(t)
        out[f"id{warm}"] = _rows(t, selected_fields=("id",))
    return out


def _only_ids(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": r["id"]} for r in rows]


def _eq_delete(t: Any, rows: pa.Table, columns: list[Any]) -> Any:
    files = write_equality_deletes(t.io, t.metadata, rows, columns)
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=files)
    return t.refresh()


def _check_reads(t: Any, want: list[dict[str, Any]]) -> None:
    for name, got in _read_variants(t).items():
        assert got == (want if name.startswith("all") else _only_ids(want)), name


def test_equality_delete_on_a_dropped_column_still_applies(catalog: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.string())])
    t = catalog.create_table("d.f", schema=schema)
    t.append(pa.table({"id": [1, 2, 3], "b": ["x", "y", None]}, schema=schema))
    t = _eq_delete(t, pa.table({"b": ["x"]}), ["b"])
    assert _rows(t) == [{"id": 2, "b": "y"}, {"id": 3, "b": None}]  # warm the delete cache
    with t.update_schema() as u:
        u.delete_column("b")
    t = t.refresh()
    _check_reads(t, [{"id": 2}, {"id": 3}])


@ModeParam
def test_dropped_equality_column_with_promotion_reuse_and_row_deletes(catalog: Any, mode: str) -> None:
    """The delete written after int -> long compares old int data; the name comes back as a new
    column of another type; deletes on the remaining columns keep working afterwards."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.int32()), pa.field("c", pa.string())]
    )
    t = catalog.create_table("d.f", schema=schema, properties={"write.delete.mode": mode})
    t.append(
        pa.table(
            {"id": [1, 2, 3, 4], "b": pa.array([10, 20, None, 2**31 - 1], pa.int32()), "c": list("wxyz")}
        )
    )
    with t.update_schema() as u:
        u.update_column("b", "long")
    t = _eq_delete(t.refresh(), pa.table({"b": pa.array([10, None, 2**40], pa.int64())}), ["b"])
    with t.update_schema() as u:
        u.delete_column("b")
    t = t.refresh()
    _check_reads(t, [{"id": 2, "c": "x"}, {"id": 4, "c": "z"}])
    assert _rows(t, row_filter="c != 'z'", selected_fields=("id",)) == [{"id": 2}]

    with t.update_schema() as u:
        u.add_column("b", "string")
    t = t.refresh()
    t.append(pa.table({"id": [5], "c": ["v"], "b": ["10"]}))  # after the delete: not deleted
    _check_reads(
        t, [{"id": 2, "c": "x", "b": None}, {"id": 4, "c": "z", "b": None}, {"id": 5, "c": "v", "b": "10"}]
    )

    assert t.refresh().delete("c = 'x'") is not None
    _check_reads(t, [{"id": 4, "c": "z", "b": None}, {"id": 5, "c": "v", "b": "10"}])
    # An equality delete on a remaining column, alongside the one on the dropped column.
    t = _eq_delete(t.refresh(), pa.table({"c": ["v"]}), ["c"])
    _check_reads(t, [{"id": 4, "c": "z", "b": None}])


def test_equality_delete_on_a_dropped_nested_field_and_struct(catalog: Any) -> None:
    st = pa.struct([pa.field("x", pa.int32()), pa.field("k", pa.string())])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", st)])
    t = catalog.create_table("d.f", schema=schema)
    t.append(pa.table({"id": [1, 2, 3], "s": [{"x": 1, "k": "a"}, {"x": 2, "k": "b"}, None]}, schema=schema))
    k = t.schema().find_field("s.k").field_id
    t = _eq_delete(t, pa.table({"s": pa.array([{"k": "a"}], pa.struct([pa.field("k", pa.string())]))}), [k])
    with t.update_schema() as u:
        u.delete_column("s.k")
    t = t.refresh()
    _check_reads(t, [{"id": 2, "s": {"x": 2}}, {"id": 3, "s": None}])
    with t.update_schema() as u:
        u.delete_column("s")
    _check_reads(t.refresh(), [{"id": 2}, {"id": 3}])


def test_changelog_applies_equality_deletes_on_dropped_columns(catalog: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.string())])
    t = catalog.create_table("d.f", schema=schema)
    t.append(pa.table({"id": [1, 2], "b": ["x", "y"]}, schema=schema))
    t = _eq_delete(t, pa.table({"b": ["x"]}), ["b"])
    with t.update_schema() as u:
        u.delete_column("b")
    default_delete_loader().clear()
    rows = t.refresh().changelog_scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["_change_type"]) for r in rows) == [(1, "DELETE"), (1, "INSERT"), (2, "INSERT")]


def test_copy_on_write_rewrite_after_the_drop_keeps_the_delete(catalog: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.string())])
    t = catalog.create_table("d.f", schema=schema, properties={"write.delete.mode": "copy-on-write"})
    t.append(pa.table({"id": [1, 2, 3], "b": ["x", "y", "z"]}, schema=schema))
    t = _eq_delete(t, pa.table({"b": ["y"]}), ["b"])
    with t.update_schema() as u:
        u.delete_column("b")
    t = t.refresh()
    assert t.delete("id = 3") is not None  # rewrites the file, applying the equality delete
    _check_reads(t, [{"id": 1}])
    assert np.sum([f.file.record_count for f in t.refresh().scan().plan_files()]) == 1


def _id_field(name: str, t: pa.DataType, fid: int) -> pa.Field:
    return pa.field(name, t, metadata={b"PARQUET:field_id": str(fid).encode()})


def test_schema_extension_for_dropped_equality_columns() -> None:
    """Dropped equality fields come back by id, under placeholder names, optional and widened;
    nested ones inside the structs the table still has; present ones change nothing."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "b", StringType()),  # a new column that took a dropped one's name
        NestedField(3, "s", StructType(NestedField(4, "x", IntegerType()))),
    )
    delete_columns = (
        _id_field("b", pa.int32(), 7),
        _id_field("s", pa.struct([_id_field("k", pa.decimal128(9, 2), 8)]), 3),
        _id_field("t", pa.struct([_id_field("u", pa.float32(), 10)]), 9),
    )
    assert _with_equality_columns(schema, delete_columns, (1, 2), "d.parquet") is schema
    got = _with_equality_columns(schema, delete_columns, (7, 8, 10), "d.parquet")
    assert got.find_field(7) == NestedField(7, "__icefloe_dropped_7", LongType())
    assert got.find_field(8) == NestedField(8, "__icefloe_dropped_8", DecimalType(38, 2))
    assert got.parent_id(8) == 3 and got.find_field(4).name == "x"
    assert got.find_field(10).field_type == DoubleType() and got.parent_id(10) == 9
    assert [f.name for f in got.fields] == ["id", "b", "s", "__icefloe_dropped_7", "__icefloe_dropped_9"]
    with pytest.raises(SchemaError, match=r"compares field id\(s\) \[11\]"):
        _with_equality_columns(schema, delete_columns, (7, 11), "d.parquet")


def test_equality_delete_without_field_ids_on_a_dropped_column_fails_clearly(catalog: Any) -> None:
    """A delete file without Parquet field ids (matched by the table's names) cannot find a
    column the table no longer names: reading says so instead of deleting by nulls."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.string())])
    t = catalog.create_table("d.f", schema=schema)
    t.append(pa.table({"id": [1, 2], "b": ["x", "y"]}, schema=schema))
    [eq] = write_equality_deletes(t.io, t.metadata, pa.table({"b": ["x"]}), ["b"])
    # The same rows, rewritten without field ids (as some non-Iceberg writers do).
    path = Path(eq.file_path.removeprefix("file://"))
    pq.write_table(pa.table({"b": pq.read_table(path).column("b").to_pylist()}), path)
    eq = dataclasses.replace(eq, file_size_in_bytes=path.stat().st_size)
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=[eq])
    t = t.refresh()
    default_delete_loader().clear()
    assert _rows(t) == [{"id": 2, "b": "y"}]  # by name while the column exists
    with t.update_schema() as u:
        u.delete_column("b")
    default_delete_loader().clear()
    with pytest.raises(SchemaError, match="compares field id"):
        _rows(t.refresh())


# --------------------------------------------------------------------------- K: Spark layout


def test_spark_batch_of_a_null_struct_with_required_fields_is_valid() -> None:
    from icefloe.arrow.spark_layout import to_spark_batch

    schema = Schema(
        NestedField(
            1,
            "c",
            StructType(
                NestedField(2, "u", UUIDType(), False),
                NestedField(3, "d", DecimalType(1, 1), True),
                NestedField(4, "inner", StructType(NestedField(5, "i", IntegerType(), True)), True),
            ),
            False,
        )
    )
    arrow_type = schema_to_arrow(schema).field("c").type
    u_type, d_field, inner_field = arrow_type.field(0).type, arrow_type.field(1), arrow_type.field(2)
    u = pa.ExtensionArray.from_storage(u_type, pa.array([b"\0" * 16, uuid.UUID(int=7).bytes], pa.binary(16)))
    d = pa.array([None, Decimal("0.1")], d_field.type)
    inner = pa.StructArray.from_arrays(
        [pa.array([None, 3], pa.int32())], fields=[inner_field.type.field(0)], mask=pa.array([True, False])
    )
    c = pa.StructArray.from_arrays(
        [u, d, inner], fields=[arrow_type.field(0), d_field, inner_field], mask=pa.array([True, False])
    )
    batch = pa.RecordBatch.from_arrays([c], schema=schema_to_arrow(schema))
    target = pa.schema(
        [
            pa.field(
                "c",
                pa.struct(
                    [
                        pa.field("u", pa.string()),
                        pa.field("d", pa.decimal128(1, 1), False),
                        pa.field("inner", pa.struct([pa.field("i", pa.int32(), False)]), False),
                    ]
                ),
            )
        ]
    )
    out = to_spark_batch(batch, schema, target)
    assert out.schema == target
    # What PySpark does with the batches: cast them to the schema they declare.
    rows = pa.Table.from_batches([out]).cast(target).to_pylist()
    assert rows == [{"c": None}, {"c": {"u": str(uuid.UUID(int=7)), "d": Decimal("0.1"), "inner": {"i": 3}}}]
