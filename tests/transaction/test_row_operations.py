"""Arrow row operations (delete, overwrite, upsert) against a pure-Python model of the table, in
copy-on-write and merge-on-read; bad inputs raise typed errors and leave the table unchanged."""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import ExpressionError, SchemaError, SchemaMismatchError, ValidationError
from icefloe.table import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string()), pa.field("v", pa.int64())]
)
MODES = ["copy-on-write", "merge-on-read"]
Row = tuple[int, str, int | None]


def _key(r: Row) -> tuple[int, str, bool, int]:
    return (r[0], r[1], r[2] is None, r[2] or 0)


def ordered(rs: Any) -> list[Row]:
    return sorted(rs, key=_key)


def arrow(rs: list[Row]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rs], pa.int64()),
            "part": pa.array([r[1] for r in rs], pa.string()),
            "v": pa.array([r[2] for r in rs], pa.int64()),
        },
        schema=SCHEMA,
    )


def table_rows(t: Table) -> list[Row]:
    return ordered((r["id"], r["part"], r["v"]) for r in t.refresh().scan().to_arrow().to_pylist())


def make(catalog: InMemoryCatalog, mode: str, initial: list[list[Row]], name: str = "t") -> Table:
    if not catalog.namespace_exists("db"):
        catalog.create_namespace("db")
    props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
    t = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=["part"], properties=props)
    for group in initial:
        if group:
            t.append(arrow(group))
    return t


INITIAL: list[list[Row]] = [
    [(1, "a", 10), (2, "a", None), (3, "b", 30)],
    [(4, "a", 40), (5, "b", None), (6, "c", 60)],
]

# (filter text, the same predicate in Python with Iceberg's semantics: a NULL value is never
# <, <=, =, > anything, and is != everything)
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    "=": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
}


def predicate(col: str, op: str, value: Any) -> tuple[str, Callable[[Row], bool]]:
    idx = {"id": 0, "part": 1, "v": 2}[col]
    text = f"{col} {op} {value!r}" if isinstance(value, str) else f"{col} {op} {value}"

    def py(r: Row) -> bool:
        x = r[idx]
        if x is None:
            return op == "!="
        return _OPS[op](x, value)

    return text, py


def model_delete(rows: list[Row], py: Callable[[Row], bool]) -> list[Row]:
    return ordered(r for r in rows if not py(r))


def model_upsert(rows: list[Row], new: list[Row]) -> list[Row]:
    keys = {r[0] for r in new}
    return ordered([r for r in rows if r[0] not in keys] + new)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("col", "op", "value"),
    [("id", "<", 3), ("id", "=", 4), ("v", ">", 20), ("v", "!=", 10), ("part", "=", "b"), ("id", ">", 100)],
)
def test_delete_matches_the_model(catalog: InMemoryCatalog, mode: str, col: str, op: str, value: Any) -> None:
    t = make(catalog, mode, INITIAL)
    text, py = predicate(col, op, value)
    before = table_rows(t)
    matching = ordered((r["id"], r["part"], r["v"]) for r in t.scan(text).to_arrow().to_pylist())
    assert matching == ordered(r for r in before if py(r))  # the model agrees with the scan
    snap = t.delete(text)
    assert table_rows(t) == model_delete(before, py)
    if model_delete(before, py) == before:
        assert snap is None  # nothing matched: no snapshot


@pytest.mark.parametrize("mode", MODES)
def test_merge_on_read_delete_writes_position_deletes_and_no_data(
    catalog: InMemoryCatalog, mode: str
) -> None:
    t = make(catalog, mode, INITIAL)
    snap = t.delete("id = 1")
    assert snap is not None
    s = snap.summary.properties
    if mode == "merge-on-read":
        assert snap.summary.operation.value == "delete"
        assert s["added-position-deletes"] == "1" and "added-data-files" not in s
    else:
        assert snap.summary.operation.value == "overwrite"
        assert s["added-data-files"] == "1" and "added-delete-files" not in s


@pytest.mark.parametrize("mode", MODES)
def test_overwrite_and_upsert_match_the_model(catalog: InMemoryCatalog, mode: str) -> None:
    t = make(catalog, mode, INITIAL)
    model = table_rows(t)
    text, py = predicate("v", ">", 35)
    new: list[Row] = [(7, "a", 1), (8, "d", None)]
    t.overwrite(arrow(new), text)
    model = ordered(model_delete(model, py) + new)
    assert table_rows(t) == model
    up: list[Row] = [(1, "b", 99), (8, "d", 5), (9, "a", 9)]
    t.upsert(arrow(up), ["id"])
    model = model_upsert(model, up)
    assert table_rows(t) == model
    t.overwrite(arrow([(100, "z", 0)]))  # full overwrite
    assert table_rows(t) == [(100, "z", 0)]


@pytest.mark.parametrize("mode", MODES)
def test_upsert_streams_its_input_and_uses_composite_keys(catalog: InMemoryCatalog, mode: str) -> None:
    t = make(catalog, mode, INITIAL)
    up: list[Row] = [(1, "a", -1), (1, "b", -2), (3, "b", -3)]
    batches = arrow(up).to_batches(max_chunksize=1)
    t.upsert(pa.RecordBatchReader.from_batches(arrow(up).schema, iter(batches)), ["id", "part"])
    expected = ordered(
        [r for g in INITIAL for r in g if (r[0], r[1]) not in {(1, "a"), (1, "b"), (3, "b")}] + up
    )
    assert table_rows(t) == expected


row_strategy = st.tuples(
    st.integers(0, 12), st.sampled_from(["a", "b"]), st.one_of(st.none(), st.integers(-5, 5))
)


@settings(max_examples=10, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    initial=st.lists(st.lists(row_strategy, max_size=6), min_size=1, max_size=3),
    ops=st.lists(
        st.one_of(
            st.tuples(
                st.just("delete"),
                st.sampled_from(["id", "v"]),
                st.sampled_from(["<", "=", ">", "!="]),
                st.integers(-3, 10),
            ),
            st.tuples(st.just("upsert"), st.lists(row_strategy, max_size=4, unique_by=lambda r: r[0])),
        ),
        max_size=4,
    ),
)
def test_random_row_operations_match_the_model(
    tmp_path_factory: pytest.TempPathFactory, mode: str, initial: list[list[Row]], ops: list[Any]
) -> None:
    wh: Path = tmp_path_factory.mktemp("wh")
    catalog = InMemoryCatalog("m", warehouse=wh.as_uri())
    t = make(catalog, mode, initial)
    model = ordered(r for g in initial for r in g)
    for op in ops:
        if op[0] == "delete":
            text, py = predicate(op[1], op[2], op[3])
            t.delete(text)
            model = model_delete(model, py)
        else:
            t.upsert(arrow(op[1]), ["id"])
            model = model_upsert(model, op[1]) if op[1] else model
        assert table_rows(t) == model


# ---------------------------------------------------------------- bad inputs
def _unchanged(
    catalog: InMemoryCatalog, t: Table, wh: Path, action: Callable[[], object], error: type
) -> None:
    before_snaps = [s.snapshot_id for s in t.snapshots()]
    before_files = {p for p in wh.rglob("*") if p.is_file()}
    with pytest.raises(error):
        action()
    fresh = catalog.load_table("db.t")
    assert [s.snapshot_id for s in fresh.snapshots()] == before_snaps
    assert {p for p in wh.rglob("*") if p.is_file()} == before_files


@pytest.mark.parametrize(
    ("action", "error"),
    [
        (lambda t: t.delete("nope = 1"), ExpressionError),
        (lambda t: t.delete("id = = 1"), ExpressionError),
        (lambda t: t.delete(42), ValidationError),
        (lambda t: t.overwrite(arrow([(1, "a", 1)]), "nope > 1"), ExpressionError),
        (lambda t: t.overwrite(pa.table({"x": [1]})), SchemaMismatchError),
        (lambda t: t.upsert(arrow([(1, "a", 1)]), ["nope"]), SchemaError),
        (lambda t: t.upsert(arrow([(1, "a", 1)]), []), ValidationError),
        (lambda t: t.upsert(arrow([(1, "a", 1)]), "id"), ValidationError),
        (lambda t: t.upsert(pa.table({"part": ["a"], "v": [1]}), ["id"]), SchemaError),
        (lambda t: t.upsert(arrow([(1, "a", 1), (1, "b", 2)]), ["id"]), ValidationError),
        (lambda t: t.upsert(pa.table({"id": [1], "part": [2], "v": [1]}), ["id"]), SchemaMismatchError),
        (lambda t: t.replace_partitions(pa.table({"x": [1]})), SchemaMismatchError),
    ],
)
def test_bad_input_raises_a_typed_error_and_changes_nothing(
    catalog: InMemoryCatalog, tmp_path: Path, action: Callable[[Table], object], error: type
) -> None:
    t = make(catalog, "copy-on-write", INITIAL)
    _unchanged(catalog, t, tmp_path / "warehouse", lambda: action(t), error)


def test_an_unknown_write_mode_is_a_config_error(catalog: InMemoryCatalog, tmp_path: Path) -> None:
    import dataclasses

    from icefloe.errors import ConfigError

    t = make(catalog, "copy-on-write", INITIAL)
    # Refused when set through icefloe...
    with pytest.raises(ConfigError, match="not a write mode"), t.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": "sometimes"})
    assert t.metadata.properties["write.delete.mode"] == "copy-on-write"
    # ...and when another engine put it into the metadata, refused by the delete, table unchanged.
    bad = {**t.metadata.properties, "write.delete.mode": "sometimes"}
    t.metadata = dataclasses.replace(t.metadata, properties=bad)
    _unchanged(catalog, t, tmp_path / "warehouse", lambda: t.delete("id = 1"), ConfigError)


def test_copy_on_write_after_merge_on_read_applies_and_drops_the_old_deletes(
    catalog: InMemoryCatalog,
) -> None:
    t = make(catalog, "merge-on-read", INITIAL)
    t.delete("id = 1")
    with t.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": "copy-on-write"})
    snap = t.delete("id = 2")  # rewrites the file holding ids 1 and 2: id 1 must stay deleted
    assert snap is not None
    assert table_rows(t) == [(3, "b", 30), (4, "a", 40), (5, "b", None), (6, "c", 60)]
    s = snap.summary.properties
    assert s["removed-delete-files"] == "1" and s["total-delete-files"] == "0"


@pytest.mark.parametrize("mode", MODES)
def test_row_operations_on_an_empty_table(catalog: InMemoryCatalog, mode: str) -> None:
    t = make(catalog, mode, [])
    assert t.delete("id = 1") is None
    assert t.current_snapshot() is None
    t.upsert(arrow([(1, "a", 1)]), ["id"])
    assert table_rows(t) == [(1, "a", 1)]
    t.upsert(arrow([(1, "a", 2)]), ["id"])
    assert table_rows(t) == [(1, "a", 2)]


# ---------------------------------------------------------------- other engines agree
def _interop() -> Any:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    import interop_support

    return interop_support


@pytest.mark.oracle
@pytest.mark.java
def test_iceberg_java_pyiceberg_duckdb_read_every_snapshot_of_row_operations(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Copy-on-write and merge-on-read deletes, upserts, an overwrite and a compaction keeping its
    sequence number: every snapshot must mean the model's rows to Iceberg Java (with its
    consistency check), PyIceberg and DuckDB."""
    sup = _interop()
    sup.require_oracle()
    wh = tmp_path_factory.mktemp("rowops_wh")
    catalog = InMemoryCatalog("m", warehouse=wh.as_uri())
    jobs = []
    for mode in MODES:
        t = make(catalog, mode, INITIAL, name=mode.replace("-", "_"))
        model = ordered(r for g in INITIAL for r in g)
        snapshots: dict[int, list[Row]] = {t.current_snapshot().snapshot_id: model}  # type: ignore[union-attr]

        def record(rows: list[Row], t: Table = t, snapshots: dict[int, list[Row]] = snapshots) -> None:
            snap = t.refresh().current_snapshot()
            assert snap is not None
            snapshots[snap.snapshot_id] = rows

        text, py = predicate("v", ">", 35)
        t.delete(text)
        model = model_delete(model, py)
        record(model)
        t.upsert(arrow([(1, "a", 11), (7, "b", 70)]), ["id"])
        model = model_upsert(model, [(1, "a", 11), (7, "b", 70)])
        record(model)
        t.delete("id = 3")
        model = model_delete(model, lambda r: r[0] == 3)
        record(model)
        t.overwrite(arrow([(8, "a", 80)]), "part = 'a'")
        model = ordered([r for r in model if r[1] != "a"] + [(8, "a", 80)])
        record(model)
        current = t.current_snapshot()
        assert current is not None
        schema_of = sup.schema_json(t.metadata_location, current.snapshot_id)
        jobs.append(
            sup.VerifyJob(
                name=f"rowops_{mode.replace('-', '_')}",
                metadata_location=t.metadata_location,
                current_snapshot_id=current.snapshot_id,
                snapshots={
                    sid: sup.checksum(schema_of, [{"id": r[0], "part": r[1], "v": r[2]} for r in rows])
                    for sid, rows in snapshots.items()
                },
            )
        )
    outcomes = sup.run_verify_batch(jobs, tmp_path_factory.mktemp("verify_rowops"))
    problems = [sup.format_outcome(o) for o in outcomes.values() if o.problems]
    assert not problems, "\n\n".join(problems)
