"""The job of ``test_local_cluster.py``, run in its own process: Spark in ``local-cluster`` mode
(a master and workers inside the driver JVM; every executor a separate JVM with its own Python
workers), an icefloe write and read, and a record of which process created each file.

    python cluster_job.py WORKDIR  ->  prints one JSON line: {"driver_pid", "outputs", ...}

The record comes from ``PidRecordingFileIO`` (the catalog's ``io-impl``): every ``new_output``
appends the creating process and its ancestry to ``WORKDIR/pids/<pid>.jsonl``. Executors import
this module by name, so the job puts its directory on their ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icefloe.io.local import LocalFileIO, LocalOutputFile

PID_LOG_DIR = "test.pid-log-dir"


def _ancestry(pid: int) -> list[dict[str, Any]]:
    """(pid, command line) from ``pid`` up to init, read from /proc."""
    out: list[dict[str, Any]] = []
    while pid > 1 and len(out) < 12:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        out.append({"pid": pid, "cmd": cmd[:2000]})
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4, after the parenthesised name
    return out


class PidRecordingFileIO(LocalFileIO):
    """A LocalFileIO that remembers which process asked for each output file."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        super().__init__(properties)

    def new_output(self, location: str) -> LocalOutputFile:
        log_dir = Path(self.properties[PID_LOG_DIR])
        log_dir.mkdir(parents=True, exist_ok=True)
        rec = {"location": location, "pid": os.getpid(), "ancestry": _ancestry(os.getpid())}
        with open(log_dir / f"{os.getpid()}.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
        return super().new_output(location)


def main(workdir: Path) -> dict[str, Any]:
    import pyarrow as pa

    import icefloe
    import icefloe.spark
    from icefloe.spark.session import catalog_conf, spark_session

    props = {
        "type": "sql",
        "uri": f"sqlite:///{workdir / 'catalog.db'}",
        "warehouse": (workdir / "warehouse").as_uri(),
        "io-impl": "cluster_job.PidRecordingFileIO",
        PID_LOG_DIR: str(workdir / "pids"),
    }
    here = str(Path(__file__).resolve().parent)
    sys.path.insert(0, here)
    catalog = icefloe.load_catalog("cluster", **props)
    catalog.create_namespace("c")
    schema = pa.schema([("id", pa.int64()), ("grp", pa.string()), ("v", pa.float64())])
    catalog.create_table("c.t", schema=schema, partition_by=["bucket(4, id)"])

    spark = spark_session(
        "local-cluster[2,1,1024]",
        "icefloe-local-cluster-test",
        **catalog_conf("cluster", props),
        **{
            "spark.executorEnv.PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]),
            "spark.sql.shuffle.partitions": "4",
        },
    )
    try:
        icefloe.spark.register(spark)
        driver_jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        df = spark.range(0, 20_000, 1, 4).selectExpr(
            "id", "concat('g', cast(id % 7 as string)) as grp", "cast(id as double) / 3 as v"
        )
        df.write.format("icefloe").option("catalog", "cluster").mode("append").save("c.t")
        back = spark.read.format("icefloe").option("catalog", "cluster").load("c.t")
        agg = back.selectExpr("count(*) as n", "sum(id) as s", "count(distinct grp) as g").collect()[0]
    finally:
        spark.stop()
    t = catalog.load_table("c.t")
    outputs = []
    for p in sorted((workdir / "pids").glob("*.jsonl")):
        outputs += [json.loads(line) for line in p.read_text().splitlines()]
    return {
        "driver_pid": os.getpid(),
        "driver_jvm_pid": driver_jvm_pid,
        "rows": agg["n"],
        "sum_id": agg["s"],
        "groups": agg["g"],
        "snapshots": [
            {
                "id": s.snapshot_id,
                "operation": s.summary.operation.value,
                "summary": dict(s.summary.properties),
            }
            for s in t.snapshots()
        ],
        "outputs": outputs,
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]).resolve())))
