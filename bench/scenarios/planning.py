"""Planning on a table with many small files: icefloe ``plan_files`` vs PyIceberg 0.12's.

The table (identity-partitioned on ``p``, 10 files per manifest, manifest ``i`` holding only
partition ``p = i``, file ``k`` with ``id`` bounds ``[1000k, 1000k + 999]``) is built directly:
manifests written with icefloe's ``ManifestWriter``, one manifest list, one snapshot committed
through the catalog's compare-and-swap. The data files do not exist; planning never opens them.
PyIceberg reads the same metadata file through ``StaticTable``.

Cases: a selective filter (one partition: one manifest can match) and a full one (``id >= 0``:
every manifest and file). Besides the time, icefloe's opened files are counted
(``icefloe.testing.CountingFileIO``): planning must open the manifest list once and exactly the
manifests whose partition summaries can match.
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench._core import Case, CaseResult, Check, Contender, Context, Ratio, run_case
from bench.data import catalog_properties, clear_icefloe_caches

if TYPE_CHECKING:
    from icefloe.io import FileIO

__all__ = ["run"]

SCENARIO = "planning"
FILES_PER_MANIFEST = 10
SELECTED_PARTITION = 417


def _build(root: Path, manifests: int, files_per_manifest: int = FILES_PER_MANIFEST) -> tuple[str, str]:
    """Create the table; returns (catalog uri root, metadata location). Manifest ``m`` holds the
    files of partition ``p = m``; file ``k`` has ``id`` bounds ``[1000k, 1000k + 999]``."""
    import pyarrow as pa

    import icefloe
    from icefloe.manifest import DataFile, FileFormat, ManifestWriter, write_manifest_list
    from icefloe.spec.snapshot import Operation, Snapshot, SnapshotRef, Summary
    from icefloe.spec.types import LongType
    from icefloe.spec.updates import AddSnapshot, AssertRefSnapshotId, SetSnapshotRef
    from icefloe.spec.values import to_bytes

    cat = icefloe.load_catalog("bench_plan", **catalog_properties(root))
    cat.create_namespace("b")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int32()), pa.field("v", pa.string())])
    t = cat.create_table("b.many_files", schema=schema, partition_by=["p"])
    md = t.metadata
    ice_schema, spec = md.schema(), md.spec()
    id_field = ice_schema.find_field("id").field_id
    snapshot_id = uuid.uuid4().int & ((1 << 63) - 1)
    meta_dir = f"{md.location}/metadata"
    data_dir = f"{md.location}/data"
    written = []
    for m in range(manifests):
        w = ManifestWriter(t.io, f"{meta_dir}/bench-m{m}.avro", spec, ice_schema, snapshot_id)
        with w:
            for j in range(files_per_manifest):
                k = m * files_per_manifest + j
                w.add(
                    DataFile(
                        file_path=f"{data_dir}/p={m}/f{k}.parquet",
                        file_format=FileFormat.PARQUET,
                        partition=(m,),
                        record_count=1000,
                        file_size_in_bytes=20_000,
                        value_counts={id_field: 1000},
                        null_value_counts={id_field: 0},
                        lower_bounds={id_field: to_bytes(LongType(), 1000 * k)},
                        upper_bounds={id_field: to_bytes(LongType(), 1000 * k + 999)},
                    )
                )
        written.append(w.close())
    list_path = f"{meta_dir}/snap-{snapshot_id}-1-bench.avro"
    seq = md.next_sequence_number()
    write_manifest_list(t.io, list_path, snapshot_id, None, seq, written)
    n_files = manifests * files_per_manifest
    snap = Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=None,
        sequence_number=seq,
        timestamp_ms=int(time.time() * 1000),
        manifest_list=list_path,
        summary=Summary(
            Operation.APPEND,
            {
                "added-data-files": str(n_files),
                "added-records": str(n_files * 1000),
                "total-data-files": str(n_files),
                "total-records": str(n_files * 1000),
            },
        ),
        schema_id=md.current_schema_id,
    )
    _, location = cat.commit_table(
        t.identifier,
        [AssertRefSnapshotId("main", None)],
        [AddSnapshot(snap), SetSnapshotRef("main", SnapshotRef(snapshot_id))],
    )
    cat.close()
    return str(root), location


def _table(ctx: Context, manifests: int) -> str:
    root = ctx.data_dir / f"planning-m{manifests}"
    ready = root / "METADATA_LOCATION"
    if not ready.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t0 = time.perf_counter()
        _, location = _build(root, manifests)
        ready.write_text(location)
        ctx.say(
            f"    built {manifests * FILES_PER_MANIFEST:,} files in {manifests:,} manifests in "
            f"{time.perf_counter() - t0:.1f}s"
        )
    return ready.read_text().strip()


def run(ctx: Context) -> list[CaseResult]:
    from pyiceberg.table import StaticTable

    import icefloe
    from icefloe.table import Table
    from icefloe.testing import CountingFileIO

    manifests = int(ctx.options.get("planning_manifests", 1000))
    location = _table(ctx, manifests)
    root = ctx.data_dir / f"planning-m{manifests}"
    cat = icefloe.load_catalog("bench_plan", **catalog_properties(root))
    loaded = cat.load_table("b.many_files")
    counting = CountingFileIO(loaded.io)
    ice = Table(loaded.identifier, loaded.metadata, loaded.metadata_location, cast("FileIO", counting), cat)
    assert loaded.metadata_location == location
    py_table = StaticTable.from_metadata(location)
    selected = min(SELECTED_PARTITION, manifests - 1)

    cases = [
        ("selective", f"p = {selected}", 1, FILES_PER_MANIFEST),
        ("full", "id >= 0", manifests, manifests * FILES_PER_MANIFEST),
    ]
    results = []
    for name, row_filter, expect_manifests, expect_files in cases:

        def ice_plan(f: str = row_filter) -> dict[str, Any]:
            counting.reset()
            tasks = ice.scan(row_filter=f).plan_files()
            return {"files": len(tasks), "opened": dict(counting.opened)}

        def py_plan(f: str = row_filter) -> dict[str, Any]:
            return {"files": sum(1 for _ in py_table.scan(row_filter=f).plan_files())}

        def evaluate(
            m: dict[str, dict[str, Any]], em: int = expect_manifests, ef: int = expect_files
        ) -> tuple[list[Check], dict[str, Any]]:
            opened: dict[str, int] = m["icefloe"].get("opened", {})
            lists = sum(1 for p in opened if "/snap-" in p)
            manifests_opened = sum(1 for p in opened if "/bench-m" in p)
            twice = sorted(p for p, n in opened.items() if n > 1)
            checks = [
                Check(
                    "files opened = manifest list + matching manifests (each once)",
                    lists == 1 and manifests_opened == em and not twice and len(opened) == 1 + em,
                    f"opened {len(opened)} files: {lists} manifest list, {manifests_opened} manifests "
                    f"(expected 1 + {em}); opened twice: {len(twice)}; the metadata file is read "
                    "once when the table is loaded",
                ),
                Check(
                    "same files planned as PyIceberg",
                    m["icefloe"].get("files") == m["pyiceberg"].get("files") == ef,
                    f"icefloe {m['icefloe'].get('files')}, pyiceberg {m['pyiceberg'].get('files')}, "
                    f"expected {ef}",
                ),
            ]
            return checks, {"files_opened": len(opened), "manifests_opened": manifests_opened}

        case = Case(
            SCENARIO,
            name,
            f"plan_files, {manifests * FILES_PER_MANIFEST:,} files in {manifests:,} manifests, "
            f"filter {row_filter!r}",
            [
                Contender("icefloe", ice_plan),
                # The first plan of a snapshot in a process: icefloe's caches of decoded manifest
                # lists and manifests are empty.
                Contender("icefloe-cold", ice_plan, setup=clear_icefloe_caches),
                Contender("pyiceberg", py_plan),
            ],
            [
                Ratio(f"plan {name}: time vs PyIceberg", "icefloe", "pyiceberg", "time", "<=", 0.5),
                Ratio(
                    f"plan {name}, caches cleared: time vs PyIceberg",
                    "icefloe-cold",
                    "pyiceberg",
                    "time",
                    "<=",
                    0.5,
                ),
            ],
            evaluate=evaluate,
        )
        res = run_case(ctx, case)
        if not ctx.options.get("planning_no_fresh"):
            _add_fresh(ctx, res, root, name, row_filter, expect_files)
        results.append(res)
    cat.close()
    return results


def _fresh_run(side: str, root: Path, row_filter: str) -> dict[str, Any]:
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-m", "bench.scenarios.planning_fresh_child", side, str(root), row_filter],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _add_fresh(
    ctx: Context, res: CaseResult, root: Path, name: str, row_filter: str, expect_files: int
) -> None:
    """The same plan, each run in a fresh interpreter (a CLI, a Spark driver): icefloe and PyIceberg
    alternately, ``repeat`` rounds after one warm-up round (for the OS page cache). Each child
    times its import, its table load and its one ``plan_files`` apart; the ratio is on the plan,
    load + plan is reported beside it."""
    import statistics

    from bench._core import ratio_entry

    sides = ("icefloe", "pyiceberg")
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    for r in range(ctx.warmup + ctx.repeat):
        order = sides if r % 2 == 0 else sides[::-1]
        got = {s: _fresh_run(s, root, row_filter) for s in order}
        ctx.say(
            f"    fresh {'warm-up' if r < ctx.warmup else f'round {r - ctx.warmup + 1}/{ctx.repeat}'}: "
            + ", ".join(
                f"{s} import {got[s]['import_s'] * 1e3:.0f} ms, load {got[s]['load_s'] * 1e3:.1f} ms, "
                f"plan {got[s]['plan_s'] * 1e3:.1f} ms"
                for s in sides
            )
        )
        if r >= ctx.warmup:
            for s in sides:
                runs[s].append(got[s])
    for s in sides:
        plan = [x["plan_s"] for x in runs[s]]
        res.times_s[f"{s}-fresh"] = plan
        res.median_s[f"{s}-fresh"] = statistics.median(plan)
        res.cpu_s[f"{s}-fresh"] = [x["plan_cpu_s"] for x in runs[s]]
        res.median_cpu_s[f"{s}-fresh"] = statistics.median(res.cpu_s[f"{s}-fresh"])
        res.times_s[f"{s}-fresh-load+plan"] = [x["load_s"] + x["plan_s"] for x in runs[s]]
        res.median_s[f"{s}-fresh-load+plan"] = statistics.median(res.times_s[f"{s}-fresh-load+plan"])
        res.metrics[f"{s}_fresh_import_ms"] = round(
            statistics.median(x["import_s"] for x in runs[s]) * 1e3, 1
        )
        res.metrics[f"{s}_fresh_load_ms"] = round(statistics.median(x["load_s"] for x in runs[s]) * 1e3, 1)
    fresh = Ratio(
        f"plan {name}, fresh process: time vs PyIceberg",
        "icefloe-fresh",
        "pyiceberg-fresh",
        "time",
        "<=",
        0.5,
    )
    res.ratios.append(ratio_entry(fresh, res.median_s))
    res.ratios[-1]["cpu_value"] = fresh.value(res.median_cpu_s)
    # Reported beside the ratio (no target): load + plan, icefloe's as a multiple of PyIceberg's.
    res.metrics["fresh_load_plan_time_vs_pyiceberg"] = round(
        res.median_s["icefloe-fresh-load+plan"] / res.median_s["pyiceberg-fresh-load+plan"], 3
    )
    files = {s: {x["files"] for x in runs[s]} for s in sides}
    res.checks.append(
        {
            "label": "fresh processes plan the same files as PyIceberg",
            "met": files["icefloe"] == files["pyiceberg"] == {expect_files},
            "detail": (
                f"icefloe {sorted(files['icefloe'])}, pyiceberg {sorted(files['pyiceberg'])}, "
                f"expected {expect_files}"
            ),
        }
    )
