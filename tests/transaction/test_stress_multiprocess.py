"""Multi-process stress test of the commit protocol on the SQL catalog (SQLite and PostgreSQL).

8 worker processes each run 25 mixed operations (append, delete by key, upsert, compaction) on one
merge-on-read table at serializable isolation, each from a freshly loaded handle, with no
coordination but the catalog's compare-and-swap. Afterwards:

- every row is accounted for: replaying the operations that landed, in commit order (their
  snapshots' sequence numbers), on the initial rows gives exactly the table's rows;
- every failed operation failed with a typed error (a `ConflictError`, or `CommitFailedError` once
  the retries ran out) and left no trace: none of its snapshots is in the table, and no file under
  the table's location is unreferenced by the table's metadata history;
- sequence numbers and delete files are consistent.

The workers are separate interpreters (this file run as a script), so nothing is shared but the
catalog database and the warehouse directory.
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

if __package__:
    from ._model import (
        MOR,
        Op,
        Row,
        create_table,
        dangling_delete_violations,
        isolation_properties,
        mode_properties,
        orphan_files,
        sequence_number_violations,
        serial,
        table_rows,
    )
else:  # a worker process: this file run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _model import MOR, Op, build_transaction  # type: ignore[import-not-found,no-redef]

PROCESSES = 8
OPS_PER_PROCESS = 25
# PostgreSQL adds 8 server backends to the 8 workers on 2 cores: a shorter program keeps the run
# bounded; the contention per commit is the same.
OPS_PER_PROCESS_BY_CATALOG = {"sqlite": OPS_PER_PROCESS, "postgres": 10}
SHARED_KEYS = 40
TIME_LIMIT_S = 90.0


def _op_to_json(op: Op) -> dict[str, Any]:
    return {"kind": op.kind, "rows": [list(r) for r in op.rows], "key": op.key, "part": op.part}


def _op_from_json(d: dict[str, Any]) -> Op:
    return Op(
        d["kind"],
        rows=tuple((int(r[0]), str(r[1]), int(r[2])) for r in d["rows"]),
        key=d["key"],
        part=d["part"],
    )


def plan_ops(worker: int, n: int, seed: int) -> list[Op]:
    """A worker's mixed program: appends of its own keys, deletes and upserts of shared keys
    (where the workers collide) and of its own, and now and then a compaction."""
    rng = random.Random(seed * 1000 + worker)
    own_part = f"p{worker}"
    ops: list[Op] = []
    own_keys: list[int] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.35 or not own_keys:
            key = 1000 * (worker + 1) + i
            own_keys.append(key)
            ops.append(Op("append", rows=((key, own_part, i),)))
        elif roll < 0.55:
            ops.append(Op("delete", key=rng.randrange(SHARED_KEYS)))
        elif roll < 0.75:
            k = rng.randrange(SHARED_KEYS)
            ops.append(Op("upsert", rows=((k, "s", 100 * (worker + 1) + i),)))
        elif roll < 0.85:
            ops.append(Op("upsert", rows=((rng.choice(own_keys), own_part, -i),)))
        elif roll < 0.93:
            ops.append(Op("delete", key=rng.choice(own_keys)))
        else:
            ops.append(Op("compact", part=rng.choice([own_part, "s"])))
    return ops


def worker_main(args: dict[str, Any]) -> None:
    """Run one worker's program; write one log line per operation."""
    import icefloe
    from icefloe.errors import IcefloeError

    catalog = icefloe.load_catalog("stress", type="sql", uri=args["uri"], warehouse=args["warehouse"])
    deadline = time.monotonic() + args["time_limit_s"]
    log = []
    for op in [_op_from_json(d) for d in args["ops"]]:
        entry: dict[str, Any] = {"op": _op_to_json(op)}
        if time.monotonic() > deadline:
            entry["outcome"] = "skipped"
            log.append(entry)
            continue
        tx = None
        try:
            tx = build_transaction(catalog.load_table("db.stress"), op)
            snapshots = tx.commit()
        except IcefloeError as e:
            entry.update(outcome="failed", error=type(e).__name__, typed=True, message=str(e)[:300])
        except Exception as e:  # recorded, and failed on by the test
            entry.update(outcome="failed", error=type(e).__name__, typed=False, message=str(e)[:300])
        else:
            entry.update(outcome="ok", snapshot_id=snapshots[-1].snapshot_id if snapshots else None)
        entry.update(attempts=tx.stats.attempts if tx else 0, retries=tx.stats.retries if tx else 0)
        log.append(entry)
    Path(args["log"]).write_text(json.dumps(log))


@pytest.mark.slow
@pytest.mark.catalogs("sqlite", "postgres")
def test_eight_processes_commit_mixed_operations(
    catalog_kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    import icefloe
    from icefloe.errors import CommitFailedError, ConflictError

    if catalog_kind == "postgres":
        uri = request.getfixturevalue("postgres_server").create_schema(f"stress_{os.getpid()}")
    else:
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = (tmp_path / "warehouse").as_uri()
    (tmp_path / "warehouse").mkdir()
    catalog = icefloe.load_catalog("stress", type="sql", uri=uri, warehouse=warehouse)
    initial: list[Row] = [(k, "s", 0) for k in range(SHARED_KEYS)]
    props = {
        **mode_properties(MOR),
        **isolation_properties("serializable"),
        "commit.retry.num-retries": "25",
        "commit.retry.min-wait-ms": "5",
        "commit.retry.max-wait-ms": "300",
        # Keep every metadata file in the log, so "referenced by the history" covers all of them.
        "write.metadata.previous-versions-max": "10000",
    }
    table = create_table(catalog, "stress", [initial], props)

    programs = [plan_ops(w, OPS_PER_PROCESS_BY_CATALOG[catalog_kind], seed=4) for w in range(PROCESSES)]
    started = time.monotonic()
    procs = []
    for w, ops in enumerate(programs):
        args = {
            "uri": uri,
            "warehouse": warehouse,
            "ops": [_op_to_json(o) for o in ops],
            "log": str(tmp_path / f"worker{w}.json"),
            "time_limit_s": TIME_LIMIT_S - 30,
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), json.dumps(args)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    try:
        for p in procs:
            out, _ = p.communicate(timeout=TIME_LIMIT_S + 30)
            assert p.returncode == 0, out.decode(errors="replace")[-3000:]
    finally:
        # a failed or timed-out run leaves no worker running and no pipe open
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
    elapsed = time.monotonic() - started

    logs = [json.loads((tmp_path / f"worker{w}.json").read_text()) for w in range(PROCESSES)]
    entries = [e for log in logs for e in log]
    figures = _figures(entries, elapsed)
    figures["catalog"] = catalog_kind
    print("\nstress figures:", json.dumps(figures, sort_keys=True))  # run with -s to see them
    record_property("stress_figures", json.dumps(figures, sort_keys=True))
    untyped = [e for e in entries if e["outcome"] == "failed" and not e["typed"]]
    assert untyped == [], f"failures without a typed icefloe error: {untyped[:5]}"
    wrong_kind = [
        e
        for e in entries
        if e["outcome"] == "failed"
        and e["error"] not in _typed_failure_names(ConflictError, CommitFailedError)
    ]
    assert wrong_kind == [], f"failures that are neither conflicts nor exhausted retries: {wrong_kind[:5]}"

    table.refresh()
    seq_of = {s.snapshot_id: s.sequence_number for s in table.snapshots()}
    landed = [e for e in entries if e["outcome"] == "ok" and e["snapshot_id"] is not None]
    missing = [e for e in landed if e["snapshot_id"] not in seq_of]
    assert missing == [], f"operations reported committed whose snapshot is not in the table: {missing[:5]}"
    landed.sort(key=lambda e: seq_of[e["snapshot_id"]])
    assert table_rows(table) == serial(initial, [_op_from_json(e["op"]) for e in landed])
    # Every snapshot after the initial append belongs to exactly one operation that reported success.
    ours = {e["snapshot_id"] for e in landed}
    assert len(ours) == len(landed)
    assert set(seq_of) - ours == {table.snapshots()[0].snapshot_id}

    orphans = orphan_files(table)
    assert orphans == set(), (
        f"a failed or retried commit left {len(orphans)} files behind: {sorted(orphans)[:10]}"
    )
    assert sequence_number_violations(table) == []
    assert dangling_delete_violations(table) == []

    assert figures["landed"] > PROCESSES, "almost nothing committed: the stress test proves nothing"
    assert elapsed < TIME_LIMIT_S


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
    return {
        "processes": PROCESSES,
        "operations": len(entries),
        "landed": len(ok),
        "failed": len(failed),
        "skipped": sum(1 for e in entries if e["outcome"] == "skipped"),
        "commit_attempts": sum(e.get("attempts", 0) for e in entries),
        "retries": sum(e.get("retries", 0) for e in entries),
        "conflicted": sum(1 for e in failed if e["error"] != "CommitFailedError"),
        "landed_after_retry": sum(1 for e in ok if e["retries"]),
        "failures_by_error": dict(Counter(e["error"] for e in failed)),
        "landed_by_op": dict(Counter(e["op"]["kind"] for e in ok)),
        "failed_by_op": dict(Counter(e["op"]["kind"] for e in failed)),
        "seconds": round(elapsed, 1),
    }


if __name__ == "__main__":
    worker_main(json.loads(sys.argv[1]))
