"""The memory of Spark reads: a table of ``--memory-mib`` MiB of Arrow data (the ``stream-memory``
table: int64, double, 16-character string; files of ~3 MiB) aggregated (``count`` and a ``sum``
over every column, which streams) by a Spark driver whose JVM heap is limited
(``spark.driver.memory`` = :data:`DRIVER_MEMORY`), ``local[2]``, through

- ``fast_path``: ``icefloe.spark.read(spark, "m.big", engine="parquet")`` (planned in Python,
  read by Spark's own Parquet reader: no Python worker reads data);
- ``data_source``: ``spark.read.format("icefloe")`` (Python workers read Arrow batches and ship
  them to the JVM), judged against its documented bound
  (:func:`icefloe.spark._source_memory.read_memory_bound`).

Each case runs in a fresh child process (its own JVM). After a warm-up query over the first
files (so that every worker has imported its libraries and read a file: fixed costs), the child
resets the high-water marks (``VmHWM``, via ``/proc/<pid>/clear_refs``) of the JVM and of every
Python worker and the peaks of the JVM's heap pools, runs the query while a thread samples the
process tree from ``/proc`` every 50 ms, then reads the peaks: the JVM's heap (sum of its heap
pools' peak use: an upper bound of the peak) against its limit, the JVM's RSS growth, each
worker's RSS growth (``VmHWM`` minus its RSS at the reset; a worker started after the reset is
measured from the smallest reset RSS) and the sampled growth of all workers together. The worst
round is reported. RSS includes what the allocator keeps after freeing (mimalloc/jemalloc).

    python -m bench spark-memory                    # the default 256 MiB table
    python -m bench spark-memory --memory-mib 5120  # 10x the 512 MiB heap (built once, cached)

Linux only (``/proc``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench._core import CaseResult, Context, check_target, metric_target, ratio_target, skipped

__all__ = ["TARGETS", "measure", "run"]

SCENARIO = "spark-memory"
CASES = {
    "fast_path": "icefloe.spark.read (Spark's Parquet reader)",
    "data_source": 'spark.read.format("icefloe") (Python workers)',
}
DRIVER_MEMORY = "512m"  # Spark refuses a heap under ~450 MiB
PARALLELISM = 2
ROW_BYTES = 36  # a decoded row of the stream-memory table: 8 + 8 + 16 characters + 4 (offset)
CATALOG = "bench_stream_memory"  # the name the stream-memory table was created under
ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- /proc


def _status(pid: int, *keys: str) -> dict[str, int]:
    """``VmRSS`` / ``VmHWM`` (bytes) of ``pid``; empty when it is gone."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in keys:
                    out[key] = int(line.split()[1]) * 1024
    except OSError:
        return {}
    return out


def _children() -> dict[int, list[int]]:
    """Every process's children (from ``/proc/<pid>/stat``)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _python_workers(jvm: int) -> tuple[list[int], set[int]]:
    """The Python processes the JVM started (descendants), and which of them read no data:
    pyspark's daemons (children of the JVM, one per worker module: they fork the workers) and
    the workers of the driver-side planning modules (``pyspark.sql.worker.*``: looking the data
    source up, creating it, planning its partitions)."""
    kids = _children()
    found: list[int] = []
    idle: set[int] = set()
    stack = [(pid, True) for pid in kids.get(jvm, [])]
    while stack:
        pid, direct = stack.pop()
        stack += [(k, False) for k in kids.get(pid, [])]
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and "python" in Path(cmd[0].decode(errors="replace")).name:
            found.append(pid)
            if direct or any(a.startswith(b"pyspark.sql.worker.") for a in cmd):
                idle.add(pid)
    return found, idle


def _reset_hwm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class _Sampler(threading.Thread):
    """Samples the RSS of the JVM's Python workers every ``interval`` seconds: the largest sum of
    their growth over ``baseline`` at one instant, and each worker's last seen ``VmHWM``; every
    fifth time, the heap in use right after the JVM's latest collection (``heap_pools``' collection
    usage, through py4j): the largest is the most the heap held that a collection could not free."""

    def __init__(
        self,
        jvm: int,
        baseline: dict[int, int],
        fresh_baseline: int,
        heap_pools: list[Any],
        interval: float = 0.05,
    ):
        super().__init__(daemon=True)
        self.jvm, self.baseline, self.fresh_baseline, self.interval = jvm, baseline, fresh_baseline, interval
        self.heap_pools = heap_pools
        self.heap_after_gc = 0
        self.stop = threading.Event()
        self.hwm: dict[int, int] = {}
        self.first_rss: dict[int, int] = {}
        self.max_total_growth = 0
        self.max_workers = 0
        self.samples = 0

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        workers, idle = _python_workers(self.jvm)
        total, alive = 0, 0
        for pid in workers:
            if pid in idle:
                continue
            s = _status(pid, "VmRSS", "VmHWM")
            if not s:
                continue
            alive += 1
            self.first_rss.setdefault(pid, s["VmRSS"])
            self.hwm[pid] = max(self.hwm.get(pid, 0), s["VmHWM"])
            total += max(0, s["VmRSS"] - self.baseline.get(pid, self.fresh_baseline))
        self.max_total_growth = max(self.max_total_growth, total)
        self.max_workers = max(self.max_workers, alive)
        if self.samples % 5 == 0:
            after = [p.getCollectionUsage() for p in self.heap_pools]
            used = sum(int(u.getUsed()) for u in after if u is not None)
            self.heap_after_gc = max(self.heap_after_gc, used)
        self.samples += 1


# --------------------------------------------------------------------------- the child


def _child(args: dict[str, Any]) -> dict[str, Any]:
    """One case in this (fresh) process: its own JVM, warm-up, reset, the measured query."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import icefloe.spark

    par = args["parallelism"]
    started = time.perf_counter()
    builder = (
        SparkSession.builder.master(f"local[{par}]")
        .config("spark.driver.memory", args["driver_memory"])
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(par))
        .config("spark.default.parallelism", str(par))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
    )
    for k, v in args["catalog"].items():
        builder = builder.config(f"spark.icefloe.catalog.{CATALOG}.{k}", v)
    spark = builder.getOrCreate()
    try:
        spark.sparkContext.setLogLevel("ERROR")
        icefloe.spark.register(spark)
        case, table = args["case"], args["table"]

        def query(where: str | None, split: int | None = None) -> Any:
            if case == "fast_path":
                df = icefloe.spark.read(spark, table, where=where, catalog=CATALOG, engine="parquet")
            else:
                r = spark.read.format("icefloe").option("catalog", CATALOG)
                if where is not None:
                    r = r.option("filter", where)
                if split is not None:
                    r = r.option("split-size", str(split))
                df = r.load(table)
            return df.agg(
                F.count(F.lit(1)).alias("n"),
                F.sum("id").alias("ids"),
                F.sum("v").alias("v"),
                F.sum(F.length("s")).alias("chars"),
            ).collect()[0]

        gateway: Any = spark._jvm
        jvm_rt = gateway.java.lang
        management = gateway.java.lang.management.ManagementFactory
        jvm = int(jvm_rt.ProcessHandle.current().pid())
        startup = time.perf_counter() - started
        # Warm-up: the first files, one task each (every worker imports its libraries, reads a file).
        query(f"id < {args['warm_rows']}", split=args["warm_split"])
        warmup = time.perf_counter() - started - startup
        heap_pools = [p for p in management.getMemoryPoolMXBeans() if str(p.getType()) == "Heap memory"]
        jvm_rt.System.gc()
        for p in heap_pools:
            p.resetPeakUsage()
        workers, idle = _python_workers(jvm)
        baseline: dict[int, int] = {}
        reset = _reset_hwm(jvm)
        jvm_base = _status(jvm, "VmRSS").get("VmRSS", 0)
        for pid in workers:
            if pid in idle:
                continue
            rss = _status(pid, "VmRSS").get("VmRSS")
            if rss is not None and _reset_hwm(pid):
                baseline[pid] = rss
        fresh = min(baseline.values(), default=0)
        sampler = _Sampler(jvm, baseline, fresh, heap_pools)
        sampler.start()
        t0, cpu0 = time.perf_counter(), os.times()
        row = query(None)
        seconds = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
        sampler.sample()  # the workers' final high-water marks
        jvm_peak = _status(jvm, "VmHWM").get("VmHWM", 0)
        heap_peak = sum(int(p.getPeakUsage().getUsed()) for p in heap_pools)
        old_peak = max(
            (int(p.getPeakUsage().getUsed()) for p in heap_pools if "Old" in str(p.getName())), default=0
        )
        heap_max = int(jvm_rt.Runtime.getRuntime().maxMemory())
        growth = {
            pid: hwm - baseline.get(pid, fresh if fresh else sampler.first_rss.get(pid, hwm))
            for pid, hwm in sampler.hwm.items()
        }
        return {
            "rows": int(row["n"]),
            "id_sum": int(row["ids"] or 0),
            "chars": int(row["chars"] or 0),
            "seconds": seconds,
            "startup_s": startup,
            "warmup_s": warmup,
            "driver_cpu_s": os.times().user - cpu0.user + os.times().system - cpu0.system,
            "hwm_reset": reset,
            "jvm_baseline": jvm_base,
            "jvm_peak": jvm_peak,
            "jvm_growth": jvm_peak - jvm_base,
            "heap_peak": heap_peak,
            "heap_old_peak": old_peak,
            "heap_after_gc_max": sampler.heap_after_gc,
            "heap_max": heap_max,
            "workers_warm": len(baseline),
            "workers_seen": len(sampler.hwm),
            "workers_fresh": len(set(sampler.hwm) - set(baseline)),
            "max_workers_at_once": sampler.max_workers,
            "worker_baseline_max": max(baseline.values(), default=0),
            "worker_peak_max": max(sampler.hwm.values(), default=0),
            "worker_growth_max": max(growth.values(), default=0),
            "workers_growth_sampled": sampler.max_total_growth,
            "samples": sampler.samples,
        }
    finally:
        spark.stop()


# --------------------------------------------------------------------------- the parent


def table_shape(props: dict[str, str], name: str) -> dict[str, int]:
    """Files, the largest row group (uncompressed bytes, rows) and rows per file of the table."""
    import pyarrow.parquet as pq

    import icefloe
    from icefloe.io.local import local_path

    cat = icefloe.load_catalog(CATALOG, **props)
    try:
        tasks = cat.load_table(name).scan().plan_files()
        rg_bytes = rg_rows = first_rows = file_rows = 0
        file_bytes = max((t.file.file_size_in_bytes for t in tasks), default=0)
        for i, t in enumerate(sorted(tasks, key=lambda t: t.file.file_path)):
            meta = pq.read_metadata(local_path(t.file.file_path))
            for g in range(meta.num_row_groups):
                rg = meta.row_group(g)
                rg_bytes, rg_rows = max(rg_bytes, rg.total_byte_size), max(rg_rows, rg.num_rows)
            file_rows = max(file_rows, meta.num_rows)
            if i == 0:
                first_rows = meta.num_rows
        files = len(tasks)
    finally:
        cat.close()
    return {
        "files": files,
        "row_group_bytes": rg_bytes,
        "row_group_rows": rg_rows,
        "file_rows": file_rows,
        "file_bytes": file_bytes,
        "first_file_rows": first_rows,
    }


def measure(
    data_dir: Path,
    decoded_bytes: int,
    case: str,
    *,
    driver_memory: str = DRIVER_MEMORY,
    parallelism: int = PARALLELISM,
    timeout: float = 3600,
) -> dict[str, Any]:
    """One case in a fresh child process over the ``stream-memory`` table of ``decoded_bytes``."""
    from bench.scenarios.small_files import memory_table
    from icefloe.arrow.reader import DEFAULT_BATCH_SIZE
    from icefloe.spark._source_memory import read_memory_bound, worker_memory_bound

    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; choose from {', '.join(CASES)}")
    props, name, rows = memory_table(data_dir, decoded_bytes)
    shape = table_shape(props, name)
    # The warm-up reads the first files (ids are written in order), two per worker, each file a
    # task of its own read whole (a split size of the largest file), as the measured query reads.
    args = {
        "case": case,
        "catalog": props,
        "table": name,
        "driver_memory": driver_memory,
        "parallelism": parallelism,
        "warm_rows": shape["first_file_rows"] * 2 * parallelism,
        "warm_split": shape["file_bytes"],
    }
    proc = subprocess.run(
        [sys.executable, "-m", "bench.scenarios.spark_memory", "--child", json.dumps(args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out: dict[str, Any] = {"case": case, "table_rows": rows, "decoded_bytes": decoded_bytes, **shape}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        out["failed"] = f"child exited {proc.returncode}: " + " | ".join(tail)
        out["out_of_memory"] = "OutOfMemoryError" in proc.stderr or "Java heap space" in proc.stderr
        return out
    out.update(json.loads(lines[-1]))
    batch_bytes = min(DEFAULT_BATCH_SIZE, shape["file_rows"]) * ROW_BYTES
    out["batch_bytes"] = batch_bytes
    out["worker_bound"] = worker_memory_bound(batch_bytes, shape["row_group_bytes"])
    out["bound"] = read_memory_bound(batch_bytes, shape["row_group_bytes"], parallelism)
    out["parallelism"] = parallelism
    out["driver_memory"] = driver_memory
    return out


def _mb(n: float) -> str:
    return f"{n / 1e6:.0f} MB"


def evaluate(case: str, rounds: list[dict[str, Any]], mib: int) -> CaseResult:
    """A case's result from its rounds (the worst of each figure)."""
    res = CaseResult(
        SCENARIO,
        case,
        f"{CASES[case]}: count + sum of every column over {mib} MiB of Arrow data, "
        f"driver heap {DRIVER_MEMORY}, local[{PARALLELISM}]",
    )
    failed = [r for r in rounds if "failed" in r]
    first = rounds[0]
    table_vs_heap = first["decoded_bytes"] / (int(DRIVER_MEMORY[:-1]) << 20)
    res.metrics = {"table_vs_heap_limit": table_vs_heap, "files": first["files"], "rounds": rounds}
    res.checks = [
        {
            "label": f"completes under the {DRIVER_MEMORY} heap, every row read",
            "met": not failed and all(r["rows"] == r["table_rows"] for r in rounds),
            "detail": "; ".join(r["failed"] for r in failed)
            or f"{sorted({r['rows'] for r in rounds})} rows read, {first['table_rows']} in the table; "
            f"table {table_vs_heap:.1f}x the heap limit",
        }
    ]
    if failed:
        return res
    rows = first["table_rows"]
    res.checks.append(
        {
            "label": "sums agree with the table",
            "met": all(r["id_sum"] == rows * (rows - 1) // 2 and r["chars"] == 16 * rows for r in rounds),
            "detail": f"sum(id) {first['id_sum']}, sum(length(s)) {first['chars']}",
        }
    )
    keys = ("heap_peak", "heap_after_gc_max", "jvm_growth", "worker_growth_max")
    worst = {k: max(r[k] for r in rounds) for k in keys}
    worst["workers_growth_sampled"] = max(r["workers_growth_sampled"] for r in rounds)
    res.metrics.update(
        {
            "heap_peak_bytes": worst["heap_peak"],
            "heap_after_gc_bytes": worst["heap_after_gc_max"],
            "heap_max_bytes": first["heap_max"],
            "jvm_rss_growth_bytes": worst["jvm_growth"],
            "seconds": [round(r["seconds"], 1) for r in rounds],
        }
    )
    res.ratios = [
        {
            "label": f"{case}: JVM heap after GC vs its limit",
            "subject": "heap_after_gc",
            "baseline": "heap_max",
            "kind": "time",
            "op": None,
            "target": None,
            "value": worst["heap_after_gc_max"] / first["heap_max"],
            "met": None,
            "note": f"at most {_mb(worst['heap_after_gc_max'])} after a collection, "
            f"{_mb(worst['heap_peak'])} in use (sum of the pools' peaks) of {_mb(first['heap_max'])}; "
            f"JVM RSS growth {_mb(worst['jvm_growth'])}; table {table_vs_heap:.1f}x the limit",
        }
    ]
    if case == "data_source":
        bound, per_worker = first["bound"], first["worker_bound"]
        measured = worst["worker_growth_max"]
        warm = all(r["hwm_reset"] and r["workers_warm"] > 0 for r in rounds)
        res.metrics.update(
            {
                "bound_bytes": bound,
                "worker_bound_bytes": per_worker,
                "worker_rss_growth_bytes": measured,
                "workers_rss_growth_sampled_bytes": worst["workers_growth_sampled"],
            }
        )
        if warm:
            res.ratios.append(
                {
                    "label": "data source: worker RSS growth vs bound",
                    "subject": "worker_rss_growth",
                    "baseline": "worker_bound",
                    "kind": "time",
                    "op": "<=",
                    "target": 1.0,
                    "value": measured / per_worker,
                    "met": measured <= per_worker,
                    "note": f"largest worker growth {_mb(measured)}, bound per worker {_mb(per_worker)} "
                    f"(batch {_mb(first['batch_bytes'])}, row group {_mb(first['row_group_bytes'])})",
                }
            )
        else:
            res.metrics["worker_rss_growth"] = "no warm worker's high-water mark could be reset"
        res.ratios.append(
            {
                "label": "data source: all workers' RSS growth vs bound",
                "subject": "workers_rss_growth",
                "baseline": "bound",
                "kind": "time",
                "op": None,
                "target": None,
                "value": worst["workers_growth_sampled"] / bound,
                "met": None,
                "note": f"sampled every 50 ms: {_mb(worst['workers_growth_sampled'])} at once; bound "
                f"{_mb(bound)} ({PARALLELISM} workers)",
            }
        )
    return res


def run(ctx: Context) -> list[CaseResult]:
    import importlib.util

    for mod in ("pyspark", "icefloe.spark"):
        if importlib.util.find_spec(mod) is None:
            return [skipped(SCENARIO, c, CASES[c], f"not available: {mod}") for c in CASES]
    mib = int(ctx.options.get("memory_mib", 256))
    ctx.say(f"    a table of {mib} MiB of Arrow data (cached under {ctx.data_dir}) ...")
    out = []
    for case in CASES:
        rounds = []
        for i in range(ctx.repeat):
            r = measure(ctx.data_dir, mib << 20, case)
            rounds.append(r)
            if "failed" in r:
                ctx.say(f"    {case} round {i + 1}/{ctx.repeat}: FAILED {r['failed']}")
                break
            extra = (
                f", workers +{_mb(r['worker_growth_max'])} each at most (bound {_mb(r['worker_bound'])}), "
                f"+{_mb(r['workers_growth_sampled'])} together (bound {_mb(r['bound'])})"
                if case == "data_source"
                else ""
            )
            ctx.say(
                f"    {case} round {i + 1}/{ctx.repeat}: {r['seconds']:.1f}s, heap peak "
                f"{_mb(r['heap_peak'])} of {_mb(r['heap_max'])}, JVM RSS +{_mb(r['jvm_growth'])}{extra}"
            )
        out.append(evaluate(case, rounds, mib))
    return out


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
TARGETS = [
    *(
        check_target(
            f"{SCENARIO}.{case}.completes",
            case,
            f"completes under the {DRIVER_MEMORY} heap, every row read",
            f"{CASES[case]}: aggregate the table under a {DRIVER_MEMORY} driver heap "
            "(10x it: --memory-mib 5120)",
        )
        for case in CASES
    ),
    *(
        ratio_target(
            f"{SCENARIO}.{case}.heap-vs-limit",
            case,
            f"{case}: JVM heap after GC vs its limit",
            f"{CASES[case]}: most JVM heap in use after a collection vs spark.driver.memory",
        )
        for case in CASES
    ),
    ratio_target(
        f"{SCENARIO}.data_source.worker-vs-bound",
        "data_source",
        "data source: worker RSS growth vs bound",
        "data source: peak RSS growth of each Python worker vs its bound",
        "<=",
        1.0,
        "memory",
    ),
    ratio_target(
        f"{SCENARIO}.data_source.workers-vs-bound",
        "data_source",
        "data source: all workers' RSS growth vs bound",
        "data source: RSS growth of all Python workers at once (sampled) vs parallelism x the bound",
    ),
    metric_target(
        f"{SCENARIO}.data_source.table-vs-heap",
        "data_source",
        "table_vs_heap_limit",
        "size of the table read (Arrow bytes) vs the driver heap limit",
        "x",
    ),
]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(_child(json.loads(sys.argv[2]))), flush=True)
    else:
        import argparse

        p = argparse.ArgumentParser(
            prog="python -m bench.scenarios.spark_memory",
            description="one case of the spark-memory scenario (python -m bench spark-memory runs both)",
        )
        p.add_argument("case", choices=list(CASES))
        p.add_argument("--memory-mib", type=int, default=256)
        p.add_argument("--data-dir", type=Path, default=ROOT / "bench" / ".data")
        a = p.parse_args()
        print(json.dumps(measure(a.data_dir.resolve(), a.memory_mib << 20, a.case), indent=1))
