"""Sort orders: agreement with Iceberg Java 1.10.

* The same sequence of orders, given to Spark SQL's ``ALTER TABLE ... WRITE ORDERED BY`` (Java)
  and to ``table.replace_sort_order`` (icefloe) on tables with the same schema, gives the same
  sort orders after every step: the default order's id, every field's transform, source column,
  direction and null order, and the same set of orders (ids reused for a repeated order, 0 for
  ``WRITE UNORDERED``).
* A sorted, partitioned table that icefloe wrote in several appends is read by Iceberg Java,
  PyIceberg and DuckDB at every snapshot with the rows written, Java's consistency check passes,
  and Java's ``files`` metadata table shows each file's ``sort_order_id``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import functools
import json
import math
import random
from pathlib import Path
from typing import Any

import interop_support as sup
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

CATALOG = "interop_sort"
NS = "so"

# Spark SQL's column list and the same schema in Arrow (icefloe assigns the same field ids).
CREATE = "id bigint, ts timestamp, name string, price double, amount decimal(9,2), st struct<city: string>"
ARROW = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("name", pa.string()),
        ("price", pa.float64()),
        ("amount", pa.decimal128(9, 2)),
        ("st", pa.struct([("city", pa.string())])),
    ]
)
STEPS = [
    "id",
    "days(ts) DESC NULLS LAST, bucket(16, id)",
    "name DESC, truncate(4, name) ASC NULLS LAST",
    "id",  # the same order again: its id is reused
    "",  # WRITE UNORDERED
    "st.city DESC NULLS FIRST, hours(ts), years(ts), months(ts)",
    "amount, truncate(10, amount) DESC, price NULLS LAST",
    "bucket(8, st.city) DESC NULLS FIRST, id ASC",
    "days(ts) DESC NULLS LAST, bucket(16, id)",
]


def split_terms(step: str) -> list[str]:
    """``"a, bucket(16, b) desc"`` -> ``["a", "bucket(16, b) desc"]`` (commas inside calls stay)."""
    terms, depth, current = [], 0, ""
    for ch in step:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        terms.append(current.strip())
    return terms


def by_name(order: dict[str, Any], columns: dict[str, str]) -> dict[str, Any]:
    """A sort order's JSON with each source id replaced by the column's name."""
    return {
        "order-id": order["order-id"],
        "fields": [
            {
                "transform": f["transform"],
                "column": columns[str(f["source-id"])],
                "direction": f["direction"],
                "null-order": f["null-order"],
            }
            for f in order["fields"]
        ],
    }


@dataclasses.dataclass
class World:
    db: Path
    warehouse: Path
    icefloe_steps: list[dict[str, Any]]
    icefloe_columns: dict[str, str]
    sorted_name: str = f"{NS}.sorted"
    batches: list[pa.Table] = dataclasses.field(default_factory=list)
    snapshot_ids: list[int] = dataclasses.field(default_factory=list)
    metadata_location: str = ""
    files: dict[str, int] = dataclasses.field(default_factory=dict)


def _random_rows(n: int, seed: int) -> pa.Table:
    rnd = random.Random(seed)
    start = dt.datetime(2024, 5, 30, tzinfo=dt.UTC)
    return pa.table(
        {
            "id": [rnd.choice([None, rnd.randint(0, 10_000)]) for _ in range(n)],
            "ts": pa.array(
                [
                    rnd.choice([None, start + dt.timedelta(minutes=rnd.randint(0, 5 * 1440))])
                    for _ in range(n)
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "name": [rnd.choice([None, "ann", "bob", "cy", "dee", "éva"]) for _ in range(n)],
            "price": [rnd.choice([None, float("nan"), -1.5, 0.0, 2.25, float("inf")]) for _ in range(n)],
            "amount": pa.array(
                [rnd.choice([None, decimal.Decimal(rnd.randint(-9999, 9999)).scaleb(-2)]) for _ in range(n)],
                pa.decimal128(9, 2),
            ),
            "st": [rnd.choice([None, {"city": rnd.choice([None, "Oslo", "Lyon"])}]) for _ in range(n)],
        },
        schema=ARROW,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("sort_order_java")
    db, wh = root / "catalog.db", root / "warehouse"
    wh.mkdir()
    cat = sup.icefloe_catalog(CATALOG, db, wh)
    cat.create_namespace(NS)
    t = cat.create_table(f"{NS}.icefloe_steps", schema=ARROW)
    steps = []
    for step in STEPS:
        terms = split_terms(step)
        order = t.replace_sort_order(*terms) if terms else t.replace_sort_order().commit()
        steps.append(
            {
                "default": order.to_json(),
                "orders": {str(o.order_id): o.to_json() for o in t.metadata.sort_orders},
            }
        )
    columns = {str(fid): t.schema().column_name(fid) for fid in t.schema().field_ids()}
    w = World(db, wh, steps, columns)
    # a sorted, partitioned table written in three appends
    s = cat.create_table(
        w.sorted_name,
        schema=ARROW,
        partition_by=["bucket(2, id)"],
        properties={"write.target-file-size-bytes": "6000"},
    )
    s.replace_sort_order("name desc nulls first", "price desc", "id")
    for seed in range(3):
        batch = _random_rows(700, seed)
        s.append(batch)
        w.batches.append(batch)
        snap = s.current_snapshot()
        assert snap is not None
        w.snapshot_ids.append(snap.snapshot_id)
    w.metadata_location = s.metadata_location
    w.files = {task.file.file_path: task.file.sort_order_id for task in s.scan().plan_files()}
    return w


@pytest.fixture(scope="module")
def java(world: World, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sup.require_oracle()
    work = tmp_path_factory.mktemp("java_sort_order")
    spec = {
        "db": str(world.db),
        "catalog": CATALOG,
        "warehouse": str(world.warehouse),
        "table": f"{NS}.java_steps",
        "create": CREATE,
        "steps": STEPS,
        "files_of": [world.sorted_name],
    }
    (work / "spec.json").write_text(json.dumps(spec))
    script = Path(__file__).with_name("java_sort_order.py")
    proc = sup.run_oracle_script([str(script), str(work / "spec.json"), str(work / "out.json")])
    if not (work / "out.json").exists():
        raise AssertionError(
            f"java_sort_order failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    out: dict[str, Any] = json.loads((work / "out.json").read_text())
    return out


@pytest.fixture(scope="module")
def verified(world: World, tmp_path_factory: pytest.TempPathFactory) -> sup.VerifyOutcome:
    sup.require_oracle()
    expected = {}
    for k, sid in enumerate(world.snapshot_ids):
        rows = [r for b in world.batches[: k + 1] for r in sup.arrow_rows(b)]
        expected[sid] = sup.checksum(sup.schema_json(world.metadata_location, sid), rows)
    job = sup.VerifyJob(
        name="icefloe_sorted",
        metadata_location=world.metadata_location,
        current_snapshot_id=world.snapshot_ids[-1],
        snapshots=expected,
    )
    return sup.run_verify_batch([job], tmp_path_factory.mktemp("verify_sorted"))["icefloe_sorted"]


# ------------------------------------------------------------------ icefloe alone


def test_icefloe_files_are_sorted(world: World) -> None:
    """Each file of the sorted table is in the order (name desc nulls first, price desc: NaN
    first and nulls last, then id), read back with pyarrow."""
    assert set(world.files.values()) == {1}
    assert len(world.files) > 6
    for path in world.files:
        rows = pq.read_table(sup.local_path(path)).to_pylist()
        assert rows == sorted(rows, key=functools.cmp_to_key(_compare)), path


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _compare(x: dict[str, Any], y: dict[str, Any]) -> int:
    a, b = x["name"], y["name"]
    if (a is None) != (b is None):
        return -1 if a is None else 1  # nulls first
    if a is not None and a != b:
        return -_cmp(a, b)  # descending (code point order, as UTF-8 bytes)

    def price(v: float | None) -> tuple[int, float]:  # descending: NaN, then values, then nulls
        if v is None:
            return (2, 0.0)
        return (0, 0.0) if math.isnan(v) else (1, -v)

    c = _cmp(price(x["price"]), price(y["price"]))
    if c:
        return c
    return _cmp((x["id"] is not None, x["id"] or 0), (y["id"] is not None, y["id"] or 0))


# ------------------------------------------------------------------ Java agreement


@pytest.mark.oracle
@pytest.mark.java
def test_java_ran_without_errors(java: dict[str, Any]) -> None:
    assert not java["errors"], "\n".join(java["errors"])
    assert [s["step"] for s in java["steps"]] == STEPS
    failed = [s for s in java["steps"] if s.get("error")]
    assert not failed, failed


@pytest.mark.oracle
@pytest.mark.java
@pytest.mark.parametrize("k", range(len(STEPS)), ids=[s or "UNORDERED" for s in STEPS])
def test_write_ordered_by_agrees_with_replace_sort_order(world: World, java: dict[str, Any], k: int) -> None:
    """After step k, Java's default sort order and all its orders equal icefloe's (by column
    name; the schemas' ids agree as well)."""
    theirs = java["steps"][k]
    assert theirs.get("error") is None, theirs
    ours = world.icefloe_steps[k]
    assert theirs["columns"] == world.icefloe_columns
    assert by_name(ours["default"], world.icefloe_columns) == by_name(theirs["default"], theirs["columns"])
    assert ours["default"] == theirs["default"]  # the raw JSON too: same source ids
    assert ours["orders"] == theirs["orders"]
    if STEPS[k]:
        assert theirs["distribution_mode"] == "range"  # Java's SQL sets it; icefloe's default agrees


@pytest.mark.oracle
@pytest.mark.java
def test_java_pyiceberg_duckdb_read_the_sorted_table(verified: sup.VerifyOutcome) -> None:
    if verified.problems:
        pytest.fail(sup.format_outcome(verified), pytrace=False)


@pytest.mark.oracle
@pytest.mark.java
def test_java_sees_each_files_sort_order_id(world: World, java: dict[str, Any]) -> None:
    theirs = java["files"][world.sorted_name]
    assert {sup.local_path(p): v for p, v in theirs.items()} == {
        sup.local_path(p): v for p, v in world.files.items()
    }
