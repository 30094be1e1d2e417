"""The REST catalog: small-append latency through icefloe's REST server, icefloe's client vs
PyIceberg 0.12's ``RestCatalog`` against the same server; and the server's throughput with 8
committer processes.

The server is ``python -m icefloe.rest`` on a SQLite catalog in its own process (as deployed),
bearer-token auth. Both clients append 10 rows per commit to their own table of the same shape;
a timed run is ``SMALL_APPENDS`` appends and the median is reported per append. The throughput
case is the ``concurrent`` scenario's shape over HTTP: every process loads the table, waits at a
barrier and commits its appends, retrying lost compare-and-swaps (409s).
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import time
import warnings
from typing import Any

from bench._core import (
    Case,
    CaseResult,
    Check,
    Contender,
    Context,
    Ratio,
    check_target,
    metric_target,
    ratio_target,
    run_case,
)

__all__ = ["run_commit", "run_throughput"]

SMALL_APPENDS = 5
TOKEN = "bench-token"
ROWS = 100


def _server(ctx: Context, name: str) -> Any:
    from icefloe.rest import RestServerProcess

    root = ctx.work_dir / name
    (root / "warehouse").mkdir(parents=True)
    return RestServerProcess(
        f"sqlite:///{(root / 'catalog.db').resolve()}",
        (root / "warehouse").resolve().as_uri(),
        token=TOKEN,
        log_path=str(root / "server.log"),
    )


def run_commit(ctx: Context) -> list[CaseResult]:
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    import icefloe

    small = pa.table({"id": pa.array(range(10), pa.int64()), "name": pa.array([f"n{i}" for i in range(10)])})
    with _server(ctx, "rest-commit") as server:
        cat = icefloe.load_catalog("bench_rest", type="rest", uri=server.url, token=TOKEN)
        cat.create_namespace("b")
        ice_table = cat.create_table("b.icefloe", schema=small.schema)
        py_cat = PyRestCatalog("bench_rest", uri=server.url, token=TOKEN)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            py_table = py_cat.create_table("b.pyiceberg", schema=small.schema)

        def ice() -> None:
            for _ in range(SMALL_APPENDS):
                ice_table.append(small)

        def py() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in range(SMALL_APPENDS):
                    py_table.append(small)

        def evaluate(_: dict[str, dict[str, Any]]) -> tuple[list[Check], dict[str, Any]]:
            n_ice = len(cat.load_table("b.icefloe").snapshots())
            n_py = len(cat.load_table("b.pyiceberg").snapshots())
            return [Check("every append committed on both sides", n_ice == n_py, f"{n_ice} vs {n_py}")], {
                "snapshots": {"icefloe": n_ice, "pyiceberg": n_py}
            }

        case = Case(
            "rest-commit",
            "small_append",
            f"small append (10 rows) latency through the REST server, per append ({SMALL_APPENDS} per run)",
            [Contender("icefloe", ice), Contender("pyiceberg", py)],
            [Ratio("REST small append: latency vs PyIceberg", "icefloe", "pyiceberg", "time", "<=", 0.5)],
            evaluate=evaluate,
            unit_divisor=SMALL_APPENDS,
        )
        try:
            return [run_case(ctx, case)]
        finally:
            cat.close()


def _committer(url: str, index: int, commits: int, barrier: Any, out: Any) -> None:
    import pyarrow as pa

    import icefloe

    cat = icefloe.load_catalog("bench_rest", type="rest", uri=url, token=TOKEN)
    table = cat.load_table("b.events")
    batch = pa.table(
        {"writer": pa.array([index] * ROWS, pa.int32()), "seq": pa.array(range(ROWS), pa.int64())}
    )
    retries = landed = 0
    error = None
    barrier.wait()
    start = time.time()
    try:
        for _ in range(commits):
            tx = table.transaction()
            tx.append(batch)
            tx.commit()
            retries += tx.stats.retries
            landed += 1
    except Exception as e:  # reported, not raised: the parent decides the verdict
        error = f"{type(e).__name__}: {e}"
    out.put({"landed": landed, "retries": retries, "error": error, "start": start, "end": time.time()})
    cat.close()


def _round(ctx: Context, name: str, writers: int, commits: int, via_rest: bool) -> dict[str, Any]:
    """One round: ``writers`` processes x ``commits`` appends, through the REST server or (the
    baseline) straight to the same kind of SQLite catalog."""
    import contextlib

    import pyarrow as pa

    import icefloe
    from bench.data import catalog_properties
    from bench.scenarios.concurrent import _writer

    stack = contextlib.ExitStack()
    with stack:
        if via_rest:
            server = stack.enter_context(_server(ctx, name))
            props = {"type": "rest", "uri": server.url, "token": TOKEN}
        else:
            root = ctx.work_dir / name
            (root / "warehouse").mkdir(parents=True)
            props = catalog_properties(root)
        cat = icefloe.load_catalog("bench_rest" if via_rest else "bench_concurrent", **props)
        cat.create_namespace("b")
        schema = pa.schema([pa.field("writer", pa.int32()), pa.field("seq", pa.int64())])
        cat.create_table(
            "b.events",
            schema=schema,
            properties={
                "commit.retry.num-retries": "100",
                "commit.retry.min-wait-ms": "20",
                "commit.retry.max-wait-ms": "2000",
            },
        )
        spawn = mp.get_context("spawn")
        barrier, out = spawn.Barrier(writers), spawn.Queue()
        target = _committer if via_rest else _writer
        first = server.url if via_rest else str(ctx.work_dir / name)
        procs = [spawn.Process(target=target, args=(first, i, commits, barrier, out)) for i in range(writers)]
        for p in procs:
            p.start()
        reports = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        table = cat.load_table("b.events")
        snapshots, rows = len(table.snapshots()), table.scan().count()
        cat.close()
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    landed = sum(r["landed"] for r in reports)
    errors = [r["error"] for r in reports if r["error"]]
    return {
        "wall_s": wall,
        "landed": landed,
        "snapshots": snapshots,
        "rows": rows,
        "retries": sum(r["retries"] for r in reports),
        "errors": errors,
        "all_landed": landed == writers * commits == snapshots and rows == landed * ROWS and not errors,
        "commits_per_s": landed / wall if wall > 0 else 0.0,
    }


def run_throughput(ctx: Context) -> list[CaseResult]:
    writers = int(ctx.options.get("writers", 8))
    commits = int(ctx.options.get("commits_per_writer", 5))
    rounds: dict[str, list[dict[str, Any]]] = {"rest": [], "sqlite": []}
    for rep in range(ctx.repeat):
        # alternate which side goes first, as every other case does
        order = ["rest", "sqlite"] if rep % 2 == 0 else ["sqlite", "rest"]
        for side in order:
            r = _round(ctx, f"rest-concurrent-{side}-{rep}", writers, commits, via_rest=side == "rest")
            rounds[side].append(r)
            ctx.say(
                f"    round {rep + 1}/{ctx.repeat} {side}: {r['landed']}/{writers * commits} commits in "
                f"{r['wall_s']:.2f}s, {r['retries']} retries, {len(r['errors'])} errors"
            )
    medians = {side: statistics.median(r["wall_s"] for r in rs) for side, rs in rounds.items()}
    res = CaseResult(
        "rest-concurrent",
        f"{writers}_committers",
        f"{writers} processes x {commits} appends to one table through the REST server "
        "(vs the same straight to SQLite)",
        times_s={side: [r["wall_s"] for r in rs] for side, rs in rounds.items()},
        median_s=medians,
    )
    res.metrics = {
        "commits_per_s": {
            side: statistics.median(r["commits_per_s"] for r in rs) for side, rs in rounds.items()
        },
        "throughput_vs_direct_sqlite": medians["sqlite"] / medians["rest"] if medians["rest"] else 0.0,
        "retries": {side: [r["retries"] for r in rs] for side, rs in rounds.items()},
        "rounds": rounds,
    }
    detail = "; ".join(
        f"{side}: {r['landed']} landed, {r['snapshots']} snapshots, {r['rows']} rows, "
        f"errors: {r['errors'] or 'none'}"
        for side, rs in rounds.items()
        for r in rs
    )
    ok = all(r["all_landed"] for rs in rounds.values() for r in rs)
    res.checks = [{"label": "every commit lands (REST and direct)", "met": ok, "detail": detail}]
    return [res]


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    ratio_target(
        "rest-commit.small_append.vs-pyiceberg",
        "small_append",
        "REST small append: latency vs PyIceberg",
        "small append (10 rows) via the REST server vs PyIceberg's RestCatalog",
        "<=",
        0.5,
        "latency",
    ),
    check_target(
        "rest-concurrent.8_committers.all-land",
        "8_committers",
        "every commit lands (REST and direct)",
        "8 committer processes x 5 appends via REST: every commit lands",
    ),
    metric_target(
        "rest-concurrent.8_committers.vs-direct",
        "8_committers",
        "throughput_vs_direct_sqlite",
        "8 committers via REST: throughput vs straight to SQLite",
        "x",
    ),
]
