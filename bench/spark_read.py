"""Column pruning in Spark: the icefloe data source vs the fast path vs raw ``spark.read.parquet``.

    python -m bench.spark_read --lineitem /path/lineitem.parquet [--repeat 3] [--master local[2]]
    python -m bench.spark_read --scale 0.5          # generates lineitem with tpchgen-cli (on PATH)

Spark's Python data source API does not push the selected columns down, so the data source
(a) reads every column with pyarrow and ships it through Arrow into the JVM, while the fast path
(b) ``icefloe.spark.read`` plans in Python and lets Spark's vectorized Parquet reader resolve the
projected columns by field id. Both are compared with raw ``spark.read.parquet`` over the very
same data files. Workloads end in Spark's ``noop`` sink (every selected column materialised):

- narrow: 3 columns, one year of ``l_shipdate`` (a metrics-prunable filter on sorted data is not
  assumed; lineitem is unsorted, so every file is read);
- wide: every column, no filter.

Each round runs the three contenders in rotating order; the median of ``--repeat`` rounds is
printed (after one warm-up round). Never timed inside the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["main"]

NARROW_COLUMNS = ["l_orderkey", "l_quantity", "l_shipdate"]
NARROW_WHERE = "l_shipdate >= '1995-01-01' and l_shipdate < '1996-01-01'"
NARROW_SQL = "l_shipdate >= DATE'1995-01-01' and l_shipdate < DATE'1996-01-01'"


def _lineitem(args: argparse.Namespace, work: Path) -> Path:
    if args.lineitem:
        return Path(args.lineitem)
    out = work / "tpch"
    subprocess.run(
        ["tpchgen-cli", "parquet", "-s", str(args.scale), "--tables=lineitem", f"--output-dir={out}"],
        check=True,
    )
    return out / "lineitem.parquet"


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_read")
    parser.add_argument("--lineitem", help="an existing lineitem Parquet file")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import icefloe
    import icefloe.spark

    work = Path(tempfile.mkdtemp(prefix="icefloe-spark-read-"))
    try:
        source = _lineitem(args, work)
        data = pq.read_table(source)
        # string_view is not a type Spark reads; the table stores plain strings anyway.
        plain = pa.schema(
            [f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f for f in data.schema]
        )
        data = data.cast(plain)
        (work / "wh").mkdir()
        uri, warehouse = f"sqlite:///{work / 'catalog.db'}", (work / "wh").as_uri()
        catalog = icefloe.load_catalog("bench", type="sql", uri=uri, warehouse=warehouse)
        catalog.create_namespace("tpch")
        table = catalog.create_table(
            "tpch.lineitem", data.schema, properties={"write.target-file-size-bytes": str(32 * 1024 * 1024)}
        )
        table.append(data)
        files = [t.file.file_path for t in table.scan().plan_files()]
        rows = data.num_rows
        del data

        spark = (
            SparkSession.builder.master(args.master)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "2g")
            .config("spark.icefloe.catalog.bench.uri", uri)
            .config("spark.icefloe.catalog.bench.warehouse", warehouse)
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        icefloe.spark.register(spark)

        def noop(df: Any) -> None:
            df.write.format("noop").mode("overwrite").save()

        source_opts = {"catalog": "bench"}
        contenders: dict[str, dict[str, Callable[[], None]]] = {
            "narrow": {
                "raw parquet": lambda: noop(
                    spark.read.parquet(*files).select(*NARROW_COLUMNS).filter(NARROW_SQL)
                ),
                "(a) data source": lambda: noop(
                    spark.read.format("icefloe")
                    .options(**source_opts)
                    .load("tpch.lineitem")
                    .select(*NARROW_COLUMNS)
                    .filter(NARROW_SQL)
                ),
                "(b) fast path": lambda: noop(
                    icefloe.spark.read(
                        spark, "tpch.lineitem", columns=NARROW_COLUMNS, where=NARROW_WHERE, catalog="bench"
                    )
                ),
            },
            "wide": {
                "raw parquet": lambda: noop(spark.read.parquet(*files)),
                "(a) data source": lambda: noop(
                    spark.read.format("icefloe").options(**source_opts).load("tpch.lineitem")
                ),
                "(b) fast path": lambda: noop(icefloe.spark.read(spark, "tpch.lineitem", catalog="bench")),
            },
        }
        # correctness first: the three agree on the narrow workload
        counts = {
            "raw": spark.read.parquet(*files).filter(NARROW_SQL).count(),
            "source": spark.read.format("icefloe")
            .options(**source_opts)
            .load("tpch.lineitem")
            .filter(NARROW_SQL)
            .count(),
            "fast": icefloe.spark.read(
                spark, "tpch.lineitem", columns=NARROW_COLUMNS, where=NARROW_WHERE, catalog="bench"
            ).count(),
        }
        assert len(set(counts.values())) == 1, counts

        print(f"lineitem: {rows:,} rows in {len(files)} files; master {args.master}; load {os.getloadavg()}")
        for workload, fns in contenders.items():
            names = list(fns)
            for name in names:
                fns[name]()  # warm-up
            times: dict[str, list[float]] = {n: [] for n in names}
            for r in range(args.repeat):
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    times[name].append(_timed(fns[name]))
            raw = statistics.median(times["raw parquet"])
            for name in names:
                med = statistics.median(times[name])
                print(
                    f"{workload:7s} {name:16s} median {med:7.2f} s  ({med / raw:5.2f}x raw)  "
                    f"rounds {[round(x, 2) for x in times[name]]}"
                )
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
