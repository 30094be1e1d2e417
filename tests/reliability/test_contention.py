"""Contention: many processes running mixed operations on one table for a fixed time.

Every worker process loops until its deadline over a random mix of

    append      rows with ids of its own (a merge append: commit.manifest-merge.enabled)
    delete      a range of the shared ids (merge-on-read)
    overwrite   one shared id replaced by a new row (copy-on-write, overwrite(where))
    update      a range of the shared ids, v = v + 1 (copy-on-write)

each called on the table itself (so row-level statements restart on conflicts), from a handle it
refreshes before each operation, with no coordination but the catalog's compare-and-swap.
Afterwards (the targets of issue 15):

- 0 failed appends: an append cannot conflict, it retries until the total timeout;
- every failure typed (an icefloe `ConflictError` or `CommitFailedError`);
- 0 lost or duplicated rows, and serializable results: every landed snapshot is in the table
  once, and a serial order of the landed operations explains every snapshot, checked step by
  step (``_serial_check.py``): the rows of each snapshot S_i (read by time travel) must equal the
  rows of S_(i-1) with the operation applied (its arguments are logged, its snapshot carries a
  ``stress.op`` summary property), or the operation must be movable to an earlier place of the
  serial order, not before the snapshot it started from, from where replaying it and every
  operation after it gives S_i. The first step that no serial order explains fails the test with
  the snapshot, the operation and the rows that differ.

  Why a move can be legal: commit order is not always the serial order. A delete whose every
  matched file matches wholly is committed by metadata (``DeleteFiles``), whose only check is
  that the files it removes are still there; it does not check for new data files in its range
  (test_validation.py's
  test_a_metadata_only_delete_has_a_serial_order_with_a_concurrent_append). An overwrite of an id
  that was absent when the delete read the table, committed first, is then kept by the delete:
  legal as "delete, then overwrite", since the overwrite removed nothing the delete removes (else
  the delete's file check fails) and reads nothing the delete changes. Every other statement here
  checks new data files in its filter (serializable), so only such moves are expected; the replay
  after the moved operation is what rejects a move that a later operation would have observed (an
  update of a row the moved delete removes, say). Replaying in commit order is kept as the figure
  ``replay_in_commit_order_matches``: False is no failure when the serial-order check passes.
- nothing left behind: no file under the table's location that its history does not reference.

In the default suite: 6 processes x 12 s on SQLite. On demand (``ICEFLOE_STRESS=1``): 16 processes x
5 minutes on SQLite and PostgreSQL (``ICEFLOE_STRESS_PROCESSES`` / ``ICEFLOE_STRESS_SECONDS``
override both). The figures are printed (``-s``) and recorded as the ``contention_figures`` property.
Workers are separate interpreters: this file run as a script.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The commit-protocol tests' operation helpers (tests/transaction/_model.py), for the test and the
# worker processes alike, and the serial-order check next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "transaction"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _model import (  # type: ignore[import-not-found]
    Row,
    arrow_rows,
    create_table,
    orphan_files,
    sequence_number_violations,
    table_rows,
)
from _serial_check import SnapshotReader, check_serial_order  # type: ignore[import-not-found]

FULL = os.environ.get("ICEFLOE_STRESS") == "1"
PROCESSES = int(os.environ.get("ICEFLOE_STRESS_PROCESSES", "16" if FULL else "6"))
SECONDS = float(os.environ.get("ICEFLOE_STRESS_SECONDS", "300" if FULL else "12"))
SHARED = 200  # ids 0..199 start in partition "s"; deletes, overwrites and updates aim at them
MIX = (("append", 0.5), ("delete", 0.2), ("overwrite", 0.15), ("update", 0.15))

PROPERTIES = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
    "commit.manifest-merge.enabled": "true",
    "commit.retry.num-retries": "8",
    "commit.retry.min-wait-ms": "10",
    "commit.retry.max-wait-ms": "1000",
    "commit.retry.total-timeout-ms": "600000",
    "commit.statement-restart.max-attempts": "5",
    # Keep every metadata file in the log, so "referenced by the history" covers all of them.
    "write.metadata.previous-versions-max": "100000",
}


# ---------------------------------------------------------------------- the operations
def plan_op(rng: random.Random, worker: int, counter: int) -> dict[str, Any]:
    kind = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX])[0]
    if kind == "append":
        n = rng.randint(1, 3)
        base = 1_000_000 * (worker + 1) + 10 * counter
        return {"kind": kind, "rows": [[base + i, f"p{worker}", counter] for i in range(n)]}
    lo = rng.randrange(SHARED)
    if kind == "overwrite":
        return {"kind": kind, "key": lo, "rows": [[lo, "s", 1000 * (worker + 1) + counter]]}
    return {"kind": kind, "lo": lo, "hi": lo + rng.randint(1, 8)}


def apply_model(rows: list[Row], op: dict[str, Any]) -> list[Row]:
    kind = op["kind"]
    if kind == "append":
        return rows + [tuple(r) for r in op["rows"]]  # type: ignore[misc]
    if kind == "delete":
        return [r for r in rows if not op["lo"] <= r[0] < op["hi"]]
    if kind == "overwrite":
        return [r for r in rows if r[0] != op["key"]] + [tuple(r) for r in op["rows"]]  # type: ignore[misc]
    if kind == "update":
        return [(r[0], r[1], r[2] + 1) if op["lo"] <= r[0] < op["hi"] else r for r in rows]
    raise AssertionError(kind)


def run_op(table: Any, op: dict[str, Any], tag: str = "") -> Any:
    """Run ``op`` on ``table``; its snapshot carries ``tag`` as the ``stress.op`` summary property."""
    import pyarrow.compute as pc

    props = {"stress.op": tag} if tag else None
    kind = op["kind"]
    if kind == "append":
        return table.append(arrow_rows([tuple(r) for r in op["rows"]]), props)
    if kind == "delete":
        return table.delete(f"id >= {op['lo']} and id < {op['hi']}", props)
    if kind == "overwrite":
        return table.overwrite(
            arrow_rows([tuple(r) for r in op["rows"]]), where=f"id = {op['key']}", snapshot_properties=props
        )
    return table.update(
        f"id >= {op['lo']} and id < {op['hi']}", set={"v": pc.field("v") + 1}, snapshot_properties=props
    )


# ---------------------------------------------------------------------- a worker process
def worker_main(args: dict[str, Any]) -> None:
    import icefloe
    from icefloe.errors import IcefloeError
    from icefloe.table.transaction import Transaction

    # Count every commit (a restarted statement commits more than once) and its retries.
    counts = {"commits": 0, "attempts": 0, "retries": 0}
    original_commit = Transaction.commit

    # The snapshot the last commit's statement attempt planned on (a restart plans on a newer one).
    planned_on: list[int | None] = [None]

    def counting_commit(self: Transaction) -> Any:
        counts["commits"] += 1
        planned_on[0] = self._starting_snapshot(self.branch)
        try:
            return original_commit(self)
        finally:
            counts["attempts"] += self.stats.attempts
            counts["retries"] += self.stats.retries

    Transaction.commit = counting_commit  # type: ignore[method-assign]
    catalog = icefloe.load_catalog("stress", type="sql", uri=args["uri"], warehouse=args["warehouse"])
    rng = random.Random(args["seed"])
    deadline = time.monotonic() + args["seconds"]
    table = catalog.load_table("db.stress")
    log = []
    counter = 0
    while time.monotonic() < deadline:
        op = plan_op(rng, args["worker"], counter)
        counter += 1
        before = dict(counts)
        table.refresh()
        head = table.current_snapshot()
        # start_snapshot: what the operation planned on (its last attempt's, when it restarted);
        # it cannot serialize before that snapshot.
        planned_on[0] = None
        entry: dict[str, Any] = {
            "op": op,
            "worker": args["worker"],
            "counter": counter - 1,
            "start_snapshot": head.snapshot_id if head else None,
        }
        started = time.monotonic()
        try:
            snapshot = run_op(table, op, f"w{args['worker']}#{counter - 1}")
        except IcefloeError as e:
            entry.update(outcome="failed", error=type(e).__name__, typed=True, message=str(e)[:300])
            entry["statement_attempts"] = e.context.get("statement_attempts")
        except Exception as e:  # recorded, and failed on by the test
            entry.update(outcome="failed", error=type(e).__name__, typed=False, message=str(e)[:300])
        else:
            entry.update(
                outcome="ok",
                snapshot_id=snapshot.snapshot_id if snapshot else None,
                sequence_number=snapshot.sequence_number if snapshot else None,
            )
            if planned_on[0] is not None:
                entry["start_snapshot"] = planned_on[0]
        entry["seconds"] = round(time.monotonic() - started, 3)
        entry.update({k: counts[k] - before[k] for k in counts})
        log.append(entry)
    Path(args["log"]).write_text(json.dumps(log))


# ---------------------------------------------------------------------- the test
def _catalog_uri(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_server").create_schema(f"contention_{os.getpid()}"))
    return f"sqlite:///{tmp_path / 'catalog.db'}"


CATALOGS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not FULL, reason="the PostgreSQL run is on demand (ICEFLOE_STRESS=1)"),
        ],
    ),
]


@pytest.mark.parametrize("kind", CATALOGS)
def test_mixed_operations_under_contention(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    import icefloe
    from icefloe.errors import CommitFailedError, ConflictError

    uri = _catalog_uri(kind, request, tmp_path)
    (tmp_path / "warehouse").mkdir()
    warehouse = (tmp_path / "warehouse").as_uri()
    catalog = icefloe.load_catalog("stress", type="sql", uri=uri, warehouse=warehouse)
    initial: list[Row] = [(k, "s", 0) for k in range(SHARED)]
    table = create_table(catalog, "stress", [initial], PROPERTIES)

    seed = int(os.environ.get("ICEFLOE_STRESS_SEED", "15"))
    started = time.monotonic()
    procs = []
    for w in range(PROCESSES):
        args = {
            "uri": uri,
            "warehouse": warehouse,
            "worker": w,
            "seed": seed * 1000 + w,
            "seconds": SECONDS,
            "log": str(tmp_path / f"worker{w}.json"),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), json.dumps(args)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    # An operation started just before the deadline still finishes: appends may retry up to
    # the total timeout, so allow for it.
    limit = SECONDS + int(PROPERTIES["commit.retry.total-timeout-ms"]) / 1000 + 60
    try:
        for p in procs:
            out, _ = p.communicate(timeout=limit)
            assert p.returncode == 0, out.decode(errors="replace")[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
    elapsed = time.monotonic() - started

    entries = [e for w in range(PROCESSES) for e in json.loads((tmp_path / f"worker{w}.json").read_text())]
    table.refresh()
    rows = table_rows(table)
    figures = _figures(entries, elapsed)
    figures.update(catalog=kind, rows_verified=len(rows), snapshots=len(table.snapshots()))
    figures["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    print("\ncontention figures:", json.dumps(figures, sort_keys=True))  # run with -s to see them
    record_property("contention_figures", json.dumps(figures, sort_keys=True))

    untyped = [e for e in entries if e["outcome"] == "failed" and not e["typed"]]
    assert untyped == [], f"failures without a typed icefloe error: {untyped[:5]}"
    allowed = _typed_failure_names(ConflictError, CommitFailedError)
    wrong_kind = [e for e in entries if e["outcome"] == "failed" and e["error"] not in allowed]
    assert wrong_kind == [], f"failures that are neither conflicts nor exhausted retries: {wrong_kind[:5]}"
    failed_appends = [e for e in entries if e["outcome"] == "failed" and e["op"]["kind"] == "append"]
    assert failed_appends == [], f"appends that did not land: {failed_appends[:5]}"

    seq_of = {s.snapshot_id: s.sequence_number for s in table.snapshots()}
    landed = [e for e in entries if e["outcome"] == "ok" and e["snapshot_id"] is not None]
    missing = [e for e in landed if e["snapshot_id"] not in seq_of]
    assert missing == [], f"operations reported committed whose snapshot is not in the table: {missing[:5]}"
    assert len({e["snapshot_id"] for e in landed}) == len(landed)
    assert set(seq_of) - {e["snapshot_id"] for e in landed} == {table.snapshots()[0].snapshot_id}
    assert all(seq_of[e["snapshot_id"]] == e["sequence_number"] for e in landed)
    landed.sort(key=lambda e: seq_of[e["snapshot_id"]])
    assert len(rows) == len({r[0] for r in rows}), "duplicated rows"
    expected: list[Row] = list(initial)
    for e in landed:
        expected = apply_model(expected, e["op"])
    figures["replay_in_commit_order_matches"] = rows == sorted(expected)

    # The step-by-step serial-order check (tests/reliability/_serial_check.py).
    checked = time.monotonic()
    reader = SnapshotReader(table)
    snapshot_by_id = {s.snapshot_id: s for s in table.snapshots()}

    def describe_snapshot(snapshot_id: int) -> dict[str, Any]:
        s = snapshot_by_id[snapshot_id]
        return {
            "snapshot_id": snapshot_id,
            "sequence_number": s.sequence_number,
            "parent": s.parent_snapshot_id,
            "summary": s.summary.to_json(),
        }

    result = check_serial_order(initial, table.snapshots()[0].snapshot_id, landed, reader, describe_snapshot)
    figures["serial_order"] = {
        "ok": result["ok"],
        "steps_checked": result["steps"],
        "reordered": len(result["reordered"]),
        "tasks_read": reader.tasks_read,
        "seconds": round(time.monotonic() - checked, 1),
        "replay_in_commit_order_matches": figures["replay_in_commit_order_matches"],
    }
    print("serial order check:", json.dumps(figures["serial_order"]))
    for r in result["reordered"][:5]:
        print("  legal reordering:", json.dumps(r)[:600])
    record_property("contention_serial_order", json.dumps(figures["serial_order"], sort_keys=True))
    assert result["ok"], "no serial order explains the snapshots:\n" + json.dumps(
        result["violation"], indent=1, default=str
    )
    assert rows == reader(landed[-1]["snapshot_id"])

    appended_ids = [r[0] for r in rows if r[0] >= 1_000_000]
    assert len(appended_ids) == len(set(appended_ids))
    assert len(appended_ids) == sum(len(e["op"]["rows"]) for e in landed if e["op"]["kind"] == "append")

    assert orphan_files(table) == set()
    assert sequence_number_violations(table) == []
    assert figures["landed_by_op"].get("append", 0) >= PROCESSES


def _typed_failure_names(*bases: type[BaseException]) -> set[str]:
    import icefloe.errors as errors

    return {
        name
        for name in errors.__all__
        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), bases)
    }


def _figures(entries: list[dict[str, Any]], elapsed: float) -> dict[str, Any]:
    ok = [e for e in entries if e["outcome"] == "ok"]
    failed = [e for e in entries if e["outcome"] == "failed"]
    appends = [e for e in entries if e["op"]["kind"] == "append"]
    return {
        "processes": PROCESSES,
        "seconds_per_process": SECONDS,
        "operations": len(entries),
        "landed": len(ok),
        "landed_noop": sum(1 for e in ok if e["snapshot_id"] is None),
        "failed": len(failed),
        "commits": sum(e["commits"] for e in entries),
        "commit_attempts": sum(e["attempts"] for e in entries),
        "retries": sum(e["retries"] for e in entries),
        "statement_restarts": sum(max(e["commits"] - 1, 0) for e in entries if e["op"]["kind"] != "append"),
        "failures_by_error": dict(Counter(e["error"] for e in failed)),
        "landed_by_op": dict(Counter(e["op"]["kind"] for e in ok)),
        "failed_by_op": dict(Counter(e["op"]["kind"] for e in failed)),
        "append_max_retries": max((e["retries"] for e in appends), default=0),
        "append_max_seconds": max((e["seconds"] for e in appends), default=0),
        "elapsed_seconds": round(elapsed, 1),
    }


if __name__ == "__main__":
    worker_main(json.loads(sys.argv[1]))
