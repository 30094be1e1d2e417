"""A writer process killed with SIGKILL at random points of its commits, several times: the
table stays readable at every snapshot, and ``remove_orphan_files(older_than=now)`` then leaves
exactly the files the table references."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cleanup_checks import SCHEMA, assert_intact, files_under, referenced, rows

HERE = Path(__file__).resolve().parent
KILLS = 6


def test_orphans_of_killed_writers_are_removed_exactly(catalog: Any, tmp_path: Path) -> None:
    t = catalog.create_table("ns.t", schema=SCHEMA, partition_by=["cat"])
    t.append(rows(1, 2, cat="c0"))
    db = tmp_path / "c.db"
    warehouse = catalog.properties["warehouse"]
    rnd = random.Random(20261)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    for kill in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "killed_writer.py"), str(db), warehouse, str(kill + 1)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
            time.sleep(rnd.uniform(0.2, 1.5))
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)  # reaps it and closes the pipes
    t.refresh()
    assert_intact(t)
    left_over = files_under(t.location) - referenced(t)
    assert left_over, "the kills left no orphan behind: kill later in the commit path"
    time.sleep(0.01)
    result = t.maintenance.remove_orphan_files(older_than=time.time_ns() // 1_000_000)
    assert {os.path.normpath(p.removeprefix("file://")) for p in result} == left_over
    assert files_under(t.location) == referenced(t)
    assert_intact(t)
