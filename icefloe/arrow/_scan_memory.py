"""Measuring the memory of a streaming scan (``DataScan.to_batches``) in a child process.

Peak RSS is a high-water mark of a whole process, so each measurement runs in a fresh
interpreter: it loads the table, plans and reads the first file alone (so that code pages,
thread pools and allocator arenas — fixed costs — are in the baseline, read from
``/proc/self/status``), then streams every batch, touching each (its row count and one column's
null count), and reports the peak RSS of the stream next to the baseline: ``VmHWM`` after
resetting it at the baseline (``/proc/self/clear_refs``), else ``ru_maxrss`` (whose peak may
then predate the stream: an overestimate). Used by
``bench/scenarios/small_files.py`` (a table of a few GB) and
``tests/table/test_batches_memory.py`` (a small one); the bound they check is
:func:`icefloe.arrow._scan_groups.memory_bound`.

Linux only (``/proc``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

__all__ = ["measure_stream"]

_CHILD = r"""
import json, resource, sys
def status(key="VmRSS:"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0
rss = status
args = json.loads(sys.argv[1])
import pyarrow as pa
import icefloe
import icefloe.arrow._scan_groups as groups
if args.get("grouped_max_bytes") is not None:
    groups.GROUPED_FILE_MAX_BYTES = args["grouped_max_bytes"]
cat = icefloe.load_catalog(args["catalog_name"], **args["catalog"])
table = cat.load_table(args["table"])
scan = table.scan(options={k: str(v) for k, v in args["options"].items()})
tasks = scan.plan_files()
# Warm up on the first file alone (code pages, thread pools, allocator arenas: fixed costs).
opts = scan._read_options()
for _ in groups.stream_batches(table.io, tasks[:1], opts):
    pass
pa.default_memory_pool().release_unused()
baseline = rss()
peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:  # reset the high-water mark (VmHWM) to the current RSS: the peak of the stream alone
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    hwm_reset = True
except OSError:
    hwm_reset = False
rows = nulls = batches = 0
max_batch = 0
samples = []
reader = scan.to_batches()
for batch in reader:
    rows += batch.num_rows
    nulls += batch.column(0).null_count
    batches += 1
    max_batch = max(max_batch, batch.nbytes)
    if batches % 8 == 0:
        samples.append((rss(), pa.total_allocated_bytes()))
peak = status("VmHWM:") if hwm_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"baseline": baseline, "peak_before": peak_before, "peak": peak, "rows": rows,
                  "batches": batches, "hwm_reset": hwm_reset, "max_batch_bytes": max_batch,
                  "files": len(tasks),
                  "largest_file": max((t.file.file_size_in_bytes for t in tasks), default=0),
                  "arrow_pool": pa.default_memory_pool().backend_name,
                  "max_arrow_allocated": max((a for _, a in samples), default=0),
                  "rss_samples": [r for r, _ in samples][:: max(1, len(samples) // 20)]}))
"""


def measure_stream(
    catalog_name: str,
    catalog: dict[str, str],
    table: str,
    options: dict[str, Any],
    *,
    grouped_max_bytes: int | None = None,
    timeout: float = 600,
) -> dict[str, Any]:
    """Stream ``table`` (of the catalog ``catalog_name`` with ``catalog`` properties) with scan
    ``options`` in a child process; the child's baseline RSS, peak RSS and what it read."""
    args = {
        "catalog_name": catalog_name,
        "catalog": catalog,
        "table": table,
        "options": options,
        "grouped_max_bytes": grouped_max_bytes,
    }
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(args)],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["growth"] = result["peak"] - result["baseline"]
    return result
