"""Beyond one machine: the same data source code with executors in separate processes.

Spark's ``local-cluster[2,1,1024]`` master runs a standalone master and two workers inside the
driver JVM and launches every executor as its own JVM (``CoarseGrainedExecutorBackend``) with its
own Python workers, exactly as on a real cluster, only on loopback. The job runs in a subprocess
(``cluster_job.py``) because the suite's shared session is ``local[2]`` and a JVM holds one
SparkContext. Asserted: every data file was created by a Python process whose ancestry contains an
executor JVM (not the driver), every manifest and metadata file on the driver side (its Python
process, or the Python worker of the driver JVM that runs the data source's commit), one append
snapshot with all rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def _executor_of(rec: dict[str, Any]) -> str | None:
    """The ``--executor-id`` of the executor JVM among the creating process's ancestors."""
    for proc in rec["ancestry"]:
        cmd = proc["cmd"].split()
        if EXECUTOR_MAIN in cmd and "--executor-id" in cmd:
            return str(cmd[cmd.index("--executor-id") + 1])
    return None


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("local_cluster")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    # a new session group: killing it on timeout takes the executor JVMs and workers along
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "cluster_job.py"), str(workdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        pytest.fail(f"local-cluster job timed out\n{out[-3000:]}\n{err[-5000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    if proc.returncode != 0:
        pytest.fail(f"local-cluster job failed (exit {proc.returncode})\n{out[-3000:]}\n{err[-8000:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def test_executors_write_the_data_files(cluster_run: dict[str, Any]) -> None:
    data = [r for r in cluster_run["outputs"] if r["location"].endswith(".parquet")]
    assert data, "no data file was written through the table's FileIO"
    driver = cluster_run["driver_pid"]
    executors = {_executor_of(r) for r in data}
    assert None not in executors, [r["ancestry"] for r in data if _executor_of(r) is None][:1]
    assert all(r["pid"] != driver for r in data)
    # bucket(4, id) over 4 input partitions on 2 executors: both take part
    assert len(executors) == 2, executors


def _on_driver(rec: dict[str, Any], run: dict[str, Any]) -> bool:
    """The driver's Python process, or a Python worker of the driver JVM (Spark runs a Python data
    source's ``commit`` there), never anything under an executor."""
    pids = [p["pid"] for p in rec["ancestry"]]
    return _executor_of(rec) is None and (rec["pid"] == run["driver_pid"] or run["driver_jvm_pid"] in pids)


def test_driver_writes_metadata_and_commits_once(cluster_run: dict[str, Any]) -> None:
    meta = [r for r in cluster_run["outputs"] if not r["location"].endswith(".parquet")]
    assert meta, "no manifest or metadata file was recorded"
    assert all(_on_driver(r, cluster_run) for r in meta), [r for r in meta if not _on_driver(r, cluster_run)][
        :1
    ]
    assert any(r["location"].endswith(".avro") for r in meta), "the commit wrote no manifest"
    snaps = cluster_run["snapshots"]
    assert [s["operation"] for s in snaps] == ["append"]
    summary = snaps[0]["summary"]
    n_data = sum(1 for r in cluster_run["outputs"] if r["location"].endswith(".parquet"))
    assert int(summary["added-records"]) == 20_000
    assert int(summary["added-data-files"]) == n_data


def test_executors_read_back_every_row(cluster_run: dict[str, Any]) -> None:
    assert cluster_run["rows"] == 20_000
    assert cluster_run["sum_id"] == sum(range(20_000))
    assert cluster_run["groups"] == 7
