"""Snapshot expiry: 1,000 snapshots over 10,000 files, icefloe (local threads, and Spark) vs
Iceberg Java 1.10 (``CALL expire_snapshots``, i.e. ``ExpireSnapshotsSparkAction``, and the core
``table.expireSnapshots()`` API) on Spark 3.5 in the oracle's environment.

The table (built once, cached under ``bench/.data/expire-v1``) is what a pipeline with a
retention job leaves behind: 1,000 appends of 10 files each (merge appends, as Java's writers
do: manifests merged once a list holds 100), then one delete of the oldest 5,000 files. Data
files are a few bytes each: expiry never reads them, but deletes them. Every round starts from
a fresh copy of it (outside the clock) at the same location and expires everything but the
current snapshot (``older_than`` = the build time, ``retain_last=1``): 1,000 manifest lists, the
manifests only they reach and 5,000 data files are deleted, on both sides.

Java runs in its own process (``bench/_java_expire.py``, the oracle venv's Python), after the
icefloe rounds, on the same table at the same location; the counts of deleted files are checked
equal to icefloe's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench._core import (
    Case,
    CaseResult,
    Contender,
    Context,
    Ratio,
    check_target,
    ratio_entry,
    ratio_target,
    run_case,
)

__all__ = ["run"]

SCENARIO = "expire"
SNAPSHOTS = 1000
FILES_PER_SNAPSHOT = 10
DELETED_FILES = 5000
ORACLE_PYTHON = (
    Path(os.environ.get("ORACLE_VENV", os.path.expanduser("~/.cache/icefloe-oracle/venv"))) / "bin" / "python"
)
NAME = "b.events"


def _build(root: Path) -> dict[str, Any]:
    """The template table under ``root/template`` (catalog and warehouse)."""
    import pyarrow as pa

    import icefloe
    from icefloe.manifest import DataFile, FileFormat

    cat = icefloe.load_catalog(
        "bench_expire",
        type="sql",
        uri=f"sqlite:///{root / 'template.db'}",
        warehouse=(root / "template").as_uri(),
    )
    cat.create_namespace("b")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("day", pa.int32())])
    t = cat.create_table(
        NAME,
        schema=schema,
        partition_by=["day"],
        properties={
            "commit.manifest-merge.enabled": "true",
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "5",
        },
    )
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    all_files: list[DataFile] = []
    for s in range(SNAPSHOTS):
        day = s // FILES_PER_SNAPSHOT
        files = []
        for j in range(FILES_PER_SNAPSHOT):
            relative = f"day={day}/{s:05d}-{j}-{uuid.uuid4().hex[:8]}.parquet"
            p = data_dir / relative
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"PAR1")
            files.append(
                DataFile(
                    file_path=f"{t.location}/data/{relative}",  # Iceberg paths are not URI-encoded
                    file_format=FileFormat.PARQUET,
                    partition=(day,),
                    record_count=1,
                    file_size_in_bytes=4,
                )
            )
        with t.transaction() as tx:
            tx.append_files(files)
        all_files += files
    with t.transaction() as tx:
        tx.delete_files([f.file_path for f in all_files[:DELETED_FILES]])
    t.refresh()
    older_than = t.current_snapshot().timestamp_ms  # type: ignore[union-attr]
    cat.close()
    return {"metadata_location": t.metadata_location, "older_than": older_than, "location": t.location}


def _template(ctx: Context) -> tuple[Path, dict[str, Any]]:
    root = (ctx.data_dir / "expire-v1").resolve()
    ready = root / "TEMPLATE.json"
    if not ready.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t0 = time.perf_counter()
        info = _build(root)
        ready.write_text(json.dumps(info))
        ctx.say(
            f"    built {SNAPSHOTS:,} snapshots over {SNAPSHOTS * FILES_PER_SNAPSHOT:,} files in "
            f"{time.perf_counter() - t0:.0f}s"
        )
    return root, json.loads(ready.read_text())


def _restore(pristine: Path, warehouse: Path) -> None:
    """A fresh copy of the template's warehouse at its own place (the same location every round:
    the metadata holds absolute paths)."""
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.copytree(pristine, warehouse)


def _java(ctx: Context, root: Path, info: dict[str, Any]) -> dict[str, Any] | str:
    if not ORACLE_PYTHON.exists():
        return f"oracle venv not found at {ORACLE_PYTHON}"
    script = Path(__file__).resolve().parent.parent / "_java_expire.py"
    args = [
        str(ORACLE_PYTHON),
        str(script),
        str(root / "template"),
        info["metadata_location"],
        str(info["older_than"]),
        str(ctx.work_dir / "java"),
        "--repeat",
        str(ctx.repeat),
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=7200)
    if proc.returncode != 0:
        return f"Iceberg Java run failed: {proc.stderr.strip().splitlines()[-3:]}"
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def run(ctx: Context) -> list[CaseResult]:
    import icefloe

    root, info = _template(ctx)
    template_wh = root / "template"
    work_root = ctx.work_dir / "expire"
    work_root.mkdir(parents=True, exist_ok=True)
    # the table lives at the template's own path (absolute paths in its metadata): each round
    # moves the template aside and restores a fresh copy in its place
    pristine = work_root / "pristine"
    if not pristine.exists():
        shutil.copytree(template_wh, pristine)
    spark = _spark(ctx)
    counts: dict[str, dict[str, int]] = {}

    def restore() -> None:
        _restore(pristine, template_wh)
        db = work_root / "round.db"
        db.unlink(missing_ok=True)
        cat = icefloe.load_catalog(
            "bench_expire_round", type="sql", uri=f"sqlite:///{db}", warehouse=template_wh.as_uri()
        )
        cat.create_namespace("b")
        cat.register_table(NAME, info["metadata_location"])
        state["catalog"] = cat

    state: dict[str, Any] = {}

    def expire(use_spark: bool) -> dict[str, Any]:
        t = state["catalog"].load_table(NAME)
        r = t.maintenance.expire_snapshots(
            older_than=info["older_than"], retain_last=1, spark=spark if use_spark else None
        )
        c = {
            "snapshots": len(r.expired_snapshot_ids),
            "data_files": r.deleted_data_files_count,
            "manifests": r.deleted_manifests_count,
            "manifest_lists": r.deleted_manifest_lists_count,
        }
        counts["icefloe-spark" if use_spark else "icefloe"] = c
        return c

    contenders = [Contender("icefloe", lambda: expire(False), setup=restore)]
    if spark is not None:
        contenders.append(Contender("icefloe-spark", lambda: expire(True), setup=restore))
    case = Case(
        SCENARIO,
        "expire_1000_snapshots",
        f"expire {SNAPSHOTS:,} snapshots over {SNAPSHOTS * FILES_PER_SNAPSHOT:,} files "
        f"({DELETED_FILES:,} data files and every old manifest list deleted)",
        contenders,
        [Ratio("expire: icefloe on Spark vs local", "icefloe-spark", "icefloe", "time")]
        if spark is not None
        else [],
    )
    try:
        result = run_case(ctx, case)
    finally:
        if spark is not None:
            spark.stop()
        _restore(pristine, template_wh)  # the cache stays usable
    ctx.say("    Iceberg Java on Spark 3.5 (oracle venv, own process) ...")
    java = _java(ctx, root, info)
    _restore(pristine, template_wh)
    if isinstance(java, str):
        result.metrics["java"] = java
        return [result]
    import statistics

    for key in ("java_procedure", "java_core"):
        times = java["times_s"].get(key)
        if times:
            result.times_s[key] = times
            result.median_s[key] = statistics.median(times)
    for subject in ("icefloe", "icefloe-spark"):
        if subject not in result.median_s:
            continue
        for base, label in (
            ("java_procedure", "CALL expire_snapshots"),
            ("java_core", "core expireSnapshots()"),
        ):
            if base in result.median_s:
                result.ratios.append(
                    ratio_entry(
                        Ratio(f"expire: {subject} vs Iceberg Java {label}", subject, base, "time"),
                        result.median_s,
                    )
                )
    java_counts = java.get("counts", {})
    result.metrics["counts"] = {**counts, **java_counts}
    ours = counts.get("icefloe", {})
    theirs = java_counts.get("java_procedure", {})
    same = bool(ours) and all(
        ours.get(k) == theirs.get(k) for k in ("data_files", "manifests", "manifest_lists")
    )
    result.checks.append(
        {
            "label": "same files deleted as Iceberg Java's expire_snapshots",
            "met": same,
            "detail": f"icefloe {ours}, Java {theirs}",
        }
    )
    return [result]


def _spark(ctx: Context) -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = str(ctx.options.get("spark_master", "local[2]"))
    spark = (
        SparkSession.builder.master(master)
        .appName("icefloe-bench-expire")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# The scoreboard's rows (bench/scoreboard.py) and bench/README.md's targets table.
_CASE = "expire_1000_snapshots"
TARGETS = [
    ratio_target(
        f"expire.{_CASE}.{key}-vs-java-{java}",
        _CASE,
        f"expire: {subject} vs Iceberg Java {label}",
        f"expire 1,000 snapshots {where}: time vs Java 1.10 {label}",
        measure="time",
    )
    for subject, key, where in (("icefloe", "local", "locally"), ("icefloe-spark", "spark", "on Spark"))
    for java, label in (("call", "CALL expire_snapshots"), ("core", "core expireSnapshots()"))
] + [
    ratio_target(
        f"expire.{_CASE}.spark-vs-local",
        _CASE,
        "expire: icefloe on Spark vs local",
        "expire on Spark vs locally: time",
        measure="time",
    ),
    check_target(
        f"expire.{_CASE}.same-as-java",
        _CASE,
        "same files deleted as Iceberg Java's expire_snapshots",
        "the same files deleted as Iceberg Java 1.10",
    ),
]
