"""Crash tests (issue 15, part 3): a writer process (crash_writer.py) commits a random mix of
appends, copy-on-write and merge-on-read deletes and updates, overwrites, upserts, partition
replacements, compactions, manifest rewrites and expiries to one table and is killed with SIGKILL
after a random delay, a few times in a row. After every kill the table loads, its rows are the
state before or after the operation in flight (never a mix), every snapshot reads and every
referenced file exists; at the end ``remove_orphan_files(older_than=now)`` leaves exactly the
referenced files. Small scale (``KILLS`` runs, a few seconds each); ``ICEFLOE_FAULTS=exhaustive``
runs 20."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from fault_harness import digest, files_under, referenced, rows

import icefloe

HERE = Path(__file__).resolve().parent
KILLS = 20 if os.environ.get("ICEFLOE_FAULTS", "").lower() == "exhaustive" else 3


def test_a_writer_killed_at_random_points_leaves_a_committed_state(tmp_path: Path) -> None:
    db, warehouse = tmp_path / "c.db", tmp_path / "warehouse"
    warehouse.mkdir()
    cat = icefloe.load_catalog("t", type="sql", uri=f"sqlite:///{db}", warehouse=str(warehouse))
    cat.create_namespace("ns")
    t = cat.create_table("ns.t", schema=rows().schema, partition_by=["cat"])
    t.append(rows(1, 2, 3, cat="c0"))
    committed = digest(t.scan().to_arrow().to_pylist())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    rnd = random.Random(15_3)
    in_flight_kills = 0
    for kill in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "crash_writer.py"), str(db), str(warehouse), str(kill + 1)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
            time.sleep(rnd.uniform(0.3, 1.5))
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        finally:
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate(timeout=60)
        pending = None
        for line in out.splitlines():
            word, _, value = line.partition(" ")
            if word == "done":
                committed, pending = value, None
            elif word == "begin":
                pending = value
        in_flight_kills += pending is not None
        t = cat.load_table("ns.t")  # (1) it loads
        now = digest(t.scan().to_arrow().to_pylist())
        assert now in (committed, pending), f"kill {kill}: rows are not a committed state"
        committed = now
        for s in t.metadata.snapshots:  # every snapshot reads, nothing referenced is missing
            t.scan(snapshot_id=s.snapshot_id).to_arrow()
        missing = sorted(p for p in referenced(t) if not os.path.exists(p))
        assert not missing, f"kill {kill}: referenced files are gone: {missing[:3]}"
    assert in_flight_kills, "no kill landed inside an operation"
    time.sleep(0.01)
    t.maintenance.remove_orphan_files(older_than=time.time_ns() // 1_000_000)
    assert files_under(t.location) == referenced(t)
    assert digest(t.refresh().scan().to_arrow().to_pylist()) == committed
