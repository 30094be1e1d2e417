"""Scan planning on the driver vs on Spark executors, by the number of manifests a scan reads.

    python -m bench.spark_planning [--manifests 100,1000,5000] [--repeat N] [--master local[2]]

Tables: the planning scenario's metadata-only table (``bench/scenarios/planning.py``: identity
partitions, 10 files per manifest, one manifest per partition; the data files do not exist and
planning never opens them), one per manifest count, built once under ``--workdir``. The scan has
the filter ``id >= 0`` so that every manifest survives partition-summary pruning and is read.

Contenders, in alternating order each round (local first on even rounds):
- local: ``plan_files`` on the driver (manifests read by its thread pool), icefloe's manifest
  caches cleared first, so every manifest is decoded;
- distributed: ``plan_files_distributed(planning="distributed")``: the driver reads the manifest
  list, Spark tasks read and filter the manifests and return compact records, the driver builds
  the tasks (residuals, delete index). The driver's caches are cleared, and a Spark job clears the
  Python workers' caches first (best effort: it reaches the workers that run it; with 2 cores and
  worker reuse those are the workers that plan).

``--latency-ms 20`` reads the manifests through :class:`LatencyFileIO` (the local file system with
a wait before each file is opened, as an object store's time to first byte), on the driver and in
the Spark tasks alike (they load it by the table's ``io-impl`` property).

Both give the same task list (checked every round). Reported: the median wall time of each, the
ratio distributed / local, and the crossover (the smallest count where distributed is faster).
Results go to ``bench/results/spark_planning-<time>.json``; never timed inside the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from icefloe.io.local import LocalFileIO

__all__ = ["main"]

FILTER = "id >= 0"
LATENCY = "bench.latency-ms"


class LatencyFileIO(LocalFileIO):
    """The local file system, waiting ``bench.latency-ms`` before each file is opened for reading."""

    def new_input(self, location: str) -> Any:
        time.sleep(float(self.properties.get(LATENCY, "0")) / 1000)
        return super().new_input(location)


def _clear_caches() -> None:
    # icefloe imports only: this also runs in Spark's Python workers, which may not see bench/
    from icefloe.manifest.manifest_list import clear_manifest_list_cache
    from icefloe.manifest.reader import clear_manifest_cache

    clear_manifest_list_cache()
    clear_manifest_cache()


def _clear_worker_caches(spark: Any) -> None:
    sc = spark.sparkContext
    n = sc.defaultParallelism * 2
    sc.parallelize(range(n), n).foreach(lambda _: _clear_caches())


def _table(workdir: Path, manifests: int, latency_ms: float = 0) -> Any:
    import icefloe
    from bench.data import catalog_properties
    from bench.scenarios.planning import _build

    root = workdir / f"m{manifests}"
    ready = root / "READY"
    if not ready.exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t0 = time.perf_counter()
        _build(root, manifests)
        ready.write_text("ok")
        print(f"  built {manifests:,} manifests in {time.perf_counter() - t0:.1f}s", flush=True)
    from icefloe.table import Table

    loaded = icefloe.load_catalog("bench_plan", **catalog_properties(root)).load_table("b.many_files")
    if not latency_ms:
        return loaded
    # the Spark tasks import this module by name (PYTHONPATH is set in run())
    props = {
        **loaded.io.properties,
        "io-impl": "bench.spark_planning.LatencyFileIO",
        LATENCY: str(latency_ms),
    }
    return Table(
        loaded.identifier, loaded.metadata, loaded.metadata_location, LatencyFileIO(props), loaded.catalog
    )


def _measure(spark: Any, table: Any, repeat: int) -> dict[str, Any]:
    from icefloe.spark._distributed_planning import plan_files_distributed

    scan = table.scan(row_filter=FILTER)

    def local() -> list[Any]:
        _clear_caches()
        t0 = time.perf_counter()
        tasks = scan.plan_files()
        return [time.perf_counter() - t0, tasks]

    def distributed() -> list[Any]:
        _clear_caches()
        _clear_worker_caches(spark)
        t0 = time.perf_counter()
        tasks, _ = plan_files_distributed(
            spark,
            table.io,
            table.metadata,
            scan.snapshot(),
            scan.row_filter,
            schema=scan.schema(),
            planning="distributed",
        )
        return [time.perf_counter() - t0, tasks]

    times: dict[str, list[float]] = {"local": [], "distributed": []}
    # one untimed round warms up the Python workers (imports) and the page cache
    for r in range(repeat + 1):
        order = [("local", local), ("distributed", distributed)]
        if r % 2 == 1:
            order.reverse()
        got = {name: fn() for name, fn in order}
        if got["local"][1] != got["distributed"][1]:
            raise AssertionError("distributed planning planned other tasks than local planning")
        if r > 0:
            for name in times:
                times[name].append(got[name][0])
        status = "warm-up" if r == 0 else f"round {r}/{repeat}"
        print(
            f"    {status}: local {got['local'][0]:.3f}s, distributed {got['distributed'][0]:.3f}s "
            f"({len(got['local'][1]):,} files)",
            flush=True,
        )
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "files": len(got["local"][1]),
        "times_s": times,
        "median_s": med,
        "ratio_distributed_over_local": med["distributed"] / med["local"],
    }


def run(counts: list[int], latencies: list[float], repeat: int, master: str, workdir: Path) -> dict[str, Any]:
    from icefloe.spark.session import spark_session

    workdir.mkdir(parents=True, exist_ok=True)
    for n in counts:
        _table(workdir, n)  # built before Spark starts
    root = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    spark = spark_session(master, "icefloe-bench-planning")
    results: dict[str, dict[str, Any]] = {}
    crossover: dict[str, int | None] = {}
    try:
        spark.sparkContext.setLogLevel("ERROR")
        for latency in latencies:
            key = f"{latency:g}ms"
            results[key] = {}
            for n in counts:
                print(f"  {n:,} manifests, {latency:g} ms before each file opened", flush=True)
                results[key][str(n)] = _measure(spark, _table(workdir, n, latency), repeat)
            faster = [n for n in counts if results[key][str(n)]["ratio_distributed_over_local"] < 1.0]
            crossover[key] = min(faster) if faster else None
        spark_version = spark.version
        parallelism = spark.sparkContext.defaultParallelism
    finally:
        spark.stop()
    return {
        "master": master,
        "spark": spark_version,
        "default_parallelism": parallelism,
        "cpus": os.cpu_count(),
        "load_average_after": os.getloadavg(),
        "repeat": repeat,
        "filter": FILTER,
        "results": results,
        "crossover_manifests": crossover,
    }


def _report(res: dict[str, Any]) -> str:
    lines = [
        f"scan planning, Spark {res['spark']} {res['master']} ({res['cpus']} CPUs, load average after "
        f"{res['load_average_after'][0]:.1f}), filter {res['filter']!r}, median of {res['repeat']} "
        "alternating rounds",
        f"  {'latency':>8}{'manifests':>10}{'files':>9}{'local':>10}{'distributed':>13}{'dist/local':>12}",
    ]
    for latency, by_count in res["results"].items():
        for n, r in by_count.items():
            med = r["median_s"]
            lines.append(
                f"  {latency:>8}{int(n):>10,}{r['files']:>9,}{med['local']:>9.3f}s"
                f"{med['distributed']:>12.3f}s{r['ratio_distributed_over_local']:>12.2f}"
            )
    for latency, cross in res["crossover_manifests"].items():
        lines.append(
            f"  {latency}: distributed faster from {cross:,} manifests"
            if cross is not None
            else f"  {latency}: distributed was never faster at these counts"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.spark_planning", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    p.add_argument("--manifests", default="100,1000,5000", help="comma-separated manifest counts")
    p.add_argument(
        "--latency-ms", default="0", help="comma-separated waits before each file open (default 0)"
    )
    p.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5; plus one warm-up)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--workdir", type=Path, default=Path("bench/results/spark_planning-work"))
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    try:
        counts = sorted({int(x) for x in args.manifests.split(",") if x.strip()})
    except ValueError:
        p.error("--manifests takes comma-separated integers")
    if not counts or counts[0] < 1:
        p.error("--manifests needs positive counts")
    try:
        latencies = [float(x) for x in args.latency_ms.split(",") if x.strip()]
    except ValueError:
        p.error("--latency-ms takes comma-separated numbers")
    if not latencies or min(latencies) < 0:
        p.error("--latency-ms needs non-negative numbers")
    res = run(counts, latencies, args.repeat, args.master, args.workdir.resolve())
    print(_report(res))
    out = Path("bench/results") / f"spark_planning-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
