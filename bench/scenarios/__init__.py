"""The scenario registry: a name on the command line -> the function that measures it.

Each family lives in its own module and exposes ``run(ctx) -> list[CaseResult]`` (or a named
variant); modules are imported only when their scenario is chosen, so a missing optional
dependency (Spark) never stops the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from bench._core import CaseResult, Context

__all__ = ["SCENARIOS", "load"]

# name -> (module, function, one-line description)
SCENARIOS: dict[str, tuple[str, str, str]] = {
    "planning": (
        "bench.scenarios.planning",
        "run",
        "plan_files on 10,000 files in 1,000 manifests vs PyIceberg",
    ),
    "planning-scale": (
        "bench.scenarios.planning_scale",
        "run",
        "planning time and manifests opened vs table size (10k-1M files) vs PyIceberg and Java",
    ),
    "scan": (
        "bench.scenarios.scan",
        "run",
        "Arrow scan, full and filtered, vs pyarrow.dataset and PyIceberg",
    ),
    "append": ("bench.scenarios.write", "run_append", "Arrow append of lineitem vs pq.write_table"),
    "commit": ("bench.scenarios.write", "run_commit", "small-append latency on SQLite vs PyIceberg"),
    "catalogs": (
        "bench.scenarios.catalogs",
        "run",
        "small-append latency per catalog (SQLite, PostgreSQL, REST) vs PyIceberg on the same catalog",
    ),
    "deletes": ("bench.scenarios.deletes", "run", "merge-on-read vs copy-on-write delete of 1%, and reads"),
    "concurrent": ("bench.scenarios.concurrent", "run", "8 writer processes appending to one table"),
    "spark": ("bench.scenarios.spark", "run", "Spark write/scan vs raw Parquet and Iceberg Java"),
    "compaction": (
        "bench.scenarios.compaction",
        "run",
        "rewrite_data_files of 10,000 small files: Arrow vs raw pyarrow, Spark vs Iceberg Java",
    ),
    "rest-commit": (
        "bench.scenarios.rest",
        "run_commit",
        "small-append latency through icefloe's REST server vs PyIceberg's RestCatalog",
    ),
    "expire": (
        "bench.scenarios.expire",
        "run",
        "expire 1,000 snapshots over 10,000 files (local, Spark) vs Iceberg Java 1.10",
    ),
    "merge": (
        "bench.scenarios.merge",
        "run",
        "Spark MERGE (half updates, half inserts) and DELETE 1% in both write modes vs Iceberg Java 1.10",
    ),
    "small-files": (
        "bench.scenarios.small_files",
        "run",
        "to_arrow of 1,200 small files (300 appends), full/filtered, +- position deletes, vs pyarrow",
    ),
    "stream-memory": (
        "bench.scenarios.stream_memory",
        "run",
        "peak memory of to_batches() over a table of --memory-mib MiB vs its documented bound",
    ),
    "spark-memory": (
        "bench.scenarios.spark_memory",
        "run",
        "Spark reads (fast path, data source) of the --memory-mib table under a 512m driver heap: "
        "peak heap, JVM and Python worker RSS vs the documented bound",
    ),
    "rest-concurrent": (
        "bench.scenarios.rest",
        "run_throughput",
        "REST server throughput: 8 committer processes appending to one table",
    ),
}


def load(name: str) -> Callable[[Context], list[CaseResult]]:
    module, func, _ = SCENARIOS[name]
    fn: Callable[[Context], list[CaseResult]] = getattr(importlib.import_module(module), func)
    return fn
