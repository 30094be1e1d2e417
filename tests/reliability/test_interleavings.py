"""The contention harness's operations, interleaved by hand in one process: seeded, so a history
is the same on every run.

Ten clients each hold a table handle loaded when their operation started (what it reads), and
complete it later; a catalog hook completes another client's pending operation just before a
commit reaches the catalog, so statements lose compare-and-swaps, retry, fail validation and
restart from newer snapshots. Afterwards the serial-order check (_serial_check.py) must explain
every snapshot. The chosen seed produces the legal reordering the check allows: a metadata-only
delete serialized before an overwrite that committed first (see test_contention.py).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "transaction"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _model import create_table  # type: ignore[import-not-found]
from _serial_check import SnapshotReader, check_serial_order  # type: ignore[import-not-found]
from test_contention import PROPERTIES, run_op  # type: ignore[import-not-found]

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import IcefloeError
from icefloe.table.transaction import Transaction

SHARED = 15
CLIENTS = 10


def plan(rng: random.Random, client: int, counter: int) -> dict[str, Any]:
    kind = rng.choices(["append", "delete", "overwrite", "update"], weights=[5, 2, 2, 2])[0]
    if kind == "append":
        base = 1_000_000 * (client + 1) + 10 * counter
        return {"kind": kind, "rows": [[base + i, f"p{client}", counter] for i in range(rng.randint(1, 3))]}
    lo = rng.randrange(SHARED)
    if kind == "overwrite":
        return {"kind": kind, "key": lo, "rows": [[lo, "s", 1000 * (client + 1) + counter]]}
    return {"kind": kind, "lo": lo, "hi": lo + rng.randint(1, 6)}


def interleave(tmp_path: Path, seed: int, n_ops: int, hook: float = 0.4) -> tuple[dict[str, Any], int]:
    rng = random.Random(seed)
    (tmp_path / "warehouse").mkdir()
    catalog = InMemoryCatalog("m", warehouse=(tmp_path / "warehouse").as_uri())
    initial = [(k, "s", 0) for k in range(SHARED)]
    table = create_table(
        catalog,
        "stress",
        [initial],
        {**PROPERTIES, "commit.retry.min-wait-ms": "0", "commit.retry.max-wait-ms": "1"},
    )
    pending: dict[int, tuple[Any, dict[str, Any]]] = {}
    landed: list[dict[str, Any]] = []
    planned_on: dict[int, int | None] = {}  # committed snapshot -> what its transaction planned on
    depth = [0]

    def complete(client: int) -> None:
        handle, entry = pending.pop(client)
        depth[0] += 1
        try:
            snapshot = run_op(handle, entry["op"])
        except IcefloeError:
            return
        finally:
            depth[0] -= 1
        if snapshot is not None:
            entry.update(snapshot_id=snapshot.snapshot_id, start_snapshot=planned_on[snapshot.snapshot_id])
            landed.append(entry)

    inner_commit = catalog.commit_table

    def hooked_commit(identifier: Any, requirements: Any, updates: Any) -> Any:
        if depth[0] < 3 and pending and rng.random() < hook:
            complete(rng.choice(sorted(pending)))
        return inner_commit(identifier, requirements, updates)

    original = Transaction.commit

    def recording_commit(self: Transaction) -> Any:
        start = self._starting_snapshot(self.branch)
        snapshots = original(self)
        for s in snapshots or ():
            planned_on[s.snapshot_id] = start
        return snapshots

    catalog.commit_table = hooked_commit  # type: ignore[method-assign]
    Transaction.commit = recording_commit  # type: ignore[method-assign]
    try:
        counter = 0
        while counter < n_ops or pending:
            client = rng.randrange(CLIENTS)
            if client in pending or counter >= n_ops:
                complete(client if client in pending else min(pending))
                continue
            handle = catalog.load_table("db.stress")
            head = handle.current_snapshot()
            entry = {"op": plan(rng, client, counter), "worker": client, "counter": counter}
            entry["start_snapshot"] = head.snapshot_id if head else None
            pending[client] = (handle, entry)
            counter += 1
    finally:
        Transaction.commit = original  # type: ignore[method-assign]
    table.refresh()
    seq = {s.snapshot_id: s.sequence_number for s in table.snapshots()}
    landed.sort(key=lambda e: seq[e["snapshot_id"]])
    result = check_serial_order(initial, table.snapshots()[0].snapshot_id, landed, SnapshotReader(table))
    return result, len(landed)


def test_hand_interleaved_histories_have_a_serial_order_including_a_legal_reordering(tmp_path: Path) -> None:
    result, landed = interleave(tmp_path, seed=SEED, n_ops=150)
    assert result["ok"], result["violation"]
    assert landed > 100
    assert result["reordered"], "the seed no longer produces a metadata-only delete moved back"
    assert all(r["operation"].startswith("delete(") for r in result["reordered"])


SEED = 3
