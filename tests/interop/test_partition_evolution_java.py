"""Partition evolution, icefloe against Iceberg Java 1.10.

1. The rules: ~50 scripted ``UpdatePartitionSpec`` sequences (Java's ``TestUpdatePartitionSpec``
   cases and more: default names, field ids, recycling of earlier specs' ids, nested sources,
   case-insensitive terms, and the refusals) are applied by icefloe's ``PartitionEvolution`` and
   by Java's ``table.updateSpec()...apply()`` to the same committed tables; the resulting specs
   (source ids, field ids, names, transforms) must be equal, and a change one side refuses the
   other must refuse too.
2. The same nine evolution steps, done by Spark SQL (``ALTER TABLE ... ADD / DROP / REPLACE
   PARTITION FIELD``) on a Java table and by ``table.update_spec()`` on an icefloe table in one
   shared SQLite catalog, with inserts and dynamic overwrites between them, give the same specs
   after every step (spec ids, field ids, names, transforms, default spec, last partition id) and
   the same rows, which equal a Python model of Java's ``ReplacePartitions``. Each side reads the
   other's table.
3. Iceberg Java, PyIceberg and DuckDB read every snapshot of two icefloe-evolved tables (one
   with copy-on-write and merge-on-read deletes, upserts and a dynamic overwrite across four
   specs) with the rows of the model; Java's metadata tables (``files``, ``entries``,
   ``partitions``, ...) agree with ``table.inspect`` row for row.
4. Java's reference table ``partition_evolution`` is evolved further by icefloe, appended to and
   deleted from; Java reads every snapshot, Java's old ones and icefloe's new ones.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import interop_support as sup
import pyarrow as pa
import pytest
from test_history_java import _compare

from icefloe.errors import IcefloeError
from icefloe.spec.partition_evolution import PartitionEvolution

CATALOG = "interop_pe"
NS = "pe"
UTC = dt.UTC

BASE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        ("data", pa.string()),
        ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("d", pa.date32()),
    ]
)

# ------------------------------------------------------------------ 1. replayed update sequences

Term = list[Any]


def text(t: Term) -> str:
    """A term as icefloe's human form."""
    if t[0] == "identity":
        return str(t[1])
    if t[0] in ("bucket", "truncate"):
        return f"{t[0]}({t[1]}, {t[2]})"
    return f"{t[0]}({t[1]})"


def add(t: Term, name: str | None = None) -> list[Any]:
    return ["add", t, name]


CATEGORY: Term = ["identity", "category"]
DAY: Term = ["day", "ts"]
HOUR: Term = ["hour", "ts"]
MONTH: Term = ["month", "ts"]
B16: Term = ["bucket", 16, "id"]
T4: Term = ["truncate", 4, "data"]

# base: "unpart" (no fields), "part" (Java's PARTITIONED: category, ts_day, shard=bucket[16](id)),
# "history" (earlier specs day(ts), hour(ts), hour(ts)+category, renamed hr+category; now category)
CASES: dict[str, tuple[str, list[list[Any]]]] = {
    "add_identity_by_name": ("unpart", [["add_identity", "category"]]),
    "add_identity_by_term": ("unpart", [add(CATEGORY)]),
    "add_year": ("unpart", [add(["year", "ts"])]),
    "add_month": ("unpart", [add(MONTH)]),
    "add_day": ("unpart", [add(DAY)]),
    "add_hour": ("unpart", [add(HOUR)]),
    "add_bucket": ("unpart", [add(B16)]),
    "add_truncate": ("unpart", [add(T4)]),
    "add_named": ("unpart", [add(B16, "shard")]),
    "add_date_month": ("unpart", [add(["month", "d"])]),
    "add_nested_bucket": ("unpart", [add(["bucket", 4, "s.a"])]),
    "add_nested_identity": ("unpart", [add(["identity", "s.b"])]),
    "multiple_adds": ("unpart", [add(CATEGORY), add(DAY), add(B16, "shard"), add(T4, "prefix")]),
    "name_is_the_source_column": ("unpart", [add(DAY, "ts")]),
    "name_is_another_column_refused": ("unpart", [add(HOUR, "data")]),
    "add_redundant_time_refused": ("unpart", [add(DAY), add(HOUR)]),
    "add_same_twice_refused": ("unpart", [add(T4, "prefix"), add(T4)]),
    "add_name_twice_refused": ("unpart", [add(T4, "prefix"), add(["truncate", 6, "data"], "prefix")]),
    "add_wrong_type_refused": ("unpart", [add(["day", "id"])]),
    "case_insensitive": (
        "unpart",
        [["case_insensitive"], add(["hour", "TS"]), add(["identity", "Category"])],
    ),
    "case_sensitive_refused": ("unpart", [add(["hour", "TS"])]),
    "remove_from_unpartitioned_refused": ("unpart", [["remove_name", "ts_day"]]),
    "add_to_existing": ("part", [add(T4)]),
    "add_hour_to_day": ("part", [add(HOUR)]),
    "add_second_bucket": ("part", [add(["bucket", 8, "id"])]),
    "remove_identity_by_name": ("part", [["remove_name", "category"]]),
    "remove_bucket_by_name": ("part", [["remove_name", "shard"]]),
    "remove_identity_by_term": ("part", [["remove_term", CATEGORY]]),
    "remove_day_by_term": ("part", [["remove_term", DAY]]),
    "remove_bucket_by_term": ("part", [["remove_term", B16]]),
    "remove_everything": (
        "part",
        [["remove_name", "category"], ["remove_name", "ts_day"], ["remove_name", "shard"]],
    ),
    "rename": ("part", [["rename", "shard", "id_bucket"]]),
    "swap_names": ("part", [["rename", "ts_day", "shard"], ["rename", "shard", "ts_day"]]),
    "swap_with_a_column_name_refused": (
        "part",
        [["rename", "ts_day", "category"], ["rename", "category", "ts_day"]],
    ),
    "multiple_changes": ("part", [["rename", "shard", "id_bucket"], ["remove_term", DAY], add(T4, "prefix")]),
    "remove_add_same_named": ("part", [["remove_name", "shard"], add(B16, "shard")]),
    "remove_add_same_unnamed": ("part", [["remove_name", "shard"], add(B16)]),
    "remove_add_same_new_name": ("part", [["remove_name", "shard"], add(B16, "new_shard")]),
    "remove_add_other_transform_same_name": (
        "part",
        [["remove_name", "shard"], add(["bucket", 8, "id"], "shard")],
    ),
    "remove_day_add_day_named": ("part", [["remove_term", DAY], add(DAY, "by_day")]),
    "remove_added_by_name_refused": ("part", [add(T4, "prefix"), ["remove_name", "prefix"]]),
    "remove_added_by_term_refused": ("part", [add(T4, "prefix"), ["remove_term", T4]]),
    "add_added_by_transform_refused": ("part", [add(T4, "prefix"), add(T4)]),
    "add_added_by_name_refused": ("part", [add(T4, "prefix"), add(["truncate", 6, "data"], "prefix")]),
    "add_redundant_time_2_refused": ("part", [add(HOUR), add(MONTH)]),
    "add_duplicate_by_name_refused": ("part", [["add_identity", "category"]]),
    "add_duplicate_by_ref_refused": ("part", [add(CATEGORY)]),
    "add_duplicate_transform_refused": ("part", [add(B16)]),
    "add_named_duplicate_refused": ("part", [add(B16, "b16")]),
    "add_existing_name_refused": ("part", [add(HOUR, "shard")]),
    "remove_unknown_name_refused": ("part", [["remove_name", "moon"]]),
    "remove_unknown_term_refused": ("part", [["remove_term", HOUR]]),
    "rename_unknown_refused": ("part", [["rename", "shake", "seal"]]),
    "rename_after_add_refused": ("part", [add(T4, "data_trunc"), ["rename", "data_trunc", "prefix"]]),
    "rename_and_delete_refused": ("part", [["rename", "shard", "id_bucket"], ["remove_term", B16]]),
    "delete_and_rename_refused": ("part", [["remove_term", B16], ["rename", "shard", "id_bucket"]]),
    "rename_to_existing_name_refused": ("part", [["rename", "shard", "ts_day"]]),
    "rename_to_other_column_refused": ("part", [["rename", "shard", "data"]]),
    "recycle_day": ("history", [add(DAY)]),
    "recycle_hour_named": ("history", [add(HOUR, "ts_hour")]),
    "recycle_hour_renamed_name": ("history", [add(HOUR, "hr")]),
    "recycle_hour_other_name": ("history", [add(HOUR, "x")]),
    "recycle_hour_unnamed": ("history", [add(HOUR)]),
    "recycle_replaces_identity": ("history", [["remove_name", "category"], add(DAY)]),
    "recycle_removed_and_added_back": ("history", [["remove_name", "category"], add(CATEGORY)]),
    "new_bucket_after_history": ("history", [add(["bucket", 8, "id"])]),
}
# Java picks among several earlier fields with the same source and transform in hash-set order
# (here field 1001 was "ts_hour" in one spec and "hr" in another); icefloe takes the newest
# spec's. Both recycle the same field id.
JAVA_UNDEFINED_NAME = {"recycle_hour_unnamed"}


def icefloe_replay(md: Any, ops: list[list[Any]]) -> dict[str, Any]:
    try:
        evo = PartitionEvolution(
            md.spec(),
            md.schema(),
            md.last_partition_id,
            md.partition_specs,
            format_version=md.format_version,
            case_sensitive=not any(op[0] == "case_insensitive" for op in ops),
        )
        for op in ops:
            kind, args = op[0], op[1:]
            if kind == "add":
                evo.add_field(text(args[0]), args[1])
            elif kind == "add_identity":
                evo.add_identity(args[0])
            elif kind in ("remove_name", "remove_term"):
                evo.remove_field(args[0] if kind == "remove_name" else text(args[0]))
            elif kind == "rename":
                evo.rename_field(args[0], args[1])
        spec = evo.apply()
    except IcefloeError as e:
        return {"fields": None, "error": f"{type(e).__name__}: {e}"}
    return {
        "fields": [[f.source_id, f.field_id, f.name, str(f.transform)] for f in spec.fields],
        "error": None,
    }


def _base_tables(cat: Any) -> dict[str, Any]:
    unpart = cat.create_table(f"{NS}.base_unpart", schema=BASE_SCHEMA)
    part = cat.create_table(
        f"{NS}.base_part", schema=BASE_SCHEMA, partition_by=["category", "day(ts)", "bucket(16, id)"]
    )
    with part.update_spec() as u:
        u.rename_field("id_bucket", "shard")
    history = cat.create_table(f"{NS}.base_history", schema=BASE_SCHEMA, partition_by=["day(ts)"])
    for change in (
        lambda u: u.remove_field("ts_day").add_field("hour(ts)"),
        lambda u: u.add_identity("category"),
        lambda u: u.rename_field("ts_hour", "hr"),
        lambda u: u.remove_field("hr"),
    ):
        with history.update_spec() as u:
            change(u)
    assert [f.name for f in history.spec().fields] == ["category"]
    return {"unpart": unpart, "part": part, "history": history}


# ------------------------------------------------------------------ the model of the rows

EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def _us(t: dt.datetime) -> int:
    return (t - EPOCH) // dt.timedelta(microseconds=1)


def partition_of(t: Any, spec_id: int, row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's partition under spec ``spec_id``, for the transforms these tests use."""
    out: list[Any] = []
    for f in t.metadata.spec_by_id(spec_id).fields:
        value = row[t.schema().column_name(f.source_id)]
        kind = str(f.transform)
        if kind == "identity":
            out.append(value)
        elif kind in ("day", "hour"):
            out.append(_us(value) // (86_400_000_000 if kind == "day" else 3_600_000_000))
        elif kind.startswith("truncate["):
            out.append(value[: int(kind[9:-1])])
        else:  # pragma: no cover
            raise AssertionError(f"the model has no {kind} transform")
    return tuple(out)


@dataclasses.dataclass
class Model:
    """id -> (row, spec id it was written under); rows of every snapshot."""

    table: Any
    rows: dict[int, tuple[dict[str, Any], int]] = dataclasses.field(default_factory=dict)
    snapshots: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def current(self) -> list[dict[str, Any]]:
        return sorted((r for r, _ in self.rows.values()), key=lambda r: r["id"])

    def record(self) -> None:
        self.table.refresh()
        snap = self.table.current_snapshot()
        self.snapshots[snap.snapshot_id] = self.current()

    def added(self, rows: list[dict[str, Any]]) -> None:
        spec = self.table.metadata.default_spec_id
        for r in rows:
            self.rows[r["id"]] = (r, spec)

    def replaced(self, rows: list[dict[str, Any]]) -> None:
        """Java's ReplacePartitions: the rows of the new files' spec in the partitions they touch
        go (every row, if that spec is unpartitioned); rows of other specs stay."""
        t = self.table
        spec = t.metadata.default_spec_id
        touched = {partition_of(t, spec, r) for r in rows}
        everything = t.spec().is_unpartitioned()
        self.rows = {
            k: (r, s)
            for k, (r, s) in self.rows.items()
            if not (everything or (s == spec and partition_of(t, spec, r) in touched))
        }
        self.added(rows)

    def removed(self, pred: Callable[[dict[str, Any]], bool]) -> None:
        self.rows = {k: (r, s) for k, (r, s) in self.rows.items() if not pred(r)}


# ------------------------------------------------------------------ 2. the same steps in Spark SQL

STEP_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("category", pa.string()),
        ("data", pa.string()),
    ]
)


def step_rows(start: int, n: int) -> list[dict[str, Any]]:
    base = dt.datetime(2024, 3, 1, tzinfo=UTC)
    return [
        {
            "id": i,
            "ts": base + dt.timedelta(hours=(i * 7) % 50, minutes=i % 60),
            "category": "abc"[i % 3],
            "data": f"{'xyz'[i % 3]}{i % 4}-{i}",
        }
        for i in range(start, start + n)
    ]


def again(rows: list[dict[str, Any]], offset: int) -> list[dict[str, Any]]:
    """Rows in the same partitions as ``rows`` under new ids."""
    return [{**r, "id": r["id"] + offset} for r in rows]


def sql_values(rows: list[dict[str, Any]]) -> str:
    return ", ".join(
        f"({r['id']}, TIMESTAMP '{r['ts'].strftime('%Y-%m-%d %H:%M:%S')}', '{r['category']}', '{r['data']}')"
        for r in rows
    )


R = {k: step_rows(k, 6) for k in range(0, 100, 10)}
# (Spark SQL statements, icefloe update blocks, data actions); {t} is the Java table's name
STEPS: list[tuple[list[str], list[list[tuple[Any, ...]]], list[tuple[str, list[dict[str, Any]]]]]] = [
    ([], [], [("append", R[0])]),
    (
        ["ALTER TABLE {t} REPLACE PARTITION FIELD days(ts) WITH hours(ts)"],
        [[("remove_field", "day(ts)"), ("add_field", "hour(ts)")]],
        [("append", R[10])],
    ),
    (
        [
            "ALTER TABLE {t} ADD PARTITION FIELD bucket(16, id) AS shard",
            "ALTER TABLE {t} ADD PARTITION FIELD category",
        ],
        [[("add_field", "bucket(16, id)", "shard")], [("add_identity", "category")]],
        [("append", R[20])],
    ),
    (
        ["ALTER TABLE {t} ADD PARTITION FIELD truncate(4, data)"],
        [[("add_field", "truncate(4, data)")]],
        [("append", R[30])],
    ),
    (
        ["ALTER TABLE {t} DROP PARTITION FIELD shard", "ALTER TABLE {t} DROP PARTITION FIELD hours(ts)"],
        [[("remove_field", "shard")], [("remove_field", "hour(ts)")]],
        [("append", R[40]), ("overwrite", again(R[40][:2] + R[30][:2], 100))],
    ),
    (
        ["ALTER TABLE {t} ADD PARTITION FIELD hours(ts)"],  # field 1001 comes back
        [[("add_field", "hour(ts)")]],
        [("append", R[50]), ("overwrite", again(R[50][:3], 100))],
    ),
    (
        ["ALTER TABLE {t} REPLACE PARTITION FIELD data_trunc_4 WITH truncate(2, data) AS prefix"],
        [[("remove_field", "data_trunc_4"), ("add_field", "truncate(2, data)", "prefix")]],
        [("append", R[60])],
    ),
    (
        [
            "ALTER TABLE {t} DROP PARTITION FIELD category",
            "ALTER TABLE {t} DROP PARTITION FIELD hours(ts)",
            "ALTER TABLE {t} DROP PARTITION FIELD prefix",
        ],
        [[("remove_field", "category")], [("remove_field", "hour(ts)")], [("remove_field", "prefix")]],
        [("append", R[70]), ("overwrite", again(R[70][:2], 100))],  # unpartitioned: replaces everything
    ),
    (["ALTER TABLE {t} ADD PARTITION FIELD days(ts)"], [[("add_field", "day(ts)")]], [("append", R[80])]),
]


def _spec_state(t: Any) -> dict[str, Any]:
    md = t.metadata
    return {
        "specs": {str(s.spec_id): s.to_json() for s in md.partition_specs},
        "default_spec_id": md.default_spec_id,
        "last_partition_id": md.last_partition_id,
    }


def _java_steps(java_table: str) -> list[list[str]]:
    out = []
    for i, (sqls, _, actions) in enumerate(STEPS):
        stmts = [s.format(t=f"{CATALOG}.{java_table}") for s in sqls]
        if i == 0:
            stmts = [
                f"CREATE TABLE {CATALOG}.{java_table} (id bigint NOT NULL, ts timestamp, category string, "
                "data string) USING iceberg PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2')"
            ]
        for kind, rows in actions:
            verb = "INSERT INTO" if kind == "append" else "INSERT OVERWRITE"
            stmts.append(f"{verb} {CATALOG}.{java_table} VALUES {sql_values(rows)}")
        out.append(stmts)
    return out


def _build_steps(cat: Any) -> tuple[Model, list[dict[str, Any]]]:
    t = cat.create_table(f"{NS}.ice_steps", schema=STEP_SCHEMA, partition_by=["day(ts)"])
    m = Model(t)
    states = []
    for _, blocks, actions in STEPS:
        for block in blocks:
            with t.update_spec() as u:
                for method, *args in block:
                    getattr(u, method)(*args)
        for kind, rows in actions:
            data = pa.Table.from_pylist(rows, schema=STEP_SCHEMA)
            if kind == "append":
                t.append(data)
                m.added(rows)
            else:
                m.replaced(rows)
                t.replace_partitions(data)
            m.record()
        states.append(_spec_state(t))
    return m, states


# ------------------------------------------------------------------ 3. a table with row-level changes

RICH_SCHEMA = STEP_SCHEMA


def _in(column: str, values: list[int]) -> str:
    return f"{column} in ({', '.join(str(v) for v in sorted(values))})"


def _build_rich(cat: Any) -> Model:
    t = cat.create_table(f"{NS}.ice_rich", schema=RICH_SCHEMA, partition_by=["day(ts)"])
    m = Model(t)

    def append(rows: list[dict[str, Any]]) -> None:
        t.append(pa.Table.from_pylist(rows, schema=RICH_SCHEMA))
        m.added(rows)
        m.record()

    def delete(ids: list[int]) -> None:
        t.delete(_in("id", ids))
        m.removed(lambda r: r["id"] in ids)
        m.record()

    def upsert(rows: list[dict[str, Any]]) -> None:
        t.upsert(pa.Table.from_pylist(rows, schema=RICH_SCHEMA), ["id"])
        m.added(rows)
        m.record()

    append(step_rows(0, 12))
    with t.update_spec() as u:
        u.remove_field("ts_day").add_field("hour(ts)")
    append(step_rows(100, 12))
    with t.update_spec() as u:
        u.add_identity("category")
    append(step_rows(200, 12))
    delete([1, 5, 101, 106, 202, 207])  # copy-on-write, files of three specs
    with t.update_spec() as u:
        u.remove_field("hour(ts)").add_field("truncate(2, data)")
    append(step_rows(300, 12))
    with t.transaction() as tx:
        tx.set_properties(**{"write.delete.mode": "merge-on-read", "write.merge.mode": "merge-on-read"})
    delete([2, 103, 204, 301, 305])  # position deletes, each with its data file's spec and partition
    upsert([{**r, "data": r["data"] + "!"} for r in step_rows(3, 1) + step_rows(108, 1) + step_rows(303, 1)])
    upsert(step_rows(400, 2))
    rows = again(step_rows(300, 3), 200)  # partitions of spec 3 that hold rows 300..302
    m.replaced(rows)
    t.replace_partitions(pa.Table.from_pylist(rows, schema=RICH_SCHEMA))
    m.record()
    with t.update_spec() as u:
        u.rename_field("data_trunc_2", "prefix")
    append(step_rows(600, 3))
    return m


# ------------------------------------------------------------------ 4. Java's reference table

REF_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("dt", pa.date32()),
        ("v", pa.float64()),
        ("cat", pa.string()),
    ]
)


@dataclasses.dataclass
class Reference:
    model: Model
    base_snapshots: dict[int, tuple[int, str]]
    table_dir: str
    untouched: list[str]


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def _build_reference(cat: Any, reference_tables: Path, scratch: Path) -> Reference:
    expected = json.loads((reference_tables / "expected" / "hcat.ref.partition_evolution.json").read_text())
    table_dir = str(Path(expected["metadata_location"]).parent.parent)
    untouched = _listing(Path(table_dir))
    t = cat.register_table(f"{NS}.ref_partition_evolution", Path(expected["metadata_location"]).as_uri())
    with t.transaction() as tx:  # everything icefloe writes goes to scratch
        tx.set_properties(
            **{
                "write.metadata.path": (scratch / "metadata").as_uri(),
                "write.data.path": (scratch / "data").as_uri(),
            }
        )
    base = {int(k): (v["row_count"], v["checksum"]) for k, v in expected["snapshots"].items()}
    current = t.current_snapshot().snapshot_id
    rows = t.scan().to_arrow().to_pylist()
    assert sup.checksum(sup.schema_json(t.metadata_location, current), rows) == base[current]
    m = Model(t)
    for r in rows:
        m.rows[r["id"]] = (r, -1)
    with t.update_spec() as u:
        u.remove_field("ts_hour").add_field("bucket(4, id)")
    start = dt.datetime(2024, 5, 1, tzinfo=UTC)
    new = [
        {
            "id": 10_000 + i,
            "s": f"ice{i}",
            "ts": start + dt.timedelta(hours=9 * i),
            "dt": dt.date(2024, 5, 1 + i),
            "v": i / 4,
            "cat": "c" + "xyz"[i % 3],
        }
        for i in range(6)
    ]
    t.append(pa.Table.from_pylist(new, schema=REF_SCHEMA))
    m.added(new)
    m.record()
    gone = [*sorted(r["id"] for r in rows if r["id"] % 7 == 3)[:6], 10_001, 10_004]
    t.delete(_in("id", gone))  # copy-on-write across Java's three specs and icefloe's
    m.removed(lambda r: r["id"] in gone)
    m.record()
    return Reference(m, base, table_dir, untouched)


# ------------------------------------------------------------------ fixtures


@dataclasses.dataclass
class World:
    cat: Any
    db: Path
    warehouse: Path
    case_results: dict[str, dict[str, Any]]
    case_metadata: dict[str, str]
    steps_model: Model | None
    steps_states: list[dict[str, Any]]
    rich: Model | None
    errors: list[str]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("partition_evolution_java")
    db, wh = root / "catalog.db", root / "warehouse"
    wh.mkdir()
    cat = sup.icefloe_catalog(CATALOG, db, wh)
    cat.create_namespace(NS)
    bases = _base_tables(cat)
    results = {key: icefloe_replay(bases[base].metadata, ops) for key, (base, ops) in CASES.items()}
    errors: list[str] = []
    steps_model, states, rich = None, [], None
    try:
        steps_model, states = _build_steps(cat)
    except Exception:
        errors.append(traceback.format_exc())
    try:
        rich = _build_rich(cat)
    except Exception:
        errors.append(traceback.format_exc())
    metadata = {key: bases[base].metadata_location for key, (base, _) in CASES.items()}
    return World(cat, db, wh, results, metadata, steps_model, states, rich, errors)


@pytest.fixture(scope="module")
def reference(world: World, reference_tables: Path, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return _build_reference(world.cat, reference_tables, tmp_path_factory.mktemp("ref_scratch"))


@pytest.fixture(scope="module")
def java(world: World, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sup.require_oracle()
    work = tmp_path_factory.mktemp("java_partition_evolution")
    spec = {
        "db": str(world.db),
        "catalog": CATALOG,
        "warehouse": str(world.warehouse),
        "cases": [
            {"key": k, "metadata": sup.local_path(world.case_metadata[k]), "ops": ops}
            for k, (_, ops) in CASES.items()
        ],
        "steps": _java_steps(f"{NS}.java_steps"),
        "step_table": f"{NS}.java_steps",
        "tables": [f"{NS}.java_steps", f"{NS}.ice_steps", f"{NS}.ice_rich"],
        "scans": [
            {
                "key": "rich_hour",
                "table": f"{NS}.ice_rich",
                "where": "ts >= '2024-03-02 04:00:00' and ts < '2024-03-02 05:00:00'",
            },
            {"key": "rich_cat", "table": f"{NS}.ice_rich", "where": "category = 'b' and data like 'y%'"},
        ],
    }
    (work / "spec.json").write_text(json.dumps(spec))
    script = Path(__file__).with_name("java_partition_evolution.py")
    proc = sup.run_oracle_script([str(script), str(work / "spec.json"), str(work / "out.json")])
    if not (work / "out.json").exists():
        raise AssertionError(
            f"java_partition_evolution failed ({proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    out: dict[str, Any] = json.loads((work / "out.json").read_text())
    return out


METADATA_TABLES = (
    "manifests",
    "files",
    "entries",
    "partitions",
    "delete_files",
    "all_entries",
    "position_deletes",
)


@pytest.fixture(scope="module")
def java_metadata(world: World, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sup.require_oracle()
    work = tmp_path_factory.mktemp("java_pe_metadata")
    spec = {
        "db": str(world.db),
        "catalog": CATALOG,
        "warehouse": str(world.warehouse),
        "metadata_tables": [[f"{NS}.{t}", n] for t in ("ice_rich", "ice_steps") for n in METADATA_TABLES],
    }
    (work / "spec.json").write_text(json.dumps(spec))
    script = Path(__file__).with_name("java_history_dump.py")
    proc = sup.run_oracle_script([str(script), str(work / "spec.json"), str(work / "out.json")])
    if not (work / "out.json").exists():
        raise AssertionError(f"java_history_dump failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads((work / "out.json").read_text())
    return out


def _expected(m: Model) -> dict[int, tuple[int, str]]:
    loc = m.table.metadata_location
    return {sid: sup.checksum(sup.schema_json(loc, sid), rows) for sid, rows in m.snapshots.items()}


@pytest.fixture(scope="module")
def verified(
    world: World, reference: Reference, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, sup.VerifyOutcome]:
    sup.require_oracle()
    jobs = []
    for name, m in (("ice_steps", world.steps_model), ("ice_rich", world.rich)):
        if m is None:
            continue
        m.table.refresh()
        jobs.append(
            sup.VerifyJob(
                name=name,
                metadata_location=m.table.metadata_location,
                current_snapshot_id=m.table.current_snapshot().snapshot_id,
                snapshots=_expected(m),
            )
        )
    ref = reference.model.table.refresh()
    jobs.append(
        sup.VerifyJob(
            name="ref_partition_evolution",
            metadata_location=ref.metadata_location,
            current_snapshot_id=ref.current_snapshot().snapshot_id,
            snapshots={**reference.base_snapshots, **_expected(reference.model)},
        )
    )
    return sup.run_verify_batch(jobs, tmp_path_factory.mktemp("verify_partition_evolution"))


# ------------------------------------------------------------------ icefloe alone


def test_icefloe_built_every_table(world: World) -> None:
    assert not world.errors, "\n".join(world.errors)


def test_icefloe_reads_every_snapshot_as_the_model_says(world: World) -> None:
    for m in (world.steps_model, world.rich):
        assert m is not None
        for sid, want in m.snapshots.items():
            got = sorted(m.table.scan(snapshot_id=sid).to_arrow().to_pylist(), key=lambda r: r["id"])
            assert got == want, sid


def test_icefloe_reads_and_evolves_javas_reference_table(reference: Reference) -> None:
    t = reference.model.table
    for sid, want in reference.model.snapshots.items():
        got = sorted(t.scan(snapshot_id=sid).to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == want, sid
    assert [[f.name for f in s.fields] for s in t.metadata.partition_specs] == [
        ["ts_day"],
        ["ts_hour"],
        ["ts_hour", "cat"],
        ["cat", "id_bucket_4"],
    ]
    assert [f.field_id for f in t.spec().fields] == [1002, 1003]
    # everything icefloe wrote went to the scratch directory: the shared reference table is as it was
    assert reference.untouched == _listing(Path(reference.table_dir))


# ------------------------------------------------------------------ against Iceberg Java


@pytest.mark.oracle
@pytest.mark.java
def test_java_ran_without_errors(java: dict[str, Any]) -> None:
    assert java["errors"] == []


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("case", list(CASES))
def test_update_spec_agrees_with_java(world: World, java: dict[str, Any], case: str) -> None:
    ours, theirs = world.case_results[case], java["cases"][case]
    if theirs["error"] is not None or ours["error"] is not None:
        assert (ours["error"] is None) == (theirs["error"] is None), (
            f"icefloe: {ours['error'] or ours['fields']}\nJava: {theirs['error'] or theirs['fields']}"
        )
        assert case.endswith("_refused"), (
            f"{case}: both refused\nicefloe: {ours['error']}\nJava: {theirs['error']}"
        )
        return
    assert not case.endswith("_refused"), f"{case}: both accepted a change meant to be refused"
    if case in JAVA_UNDEFINED_NAME:
        assert [f[:2] + f[3:] for f in ours["fields"]] == [f[:2] + f[3:] for f in theirs["fields"]]
        return
    assert ours["fields"] == theirs["fields"]


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("step", range(len(STEPS)))
def test_spark_sql_evolution_gives_the_same_specs(world: World, java: dict[str, Any], step: int) -> None:
    theirs = java["steps"][step]
    assert theirs is not None, java["errors"]
    assert world.steps_states[step] == theirs


@pytest.mark.oracle
@pytest.mark.java
def test_both_tables_hold_the_models_rows(world: World, java: dict[str, Any]) -> None:
    """Java's dynamic overwrites after evolution replace what the model of ReplacePartitions says,
    and each side reads the other's table."""
    m = world.steps_model
    assert m is not None
    want = [{**r, "ts": _us(r["ts"])} for r in m.current()]

    def norm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(rows, key=lambda r: r["id"])

    assert norm(java["tables"][f"{NS}.java_steps"]["rows"]) == want
    assert norm(java["tables"][f"{NS}.ice_steps"]["rows"]) == want
    java_table = world.cat.load_table(f"{NS}.java_steps")
    assert [[f.name for f in s.fields] for s in java_table.metadata.partition_specs] == [
        [f.name for f in s.fields] for s in m.table.metadata.partition_specs
    ]
    ours = norm(java_table.scan().to_arrow().to_pylist())
    assert [{**r, "ts": _us(r["ts"])} for r in ours] == want


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("table", ["ice_steps", "ice_rich"])
def test_java_parses_our_specs(world: World, java: dict[str, Any], table: str) -> None:
    theirs = java["tables"][f"{NS}.{table}"]
    t = world.cat.load_table(f"{NS}.{table}")
    assert {k: v for k, v in theirs.items() if k != "rows"} == _spec_state(t)


@pytest.mark.oracle
@pytest.mark.java
def test_java_prunes_and_filters_like_the_model(world: World, java: dict[str, Any]) -> None:
    m = world.rich
    assert m is not None
    lo, hi = dt.datetime(2024, 3, 2, 4, tzinfo=UTC), dt.datetime(2024, 3, 2, 5, tzinfo=UTC)
    assert java["scans"]["rich_hour"] == [r["id"] for r in m.current() if lo <= r["ts"] < hi]
    assert java["scans"]["rich_cat"] == [
        r["id"] for r in m.current() if r["category"] == "b" and r["data"].startswith("y")
    ]
    ours = m.table.scan(row_filter="category = 'b' and data like 'y%'").to_arrow().column("id").to_pylist()
    assert sorted(ours) == java["scans"]["rich_cat"]


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("name", ["ice_steps", "ice_rich", "ref_partition_evolution"])
def test_java_pyiceberg_duckdb_read_every_snapshot(verified: dict[str, sup.VerifyOutcome], name: str) -> None:
    outcome = verified.get(name)
    assert outcome is not None, f"{name} was not written"
    assert not outcome.problems, sup.format_outcome(outcome)


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("table", ["ice_rich", "ice_steps"])
@pytest.mark.parametrize("name", METADATA_TABLES)
def test_metadata_tables_agree_with_java(
    world: World, java_metadata: dict[str, Any], table: str, name: str
) -> None:
    theirs = java_metadata["metadata_tables"].get(f"{NS}.{table}.{name}")
    assert theirs is not None, f"Java could not read {table}.{name}: {java_metadata['errors']}"
    ours = world.cat.load_table(f"{NS}.{table}").inspect.table(name)
    assert ours.column_names == theirs["columns"], (ours.column_names, theirs["columns"])
    _compare(ours, theirs, f"{table}.{name}")
