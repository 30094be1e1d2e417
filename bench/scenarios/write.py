"""Arrow writes: appending TPC-H ``lineitem`` vs a raw ``pyarrow.parquet.write_table`` of the same
data (same codec, zstd, icefloe's default), and the latency of a small append (10 rows, write +
commit) on a SQLite catalog vs PyIceberg 0.12 on its SQLite catalog.

Each append of ``lineitem`` goes to a fresh table (created and dropped outside the clock), so
every run does the same work. The small appends go to one table per side that grows alike; a
timed run is ``SMALL_APPENDS`` appends and the median is reported per append.
"""

from __future__ import annotations

import itertools
import shutil
from typing import Any

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, ratio_target, run_case
from bench.data import catalog_properties, lineitem

__all__ = ["run_append", "run_commit"]

SMALL_APPENDS = 5


def run_append(ctx: Context) -> list[CaseResult]:
    import pyarrow.parquet as pq

    import icefloe

    data = lineitem(ctx.data_dir, ctx.scale)
    root = ctx.work_dir / "append"
    root.mkdir(parents=True)
    cat = icefloe.load_catalog("bench_append", **catalog_properties(root))
    cat.create_namespace("b")
    raw_dir = root / "raw"
    raw_dir.mkdir()
    counter = itertools.count()
    state: dict[str, Any] = {}

    def fresh_table() -> None:
        state["table"] = cat.create_table(f"b.lineitem_{next(counter)}", schema=data.schema)

    def drop_table() -> None:
        cat.drop_table(state.pop("table").identifier, purge=True)

    def ice() -> dict[str, Any]:
        files = state["table"].transaction()
        written = files.append(data)
        files.commit()
        return {"files": len(written)}

    def raw() -> dict[str, Any]:
        path = raw_dir / "lineitem.parquet"
        pq.write_table(data, path, compression="zstd")
        return {"files": 1}

    def cleanup_raw() -> None:
        (raw_dir / "lineitem.parquet").unlink(missing_ok=True)

    case = Case(
        "append",
        "lineitem",
        f"Arrow append of lineitem ({data.num_rows:,} rows)",
        [
            Contender("icefloe", ice, setup=fresh_table, teardown=drop_table),
            Contender("pq_write_table", raw, teardown=cleanup_raw),
        ],
        [Ratio("append: speed vs pq.write_table", "icefloe", "pq_write_table", "speed", ">=", 0.9)],
    )
    try:
        return [run_case(ctx, case)]
    finally:
        cat.close()
        shutil.rmtree(root, ignore_errors=True)


def run_commit(ctx: Context) -> list[CaseResult]:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    import icefloe

    small = pa.table({"id": pa.array(range(10), pa.int64()), "name": pa.array([f"n{i}" for i in range(10)])})
    ice_root, py_root = ctx.work_dir / "commit-icefloe", ctx.work_dir / "commit-pyiceberg"
    for d in (ice_root, py_root):
        (d / "warehouse").mkdir(parents=True)
    cat = icefloe.load_catalog("bench_commit", **catalog_properties(ice_root))
    cat.create_namespace("b")
    ice_table = cat.create_table("b.small", schema=small.schema)
    py_props = catalog_properties(py_root)
    py_cat = PySqlCatalog("bench_commit", uri=py_props["uri"], warehouse=py_props["warehouse"])
    py_cat.create_namespace("b")
    py_table = py_cat.create_table("b.small", schema=small.schema)

    def ice() -> None:
        for _ in range(SMALL_APPENDS):
            ice_table.append(small)

    def py() -> None:
        for _ in range(SMALL_APPENDS):
            py_table.append(small)

    def evaluate(_: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
        n_ice = len(ice_table.refresh().snapshots())
        n_py = len(py_table.refresh().snapshots())
        return [Check("every append committed on both sides", n_ice == n_py, f"{n_ice} vs {n_py}")], {
            "snapshots": {"icefloe": n_ice, "pyiceberg": n_py}
        }

    case = Case(
        "commit",
        "small_append",
        f"small append (10 rows) latency on SQLite, per append ({SMALL_APPENDS} per run)",
        [Contender("icefloe", ice), Contender("pyiceberg", py)],
        [Ratio("small append: latency vs PyIceberg", "icefloe", "pyiceberg", "time", "<=", 0.5)],
        evaluate=evaluate,
        unit_divisor=SMALL_APPENDS,
    )
    try:
        return [run_case(ctx, case)]
    finally:
        cat.close()
        py_cat.engine.dispose()


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    ratio_target(
        "append.lineitem.vs-pq-write-table",
        "lineitem",
        "append: speed vs pq.write_table",
        "Arrow append of lineitem (write + commit) vs pq.write_table, zstd",
        ">=",
        0.9,
    ),
    ratio_target(
        "commit.small_append.vs-pyiceberg",
        "small_append",
        "small append: latency vs PyIceberg",
        "small append (10 rows) on SQLite vs PyIceberg 0.12 on SQLite",
        "<=",
        0.5,
        "latency",
    ),
]
