"""The memory of a streaming scan: peak memory of ``DataScan.to_batches()`` over a table of
``--memory-mib`` MiB of Arrow data (int64, double, 16-character string; files of ~3 MiB), with
the default read options, against its documented bound
(:func:`icefloe.arrow._scan_groups.memory_bound`).

Each round streams the table in a fresh child process (``icefloe.arrow._scan_memory``): the
peak is measured beyond the fixed costs of the interpreter and libraries, after one file was
read. The worst round is reported. The bound is about Arrow's own allocations; RSS adds what
the allocator keeps (reported beside it). The table is the one of
``python -m bench.scenarios.small_files --gib N`` (built once, cached under ``bench/.data``).
"""

from __future__ import annotations

from typing import Any

from bench._core import CaseResult, Context, ratio_target

__all__ = ["TARGETS", "run"]

SCENARIO = "stream-memory"
CASE = "to_batches"
DEFAULTS = {"batch_size": 131_072, "fragment_readahead": 4, "batch_readahead": 4}  # the read defaults


def run(ctx: Context) -> list[CaseResult]:
    from bench.scenarios.small_files import memory_table, run_memory

    mib = int(ctx.options.get("memory_mib", 256))
    decoded = mib << 20
    ctx.say(f"    a table of {mib} MiB of Arrow data (cached under {ctx.data_dir}) ...")
    _, _, rows = memory_table(ctx.data_dir, decoded)
    rounds: list[dict[str, Any]] = []
    for i in range(ctx.repeat):
        (r,) = run_memory(ctx.data_dir, decoded, [dict(DEFAULTS)])
        r.pop("rss_samples", None)
        rounds.append(r)
        ctx.say(
            f"    round {i + 1}/{ctx.repeat}: RSS growth {r['growth'] / 1e6:.0f} MB, Arrow at most "
            f"{r['max_arrow_allocated'] / 1e6:.0f} MB, bound {r['bound'] / 1e6:.0f} MB"
        )
    bound = rounds[0]["bound"]
    arrow = max(r["max_arrow_allocated"] for r in rounds)
    growth = max(r["growth"] for r in rounds)
    sampled = all(r["batches"] >= 8 for r in rounds)  # Arrow's allocation is sampled every 8 batches
    res = CaseResult(
        SCENARIO,
        CASE,
        f"to_batches() of {mib} MiB of Arrow data ({rounds[0]['files']} files), default read options, "
        "peak memory vs its bound",
    )
    res.metrics = {
        "bound_bytes": bound,
        "max_arrow_allocated_bytes": arrow,
        "rss_growth_bytes": growth,
        "table_rows": rows,
        "rounds": rounds,
    }
    res.ratios = []
    if sampled:
        res.ratios.append(
            {
                "label": "to_batches: Arrow memory peak vs bound",
                "subject": "arrow_peak",
                "baseline": "bound",
                "kind": "time",
                "op": "<=",
                "target": 1.0,
                "value": arrow / bound,
                "met": arrow <= bound,
                "note": f"Arrow at most {arrow / 1e6:.0f} MB, bound {bound / 1e6:.0f} MB",
            }
        )
    else:
        res.metrics["arrow_peak"] = "under 8 batches per round: Arrow's allocation was not sampled"
    res.ratios.append(
        {
            "label": "to_batches: RSS growth vs bound",
            "subject": "rss_growth",
            "baseline": "bound",
            "kind": "time",
            "op": None,
            "target": None,
            "value": growth / bound,
            "met": None,
            "note": f"RSS growth {growth / 1e6:.0f} MB (allocator retention included), "
            f"table {decoded / 1e6:.0f} MB",
        }
    )
    read = {r["rows"] for r in rounds}
    res.checks = [
        {
            "label": "every row streamed",
            "met": read == {rows},
            "detail": f"{sorted(read)} rows read, {rows} in the table",
        }
    ]
    return [res]


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    ratio_target(
        f"{SCENARIO}.{CASE}.arrow-vs-bound",
        CASE,
        "to_batches: Arrow memory peak vs bound",
        "to_batches(), default options: peak Arrow memory vs its bound",
        "<=",
        1.0,
        "memory",
    ),
    ratio_target(
        f"{SCENARIO}.{CASE}.rss-vs-bound",
        CASE,
        "to_batches: RSS growth vs bound",
        "to_batches(): peak RSS growth vs the same bound",
    ),
]
