"""`DataScan.to_batches()` streams: peak RSS of a child process reading a table more than 10x
the documented bound stays under that bound (plus a fixed allowance for the interpreter's own
noise). Memory, not timing; Linux only (``/proc``, ``ru_maxrss``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import icefloe
from icefloe.arrow._scan_groups import memory_bound
from icefloe.arrow._scan_memory import measure_stream

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and ru_maxrss")

ROWS = 2_400_000  # ~36 bytes a row decoded: ~86 MB
BATCH_ROWS = 8_192
FILE_BYTES = 512 * 1024
# RSS the child may add beyond the Arrow memory the bound covers (allocator fragmentation and
# retention, arenas of threads started after the warm-up, Python objects): 25-40 MB measured
# here whatever the table's size.
ALLOWANCE = 48 * 1024 * 1024


def _batches():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
    for start in range(0, ROWS, 100_000):
        n = min(100_000, ROWS - start)
        s = pa.array(np.char.mod("%016x", rng.integers(0, 2**62, n)).astype(object))
        yield pa.record_batch(
            [pa.array(np.arange(start, start + n, dtype=np.int64)), pa.array(rng.random(n)), s], schema=schema
        )


def test_to_batches_peak_rss_stays_under_the_documented_bound(tmp_path: Path) -> None:
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path / 'c.db'}", "warehouse": (tmp_path / "wh").as_uri()}
    cat = icefloe.load_catalog("memory_test", **props)
    cat.create_namespace("m")
    t = cat.create_table(
        "m.t",
        schema=next(_batches()).schema,
        properties={
            "write.target-file-size-bytes": str(FILE_BYTES),
            "write.parquet.row-group-size-bytes": str(FILE_BYTES),
        },
    )
    t.append(_batches())
    files = t.scan().plan_files()
    largest = max(f.file.file_size_in_bytes for f in files)
    cat.close()

    options = {"read.batch-size": BATCH_ROWS, "read.fragment-readahead": 2, "read.batch-readahead": 2}
    r = measure_stream("memory_test", props, "m.t", options, timeout=120)
    assert r["rows"] == ROWS and r["files"] == len(files) > 20
    batch_bytes = BATCH_ROWS * 36
    bound = memory_bound(batch_bytes, largest, 2, 2)
    decoded = ROWS * 36
    assert decoded > 10 * bound  # the table is far larger than what may be held at once
    assert r["growth"] <= bound + ALLOWANCE, r
