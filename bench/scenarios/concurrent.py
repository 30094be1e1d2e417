"""Eight writer processes appending to one table on a SQLite catalog at the same time.

Each process loads the table, waits at a barrier, then commits ``COMMITS`` small appends, each a
transaction whose retry loop (``commit.retry.*``) handles lost compare-and-swaps. The target: every
commit lands (snapshots and rows add up, no writer fails); reported: commits per second over the
whole run (first start to last finish) and the retries taken.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path
from typing import Any

from bench._core import CaseResult, Context, check_target, metric_target
from bench.data import catalog_properties

__all__ = ["run"]

WRITERS = 8
COMMITS = 5
ROWS = 100


def _writer(root: str, index: int, commits: int, barrier: Any, out: Any) -> None:
    import pyarrow as pa

    import icefloe

    cat = icefloe.load_catalog("bench_concurrent", **catalog_properties(Path(root)))
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
    out.put(
        {
            "writer": index,
            "landed": landed,
            "retries": retries,
            "error": error,
            "start": start,
            "end": time.time(),
        }
    )
    cat.close()


def run(ctx: Context) -> list[CaseResult]:
    import pyarrow as pa

    import icefloe

    writers = int(ctx.options.get("writers", WRITERS))
    commits = int(ctx.options.get("commits_per_writer", COMMITS))
    results = []
    for rep in range(ctx.repeat):
        root = ctx.work_dir / f"concurrent-{rep}"
        root.mkdir(parents=True)
        cat = icefloe.load_catalog("bench_concurrent", **catalog_properties(root))
        cat.create_namespace("b")
        schema = pa.schema([pa.field("writer", pa.int32()), pa.field("seq", pa.int64())])
        # Enough retries that every writer gets through 8-way contention; Java's default is 4.
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
        procs = [
            spawn.Process(target=_writer, args=(str(root), i, commits, barrier, out)) for i in range(writers)
        ]
        for p in procs:
            p.start()
        reports = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        table = cat.load_table("b.events")
        snapshots = len(table.snapshots())
        rows = table.scan().count()
        cat.close()
        wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
        landed = sum(r["landed"] for r in reports)
        retries = sum(r["retries"] for r in reports)
        errors = [r["error"] for r in reports if r["error"]]
        all_landed = (
            landed == writers * commits == snapshots and rows == writers * commits * ROWS and not errors
        )
        results.append(
            {
                "wall_s": wall,
                "landed": landed,
                "snapshots": snapshots,
                "rows": rows,
                "retries": retries,
                "errors": errors,
                "all_landed": all_landed,
                "commits_per_s": landed / wall if wall > 0 else 0.0,
            }
        )
        ctx.say(
            f"    round {rep + 1}/{ctx.repeat}: {landed}/{writers * commits} commits in {wall:.2f}s, "
            f"{retries} retries, {len(errors)} errors"
        )
    import statistics

    res = CaseResult(
        "concurrent",
        "8_writers",
        f"{writers} processes x {commits} appends to one table on SQLite",
        times_s={"icefloe": [r["wall_s"] for r in results]},
        median_s={"icefloe": statistics.median(r["wall_s"] for r in results)},
    )
    res.metrics = {
        "commits_per_s": statistics.median(r["commits_per_s"] for r in results),
        "retries": [r["retries"] for r in results],
        "rounds": results,
    }
    ok = all(r["all_landed"] for r in results)
    detail = "; ".join(
        f"{r['landed']} landed, {r['snapshots']} snapshots, {r['rows']} rows, errors: {r['errors'] or 'none'}"
        for r in results
    )
    res.checks = [{"label": "every commit lands", "met": ok, "detail": detail}]
    return [res]


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    check_target(
        "concurrent.8_writers.all-land",
        "8_writers",
        "every commit lands",
        "8 writer processes x 5 appends on SQLite: every commit lands",
    ),
    metric_target(
        "concurrent.8_writers.commits-per-s",
        "8_writers",
        "commits_per_s",
        "8 writer processes x 5 appends: throughput",
        "commits/s",
    ),
]
