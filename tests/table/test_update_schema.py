"""``table.update_schema()`` and ``schema_evolution="merge"`` on the Arrow API: every operation
committed and read back (old snapshots through their own schema, new data through the new one),
every refusal leaving the table unchanged, transactions, and scenario tests of schema changes
racing data commits and other schema changes."""

from __future__ import annotations

import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import (
    ConflictError,
    IncompatibleSchemaChangeError,
    SchemaError,
    SchemaMismatchError,
    ValidationError,
)
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortField, SortOrder
from icefloe.spec.types import DecimalType, DoubleType, LongType, NestedField, StringType
from icefloe.table import Table
from icefloe.testing import CommitFault, FaultInjectingCatalog
from icefloe.transforms import IdentityTransform

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("a", pa.int32()),
        ("f", pa.float32()),
        ("dec", pa.decimal128(9, 2)),
        ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("pts", pa.list_(pa.struct([("x", pa.float32())]))),
        ("m", pa.map_(pa.string(), pa.struct([("v", pa.int32())]))),
    ]
)


def first_rows() -> pa.Table:
    return pa.table(
        {
            "id": [1, 2],
            "a": [10, None],
            "f": [1.5, 2.5],
            "dec": [decimal.Decimal("1.25"), None],
            "s": [{"x": 1, "y": "one"}, None],
            "pts": [[{"x": 0.5}], None],
            "m": [[("k", {"v": 7})], None],
        },
        schema=SCHEMA,
    )


def rows_of(t: Table, **scan: object) -> list[dict[str, object]]:
    got = t.scan(**scan).to_arrow().to_pylist()  # type: ignore[arg-type]
    return sorted(got, key=lambda r: r["id"])  # type: ignore[arg-type, return-value]


@pytest.fixture
def catalog(tmp_path: Path) -> InMemoryCatalog:
    wh = tmp_path / "wh"
    wh.mkdir()
    cat = InMemoryCatalog("m", warehouse=wh.as_uri())
    cat.create_namespace("ns")
    return cat


@pytest.fixture
def table(catalog: InMemoryCatalog) -> Table:
    t = catalog.create_table("ns.t", schema=SCHEMA)
    t.append(first_rows())
    return t


def unchanged(t: Table, location: str) -> None:
    assert t.metadata_location == location
    assert t.refresh().metadata_location == location


# ------------------------------------------------------------------ every operation, read back


def test_every_operation_commits_once_and_reads_back(table: Table) -> None:
    s1 = table.current_snapshot()
    assert s1 is not None
    before = len(table.metadata.metadata_log)
    with table.update_schema() as u:
        u.add_column("note", pa.string(), doc="free text")  # Arrow type
        u.add_column("s.z", "long")  # a type name
        u.add_column("pts.element.y", DoubleType())  # icefloe type, inside a list
        u.add_column("m.value.w", pa.bool_())  # inside a map value
        u.rename_column("a", "amount")
        u.update_column("a", field_type=pa.int64(), doc="widened")  # int -> long
        u.update_column("f", field_type="double")
        u.update_column("dec", field_type=pa.decimal128(12, 2))
        u.update_column("pts.element.x", field_type=DoubleType())
        u.update_column("id", required=False)
        u.delete_column("s.y")
        u.move_first("note")
        u.move_before("s.z", "s.x")
    assert len(table.metadata.metadata_log) == before + 1  # one commit
    s = table.schema()
    assert [f.name for f in s.fields] == ["note", "id", "amount", "f", "dec", "s", "pts", "m"]
    assert s.find_field("amount").field_id == 2 and s.find_field("amount").doc == "widened"
    assert s.find_type("amount") == LongType() and s.find_type("dec") == DecimalType(12, 2)
    assert [f.name for f in s.find_type("s").fields] == ["z", "x"]  # type: ignore[attr-defined]
    assert table.metadata.last_column_id > 12

    # old data through the new schema: renamed, widened, added (null), dropped
    assert rows_of(table) == [
        {
            "note": None,
            "id": 1,
            "amount": 10,
            "f": 1.5,
            "dec": decimal.Decimal("1.25"),
            "s": {"z": None, "x": 1},
            "pts": [{"x": 0.5, "y": None}],
            "m": [("k", {"v": 7, "w": None})],
        },
        {"note": None, "id": 2, "amount": None, "f": 2.5, "dec": None, "s": None, "pts": None, "m": None},
    ]
    # the old snapshot reads with its own schema
    assert rows_of(table, snapshot_id=s1.snapshot_id) == sorted(
        first_rows().to_pylist(), key=lambda r: r["id"]
    )

    # writes use the new schema (conformed by name; int32 into the widened column)
    new = pa.table(
        {
            "id": [3],
            "amount": pa.array([2**40], pa.int64()),
            "note": ["hi"],
            "dec": pa.array([decimal.Decimal("12345678.91")], pa.decimal128(12, 2)),
            "s": pa.array([{"x": 3, "z": 30}], pa.struct([("x", pa.int32()), ("z", pa.int64())])),
            "pts": [[{"x": 1e300, "y": 2.0}]],
        }
    )
    table.append(new)
    got = rows_of(table)[-1]
    assert got["amount"] == 2**40 and got["note"] == "hi" and got["dec"] == decimal.Decimal("12345678.91")
    assert got["s"] == {"z": 30, "x": 3} and got["pts"] == [{"x": 1e300, "y": 2.0}]
    # a column that was dropped cannot be written any more
    with pytest.raises(SchemaMismatchError, match=r"'s\.y'"):
        table.append(pa.table({"id": [4], "s": [{"x": 1, "y": "old"}]}))


def test_rename_delete_and_readd_reads_by_id(table: Table) -> None:
    with table.update_schema() as u:
        u.delete_column("a")
    with table.update_schema() as u:
        u.add_column("a", pa.int32())  # same name, new id: old values must not come back
    assert table.schema().find_field("a").field_id == table.metadata.last_column_id
    assert [r["a"] for r in rows_of(table)] == [None, None]
    table.append(pa.table({"id": [3], "a": pa.array([5], pa.int32())}))
    assert [r["a"] for r in rows_of(table)] == [None, None, 5]
    # a filter on the new column only sees new values
    assert [r["id"] for r in rows_of(table, row_filter="a = 10")] == []
    assert [r["id"] for r in rows_of(table, row_filter="a = 5")] == [3]


def test_filters_and_projections_after_rename_and_promotion(table: Table) -> None:
    with table.update_schema() as u:
        u.rename_column("a", "amount")
        u.update_column("a", field_type=pa.int64())  # names refer to the schema before the update
        u.rename_column("s.x", "sx")
    table.append(
        pa.table(
            {
                "id": [3],
                "amount": pa.array([2**35], pa.int64()),
                "s": pa.array([{"sx": 9}], pa.struct([("sx", pa.int32())])),
            }
        )
    )
    assert [r["id"] for r in rows_of(table, row_filter="amount >= 10")] == [1, 3]
    assert [r["id"] for r in rows_of(table, row_filter="amount > 2147483647")] == [3]
    assert rows_of(table, selected_fields=("id", "s.sx"), row_filter="s.sx = 1") == [
        {"id": 1, "s": {"sx": 1}}
    ]


def test_types_accepted(table: Table) -> None:
    u = table.update_schema()
    u.add_column("t1", pa.timestamp("us", tz="UTC")).add_column("t2", "decimal(10, 3)")
    u.add_column("t3", pa.list_(pa.int16())).add_column("t4", pa.field("ignored", pa.string()))
    s = u.apply()
    assert str(s.find_type("t1")) == "timestamptz" and str(s.find_type("t2")) == "decimal(10, 3)"
    assert str(s.find_type("t3")) == "list<int>" and str(s.find_type("t4")) == "string"
    with pytest.raises(SchemaError, match="must be an icefloe type"):
        u.add_column("bad", 42)
    with pytest.raises(SchemaError, match="nanosecond"):
        u.add_column("ns", pa.timestamp("ns"))
    u.abandon()


def test_block_that_raises_commits_nothing(table: Table) -> None:
    loc = table.metadata_location
    with pytest.raises(RuntimeError), table.update_schema() as u:
        u.add_column("x", pa.int32())
        raise RuntimeError("boom")
    unchanged(table, loc)
    assert "x" not in [f.name for f in table.schema().fields]


def test_no_change_commits_nothing_and_same_schema_reuses_its_id(table: Table) -> None:
    loc = table.metadata_location
    with table.update_schema() as u:
        u.update_column("a", field_type=pa.int32())  # same type
        u.update_column("id", required=True)  # already required
    unchanged(table, loc)
    with table.update_schema() as u:
        u.add_column("tmp", pa.int32())
    assert table.metadata.current_schema_id == 1
    with table.update_schema() as u:
        u.delete_column("tmp")
    # equal to schema 0 again: Java reuses the id
    assert table.metadata.current_schema_id == 0
    assert [s.schema_id for s in table.metadata.schemas] == [0, 1]
    assert table.metadata.last_column_id == 15  # ids are never reused


def test_update_schema_object_is_single_use(table: Table) -> None:
    u = table.update_schema()
    u.add_column("x", pa.int32())
    u.commit()
    with pytest.raises(ValidationError, match="already committed"):
        u.add_column("y", pa.int32())
    assert "UpdateSchema" in repr(u)


# ------------------------------------------------------------------ refusals leave the table as it was


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda u: u.update_column("id", field_type=pa.int32()), IncompatibleSchemaChangeError, "narrows"),
        (
            lambda u: u.update_column("s.y", field_type=pa.int32()),
            IncompatibleSchemaChangeError,
            "string to int",
        ),
        (
            lambda u: u.update_column("a", required=True),
            IncompatibleSchemaChangeError,
            "optional -> required",
        ),
        (
            lambda u: u.add_column("r", pa.int32(), required=True),
            IncompatibleSchemaChangeError,
            "required column",
        ),
        (lambda u: u.delete_column("nope"), SchemaError, "no such column"),
        (lambda u: u.add_column("s", pa.int32()), SchemaError, "already exists"),
        (lambda u: u.move_before("s.x", "id"), SchemaError, "different struct"),
    ],
)
def test_refusals_are_typed_and_change_nothing(
    table: Table, change: object, error: type, message: str
) -> None:
    loc = table.metadata_location
    with pytest.raises(error, match=message), table.update_schema() as u:
        change(u)  # type: ignore[operator]
    unchanged(table, loc)


def test_allow_incompatible_changes(table: Table) -> None:
    with table.update_schema(allow_incompatible_changes=True) as u:
        u.update_column("a", required=True)
        u.add_column("r", pa.string(), required=True)
    s = table.schema()
    assert s.find_field("a").required and s.find_field("r").required
    with table.update_schema() as u:
        u.allow_incompatible_changes().update_column("f", required=True)
    assert table.schema().find_field("f").required
    with pytest.raises(IncompatibleSchemaChangeError):  # narrowing stays refused
        table.update_schema(allow_incompatible_changes=True).update_column("id", field_type=pa.int32())


def test_case_insensitive(table: Table) -> None:
    with table.update_schema(case_sensitive=False) as u:
        u.rename_column("A", "Amount")
        u.add_column("S.new", pa.int32())
        u.move_first("s.NEW")
    s = table.schema()
    assert s.find_field(2).name == "Amount"
    assert [f.name for f in s.find_type("s").fields] == ["new", "x", "y"]  # type: ignore[attr-defined]
    with pytest.raises(SchemaError, match="no such column"):
        table.update_schema().rename_column("AMOUNT", "b")


# ------------------------------------------------------------------ partition spec, sort order, identifiers


def test_partition_source_cannot_be_deleted_but_can_be_promoted(catalog: InMemoryCatalog) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("cat", pa.string()), ("v", pa.int32())])
    t = catalog.create_table("ns.p", schema=schema, partition_by=["bucket(4, id)", "cat", "truncate(10, v)"])
    t.append(pa.table({"id": [1, 2, 3], "cat": ["a", "b", "a"], "v": [5, 15, 25]}, schema=schema))
    loc = t.metadata_location
    with (
        pytest.raises(IncompatibleSchemaChangeError, match="partition spec uses it") as ei,
        t.update_schema() as u,
    ):
        u.delete_column("cat")
    assert ei.value.context["column"] == "cat" and "partition spec" in (ei.value.hint or "")
    unchanged(t, loc)
    with t.update_schema() as u:  # int -> long keeps bucket and truncate values
        u.update_column("id", field_type=pa.int64())
        u.update_column("v", field_type=pa.int64())
        u.rename_column("cat", "category")
    t.append(
        pa.table({"id": pa.array([2**40], pa.int64()), "category": ["a"], "v": pa.array([2**33], pa.int64())})
    )
    assert sorted(r["id"] for r in t.scan(row_filter="id = 2").to_arrow().to_pylist()) == [2]
    assert sorted(r["id"] for r in t.scan(row_filter="category = 'a'").to_arrow().to_pylist()) == [
        1,
        3,
        2**40,
    ]
    assert sorted(r["id"] for r in t.scan(row_filter="v >= 20").to_arrow().to_pylist()) == [3, 2**40]
    assert [len(x.file.partition) for x in t.scan(row_filter="v >= 20").plan_files()] == [3, 3]


def test_sort_order_source_cannot_be_deleted(catalog: InMemoryCatalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64())])
    t = catalog.create_table(
        "ns.o", schema=schema, sort_order=SortOrder(1, [SortField(2, IdentityTransform())])
    )
    with pytest.raises(IncompatibleSchemaChangeError, match="sort order uses it"), t.update_schema() as u:
        u.delete_column("ts")


def test_identifier_fields(table: Table) -> None:
    with table.update_schema() as u:
        u.set_identifier_fields("id")
    assert table.schema().identifier_field_ids == (1,)
    loc = table.metadata_location
    with (
        pytest.raises(IncompatibleSchemaChangeError, match="identifier field 'id'"),
        table.update_schema() as u,
    ):
        u.delete_column("id")
    with pytest.raises(SchemaError, match="it is optional"), table.update_schema() as u:
        u.set_identifier_fields("a")
    with (
        pytest.raises(SchemaError, match="float and double"),
        table.update_schema(allow_incompatible_changes=True) as u,
    ):
        u.update_column("f", required=True)
        u.set_identifier_fields("f")
    unchanged(table, loc)
    with table.update_schema() as u:
        u.rename_column("id", "key")
    assert table.schema().identifier_field_ids == (1,)
    with table.update_schema() as u:
        u.set_identifier_fields()
        u.delete_column("key")
    assert table.schema().identifier_field_ids == ()


def test_name_mapping_and_column_properties_follow(table: Table) -> None:
    mapping = [{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["a"]}]
    with table.transaction() as tx:
        tx.set_properties(
            **{"schema.name-mapping.default": json.dumps(mapping), "write.metadata.metrics.column.a": "full"}
        )
    with table.update_schema() as u:
        u.rename_column("a", "amount")
        u.add_column("n", pa.int32())
    props = table.properties
    assert props["write.metadata.metrics.column.amount"] == "full"
    assert "write.metadata.metrics.column.a" not in props
    new_mapping = json.loads(props["schema.name-mapping.default"])
    assert new_mapping[1] == {"field-id": 2, "names": ["a", "amount"]}
    assert new_mapping[-1] == {"field-id": table.schema().find_field("n").field_id, "names": ["n"]}


# ------------------------------------------------------------------ transactions


def test_schema_change_and_data_in_one_transaction(table: Table) -> None:
    before = len(table.snapshots())
    with table.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("extra", pa.string())
        tx.append(pa.table({"id": [3], "extra": ["x"]}))
        with tx.update_schema() as u:  # a second change builds on the first
            u.rename_column("extra", "more")
    assert len(table.snapshots()) == before + 1
    snap = table.current_snapshot()
    assert snap is not None
    assert snap.schema_id is not None  # the data was written with the schema that has the column
    assert "extra" in [f.name for f in table.metadata.schema_by_id(snap.schema_id).fields]
    assert [r["more"] for r in rows_of(table)] == [None, None, "x"]


def test_abandoned_transaction_commits_no_schema(table: Table) -> None:
    loc = table.metadata_location
    with pytest.raises(RuntimeError), table.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("extra", pa.string())
        tx.append(pa.table({"id": [3], "extra": ["x"]}))
        raise RuntimeError("boom")
    unchanged(table, loc)


# ------------------------------------------------------------------ writes that merge the schema


def test_append_merge_adds_columns_and_widens(table: Table) -> None:
    loc = table.metadata_location
    data = pa.table(
        {
            "id": [3],
            "a": pa.array([2**40], pa.int64()),  # int -> long
            "f": pa.array([0.1], pa.float64()),  # float -> double
            "dec": pa.array([decimal.Decimal("123456789.12")], pa.decimal128(11, 2)),
            "s": pa.array([{"x": 1, "y": "z", "q": True}]),  # new nested field
            "pts": pa.array(
                [[{"x": 1.0, "w": 2}]], pa.list_(pa.struct([("x", pa.float32()), ("w", pa.int64())]))
            ),
            "m": pa.array(
                [[("k", {"v": 1, "u": "new"})]],
                pa.map_(pa.string(), pa.struct([("v", pa.int32()), ("u", pa.string())])),
            ),
            "brand_new": ["yes"],
        }
    )
    with pytest.raises(SchemaMismatchError, match="brand_new"):
        table.append(data)
    unchanged(table, loc)
    snapshots = len(table.snapshots())
    table.append(data, schema_evolution="merge")
    assert len(table.snapshots()) == snapshots + 1
    assert len(table.metadata.metadata_log) == len(table.refresh().metadata.metadata_log)
    s = table.schema()
    assert str(s.find_type("a")) == "long" and str(s.find_type("f")) == "double"
    assert str(s.find_type("dec")) == "decimal(11, 2)"
    assert [f.name for f in s.find_type("s").fields] == ["x", "y", "q"]  # type: ignore[attr-defined]
    assert s.find_field("pts.element.w") and s.find_field("m.value.u") and s.find_field("brand_new")
    assert s.find_field("id").required  # a write never relaxes a required column
    got = rows_of(table)
    assert (
        got[2]["a"] == 2**40 and got[2]["brand_new"] == "yes" and got[2]["m"] == [("k", {"v": 1, "u": "new"})]
    )
    assert got[0]["brand_new"] is None and got[0]["s"] == {"x": 1, "y": "one", "q": None}
    # narrower input is accepted as it is, without a new schema
    schema_id = table.metadata.current_schema_id
    table.append(pa.table({"id": [4], "a": pa.array([1], pa.int8())}), schema_evolution="merge")
    assert table.metadata.current_schema_id == schema_id


def test_merge_refusals_write_and_commit_nothing(table: Table, tmp_path: Path) -> None:
    loc = table.metadata_location
    data_dir = Path(table.location.removeprefix("file://")) / "data"
    files_before = sorted(data_dir.rglob("*.parquet"))
    with pytest.raises(IncompatibleSchemaChangeError, match="'a'"):
        table.append(pa.table({"id": [3], "a": ["text"]}), schema_evolution="merge")
    with pytest.raises(SchemaMismatchError, match="required"):
        table.append(pa.table({"id": pa.array([None], pa.int64())}), schema_evolution="merge")
    with pytest.raises(ValidationError, match="schema_evolution must be"):
        table.append(pa.table({"id": [3]}), schema_evolution="union")
    unchanged(table, loc)
    assert sorted(data_dir.rglob("*.parquet")) == files_before


def test_merge_on_every_write(table: Table) -> None:
    table.overwrite(pa.table({"id": [1], "o": ["ow"]}), "id = 1", schema_evolution="merge")
    table.upsert(pa.table({"id": [2, 5], "u": [2.5, 5.5]}), ["id"], schema_evolution="merge")
    table.replace_partitions(pa.table({"id": [9], "r": [True]}), schema_evolution="merge")
    names = [f.name for f in table.schema().fields]
    assert names[-3:] == ["o", "u", "r"]
    # unpartitioned: replace_partitions replaced everything
    assert rows_of(table, selected_fields=("id", "r")) == [{"id": 9, "r": True}]
    with table.transaction() as tx:
        tx.append(pa.table({"id": [10], "t": ["tx"]}), schema_evolution="merge")
        tx.append(pa.table({"id": [11], "t": ["tx2"], "t2": [1]}), schema_evolution="merge")
    assert [r["t"] for r in rows_of(table, selected_fields=("id", "t"))] == [None, "tx", "tx2"]


def test_merge_with_batches_iterable(table: Table) -> None:
    batches = pa.table({"id": [3, 4], "nb": ["a", "b"]}).to_batches(max_chunksize=1)
    table.append(iter(batches), schema_evolution="merge")
    assert [r["nb"] for r in rows_of(table)] == [None, None, "a", "b"]


# ------------------------------------------------------------------ concurrency scenarios


@pytest.fixture
def faulty(tmp_path: Path) -> FaultInjectingCatalog:
    wh = tmp_path / "fwh"
    wh.mkdir()
    cat = FaultInjectingCatalog(InMemoryCatalog("m", warehouse=wh.as_uri()))
    cat.create_namespace("ns")
    return cat


def test_schema_change_racing_a_data_append_both_land(faulty: FaultInjectingCatalog) -> None:
    """Setup: a table. We read it and change its schema; another writer appends first (in the
    window between our validation and our swap). Both land: the append changed no schema."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    t.append(first_rows())
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.append(pa.table({"id": [3], "a": pa.array([30], pa.int32())})))
    with t.update_schema() as u:
        u.add_column("n", pa.string())
        u.rename_column("a", "amount")
    t.refresh()
    assert [r["amount"] for r in rows_of(t)] == [10, None, 30]
    assert t.schema().find_field("n")
    # and with a stale handle that never saw the append
    stale = faulty.load_table("ns.t")
    t.append(pa.table({"id": [4]}))
    with stale.update_schema() as u:
        u.add_column("n2", pa.string())
    assert [r["id"] for r in rows_of(stale.refresh())] == [1, 2, 3, 4]


def test_schema_change_racing_a_schema_change_fails_typed(faulty: FaultInjectingCatalog) -> None:
    """Two writers change the schema from the same base: the second fails with ConflictError
    and nothing of it lands; the first one's change is intact."""
    t = faulty.create_table("ns.t", schema=SCHEMA)
    t.append(first_rows())
    mine = faulty.load_table("ns.t")
    theirs = faulty.load_table("ns.t")
    with theirs.update_schema() as u:
        u.add_column("theirs", pa.string())
    with pytest.raises(ConflictError, match="schema changed concurrently") as ei, mine.update_schema() as u:
        u.add_column("mine", pa.int64())
    assert ei.value.hint and "refresh" in ei.value.hint
    mine.refresh()
    names = [f.name for f in mine.schema().fields]
    assert "theirs" in names and "mine" not in names
    # racing in the commit window as well
    faulty.before_next_swap(lambda: theirs.refresh().update_schema().add_column("late", pa.int32()).commit())
    with pytest.raises(ConflictError), mine.update_schema() as u:
        u.add_column("mine", pa.int64())
    names = [f.name for f in mine.refresh().schema().fields]
    assert "late" in names and "mine" not in names


def test_merge_write_racing_a_data_append(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    t.append(first_rows())
    other = faulty.load_table("ns.t")
    faulty.before_next_swap(lambda: other.append(pa.table({"id": [3]})))
    t.append(pa.table({"id": [4], "extra": ["e"]}), schema_evolution="merge")
    assert [(r["id"], r["extra"]) for r in rows_of(t.refresh())] == [
        (1, None),
        (2, None),
        (3, None),
        (4, "e"),
    ]


def test_merge_write_racing_a_schema_change_deletes_its_files(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    t.append(first_rows())
    other = faulty.load_table("ns.t")
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    files_before = sorted(data_dir.rglob("*.parquet"))
    faulty.before_next_swap(lambda: other.update_schema().add_column("x", pa.int32()).commit())
    with pytest.raises(ConflictError):
        t.append(pa.table({"id": [4], "extra": ["e"]}), schema_evolution="merge")
    assert sorted(data_dir.rglob("*.parquet")) == files_before
    assert "extra" not in [f.name for f in t.refresh().schema().fields]


def test_lost_swap_is_retried(faulty: FaultInjectingCatalog) -> None:
    t = faulty.create_table("ns.t", schema=SCHEMA)
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    with t.update_schema() as u:
        u.add_column("n", pa.string())
    assert faulty.pending_faults == 0
    assert t.refresh().schema().find_field("n")


def test_icefloe_schema_objects_are_accepted_by_union(table: Table) -> None:
    with table.update_schema() as u:
        u.union_by_name(Schema(NestedField(1, "id", LongType(), False), NestedField(2, "q", StringType())))
    s = table.schema()
    assert not s.find_field("id").required  # the explicit union relaxes (Java's unionByNameWith)
    assert s.find_field("q").field_id == 15


def test_source_of_an_older_partition_spec_can_be_deleted(catalog: InMemoryCatalog) -> None:
    """Like Java, a column only an older spec uses may be deleted; the files of that spec stay
    readable, prunable and deletable (the spec's partition type comes from the older schema)."""
    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.updates import AddPartitionSpec, SetDefaultSpec

    t = catalog.create_table(
        "ns.old", schema=pa.schema([("id", pa.int64()), ("cat", pa.string())]), partition_by=["cat"]
    )
    t.append(pa.table({"id": [1, 2], "cat": ["a", "b"]}))
    catalog.commit_table(t.identifier, [], [AddPartitionSpec(PartitionSpec(spec_id=1)), SetDefaultSpec(-1)])
    t.refresh()
    with t.update_schema() as u:
        u.delete_column("cat")
    t.refresh()
    assert t.schema().find_field_or_none(2) is None
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    assert t.scan(row_filter="id = 2").to_arrow().to_pylist() == [{"id": 2}]
    t.append(pa.table({"id": [3]}))
    t.delete("id = 1")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3]
