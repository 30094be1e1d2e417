"""The serial-order check of the contention harness (test_contention.py), step by step.

Every landed operation is known by the snapshot it committed. Walking those snapshots in sequence
order, the check builds a serial order of the operations and holds, after each step, that
replaying the serial order on the initial rows gives exactly the rows of the snapshot (read by
time travel). A step whose snapshot equals the operation applied to the previous snapshot's rows
extends the serial order at its end (commit order). A step that does not is only legal when the
operation can be *moved back*: inserted at an earlier position p of the serial order (never
before the snapshot it started from: an operation cannot serialize before one that committed
before it started), such that the operation applied to the rows of position p, followed by a
replay of every operation after p, gives the snapshot's rows. The replay is what makes the move
honest: an operation reordered after the moved one that would have observed the difference (an
update or overwrite of a row the moved delete removes, an append of rows it would have matched)
produces different rows and the move fails. The latest such position is taken (greedy). When no
position works, the step is a serializability violation and the report names it: the snapshot,
its parent, the operation and its arguments, the rows only expected, only present or changed,
and the operations that last touched those ids.

Operations that landed without a snapshot (a delete or update matching no row) are reads; they
are not placed in the order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Row = tuple[int, str, int]
State = dict[int, tuple[str, int]]

# How many serial positions back an operation may be moved (the states kept in memory).
WINDOW = 256


def apply_op(state: State, op: dict[str, Any]) -> None:
    """The operation's serial effect, in place."""
    kind = op["kind"]
    if kind == "append":
        for r in op["rows"]:
            state[r[0]] = (r[1], r[2])
    elif kind == "delete":
        for k in range(op["lo"], op["hi"]):
            state.pop(k, None)
    elif kind == "overwrite":
        state.pop(op["key"], None)
        for r in op["rows"]:
            state[r[0]] = (r[1], r[2])
    elif kind == "update":
        for k in range(op["lo"], op["hi"]):
            if k in state:
                part, v = state[k]
                state[k] = (part, v + 1)
    else:
        raise AssertionError(kind)


def to_state(rows: Sequence[Row]) -> State:
    state = {r[0]: (r[1], r[2]) for r in rows}
    assert len(state) == len(rows), "duplicated ids"
    return state


def describe(e: dict[str, Any]) -> str:
    op = e["op"]
    kind = op["kind"]
    if kind == "append":
        args = ",".join(str(r[0]) for r in op["rows"])
    elif kind == "overwrite":
        args = f"id={op['key']} -> v={op['rows'][0][2]}"
    else:
        args = f"[{op['lo']},{op['hi']})"
    return f"{kind}({args}) by w{e.get('worker')}#{e.get('counter')} -> snapshot {e['snapshot_id']}"


def touches(op: dict[str, Any], ids: set[int]) -> bool:
    kind = op["kind"]
    if kind == "append":
        return any(r[0] in ids for r in op["rows"])
    if kind == "overwrite":
        return op["key"] in ids
    return any(op["lo"] <= k < op["hi"] for k in ids)


def diff(expected: State, actual: State) -> dict[str, Any]:
    return {
        "only_expected": sorted((k, *expected[k]) for k in expected.keys() - actual.keys()),
        "only_actual": sorted((k, *actual[k]) for k in actual.keys() - expected.keys()),
        "changed": sorted(
            (k, expected[k], actual[k]) for k in expected.keys() & actual.keys() if expected[k] != actual[k]
        ),
    }


def check_serial_order(
    initial: Sequence[Row],
    initial_snapshot_id: int,
    landed: Sequence[dict[str, Any]],
    rows_at: Callable[[int], list[Row]],
    describe_snapshot: Callable[[int], dict[str, Any]] = lambda _: {},
) -> dict[str, Any]:
    """``landed``: the entries of landed operations, in sequence order of their snapshots (each with
    ``op``, ``snapshot_id`` and ``start_snapshot``: the head when the operation started).
    Returns ``{"ok", "steps", "reordered": [...], "violation": {...} | None}``."""
    serial: list[dict[str, Any]] = []  # entries, in serial order
    # states[p] = rows after serial[:p]; only the last WINDOW + 1 are kept (None before that).
    states: list[State | None] = [to_state(initial)]
    trim = 0
    reordered: list[dict[str, Any]] = []
    for step, e in enumerate(landed):
        actual = to_state(rows_at(e["snapshot_id"]))
        head = states[-1]
        assert head is not None
        expected = dict(head)
        apply_op(expected, e["op"])
        if expected == actual:
            serial.append(e)
            states.append(expected)
        else:
            start = e.get("start_snapshot")
            after_start = next((i + 1 for i, x in enumerate(serial) if x["snapshot_id"] == start), 0)
            lowest = max(after_start, len(serial) - WINDOW)
            placed = None
            for p in range(len(serial) - 1, lowest - 1, -1):
                base = states[p]
                if base is None:
                    break
                replay = dict(base)
                apply_op(replay, e["op"])
                after = [dict(replay)]
                for later in serial[p:]:
                    apply_op(replay, later["op"])
                    after.append(dict(replay))
                if replay == actual:
                    placed = p
                    states[p + 1 :] = after
                    serial.insert(p, e)
                    break
            if placed is None:
                touched = set()
                d = diff(expected, actual)
                for key in ("only_expected", "only_actual", "changed"):
                    touched |= {x[0] for x in d[key]}
                recent = [describe(x) for x in landed[max(0, step - 400) : step] if touches(x["op"], touched)]
                return {
                    "ok": False,
                    "steps": step,
                    "reordered": reordered,
                    "violation": {
                        "step": step,
                        "operation": describe(e),
                        "op": e["op"],
                        "start_snapshot": e.get("start_snapshot"),
                        "snapshot": describe_snapshot(e["snapshot_id"]),
                        "previous_snapshot": describe_snapshot(landed[step - 1]["snapshot_id"])
                        if step
                        else initial_snapshot_id,
                        "diff_vs_previous_plus_operation": d,
                        "earlier_operations_on_those_ids": recent[-12:],
                    },
                }
            reordered.append(
                {
                    "step": step,
                    "operation": describe(e),
                    "moved_before": [describe(x) for x in serial[placed + 1 :]],
                }
            )
        while trim < len(states) - WINDOW - 1:
            states[trim] = None
            trim += 1
    return {"ok": True, "steps": len(landed), "reordered": reordered, "violation": None}


class SnapshotReader:
    """The rows of a table at a snapshot, by icefloe's own scan planning and reader, with the rows
    of each scan task (a data file with the delete files that apply to it) read once and cached:
    consecutive snapshots share most tasks, so walking thousands of snapshots stays cheap."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self._cache: dict[tuple[Any, ...], list[Row]] = {}
        self.tasks_read = 0

    def __call__(self, snapshot_id: int) -> list[Row]:
        from icefloe.arrow._scan_groups import read_table

        scan = self.table.scan(snapshot_id=snapshot_id)
        opts = scan._read_options()
        rows: list[Row] = []
        for task in scan.plan_files():
            key = (
                task.file.file_path,
                task.start,
                task.length,
                str(task.residual),
                tuple(sorted((d.file_path, d.referenced_data_file or "") for d in task.delete_files)),
            )
            cached = self._cache.get(key)
            if cached is None:
                data = read_table(self.table.io, [task], opts)
                cached = list(
                    zip(data["id"].to_pylist(), data["part"].to_pylist(), data["v"].to_pylist(), strict=True)
                )
                self._cache[key] = cached
                self.tasks_read += 1
            rows.extend(cached)
        return sorted(rows)
