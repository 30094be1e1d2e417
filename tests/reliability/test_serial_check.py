"""The contention harness's serial-order check (_serial_check.py) on hand-made histories: it
accepts a legal reordering (a metadata-only delete serialized before an overwrite that committed
first) and rejects a lost update, a resurrected row and a move before the operation's start."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _serial_check import apply_op, check_serial_order  # type: ignore[import-not-found]

INITIAL = [(k, "s", 0) for k in range(10)]


def entry(snapshot: int, start: int, **op: Any) -> dict[str, Any]:
    return {"op": op, "snapshot_id": snapshot, "start_snapshot": start, "worker": 0, "counter": snapshot}


def run(landed: list[dict[str, Any]], snapshots: dict[int, list[tuple[int, str, int]]]) -> dict[str, Any]:
    return check_serial_order(INITIAL, 0, landed, lambda s: snapshots[s])


def model(*ops: dict[str, Any]) -> list[tuple[int, str, int]]:
    state = {r[0]: (r[1], r[2]) for r in INITIAL}
    for op in ops:
        apply_op(state, op)
    return sorted((k, *v) for k, v in state.items())


DELETE = {"kind": "delete", "lo": 2, "hi": 6}
OVERWRITE = {"kind": "overwrite", "key": 3, "rows": [[3, "s", 7]]}
UPDATE = {"kind": "update", "lo": 0, "hi": 4}


def test_commit_order_histories_pass() -> None:
    landed = [entry(1, 0, **DELETE), entry(2, 1, **OVERWRITE), entry(3, 2, **UPDATE)]
    snaps = {1: model(DELETE), 2: model(DELETE, OVERWRITE), 3: model(DELETE, OVERWRITE, UPDATE)}
    result = run(landed, snaps)
    assert result["ok"] and result["reordered"] == []


def test_a_delete_serialized_before_an_overwrite_that_committed_first_is_legal() -> None:
    # Both started at snapshot 0; the overwrite of id 3 committed first (snapshot 1), the
    # metadata-only delete of [2, 6) second (snapshot 2) and did not remove the new row 3.
    landed = [entry(1, 0, **OVERWRITE), entry(2, 0, **DELETE)]
    snaps = {1: model(OVERWRITE), 2: model(DELETE, OVERWRITE)}
    result = run(landed, snaps)
    assert result["ok"]
    assert len(result["reordered"]) == 1 and result["reordered"][0]["step"] == 1


def test_a_move_before_the_operations_start_is_not_legal() -> None:
    # The same snapshots, but the delete started after the overwrite committed: it saw row 3.
    landed = [entry(1, 0, **OVERWRITE), entry(2, 1, **DELETE)]
    snaps = {1: model(OVERWRITE), 2: model(DELETE, OVERWRITE)}
    result = run(landed, snaps)
    assert not result["ok"]
    assert result["violation"]["step"] == 1
    assert result["violation"]["diff_vs_previous_plus_operation"]["only_actual"] == [(3, "s", 7)]


def test_a_reordering_that_a_later_operation_observes_is_not_legal() -> None:
    # Overwrite, then update of id 3 (v 7 -> 8), then the delete keeps row 3: moving the delete
    # before both explains it; but here the update's effect is missing (a lost update).
    landed = [entry(1, 0, **OVERWRITE), entry(2, 1, **UPDATE), entry(3, 0, **DELETE)]
    snaps = {1: model(OVERWRITE), 2: model(OVERWRITE, UPDATE), 3: model(DELETE, OVERWRITE)}
    result = run(landed, snaps)
    assert not result["ok"]
    assert result["violation"]["step"] == 2
    legal = {**snaps, 3: model(DELETE, OVERWRITE, UPDATE)}
    assert run(landed, legal)["ok"]


def test_a_lost_update_is_reported_with_the_rows_that_differ() -> None:
    landed = [entry(1, 0, **UPDATE), entry(2, 0, **UPDATE)]
    snaps = {1: model(UPDATE), 2: model(UPDATE)}
    result = run(landed, snaps)
    assert not result["ok"]
    changed = result["violation"]["diff_vs_previous_plus_operation"]["changed"]
    assert [c[0] for c in changed] == [0, 1, 2, 3]
