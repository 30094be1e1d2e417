"""Model-style check of the commit protocol: every interleaving of a few writers.

Each writer runs a small program of operations (append, delete, upsert, compaction) one after the
other; an operation *begins* (loads a table handle: what it reads) and later *commits* (runs on that
handle, so it starts from the snapshot it read). An interleaving is an order of all begins and
commits that respects each program; interleavings that give every operation the same starting
point and the same commit order are the same history, so only distinct histories are run.

After every commit attempt, whatever its outcome:

- the table's rows equal the serial execution, in commit order, of the operations that committed
  (so no committed insert or delete is lost and no rejected operation left an effect);
- snapshot sequence numbers strictly increase and every entry's sequence numbers agree with the
  snapshot that added it;
- no live position-delete file references a data file that is not live;

and a rejected operation failed with a typed `ConflictError`. At the end no file is left that the
table's metadata does not reference.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import ConflictError
from icefloe.table import Table

from ._model import (
    COW,
    MOR,
    Op,
    Row,
    create_table,
    dangling_delete_violations,
    isolation_properties,
    mode_properties,
    orphan_files,
    run_op,
    sequence_number_violations,
    serial,
    table_rows,
)

INITIAL_A: tuple[Row, ...] = ((1, "a", 0), (2, "a", 0), (3, "a", 0), (4, "a", 0))
INITIAL_B: tuple[Row, ...] = ((5, "b", 0), (6, "b", 0))
INITIAL = sorted([*INITIAL_A, *INITIAL_B])

Event = tuple[str, int, int]  # ("begin" | "commit", writer, index of the op in its program)


def interleavings(programs: Sequence[Sequence[Op]]) -> Iterator[list[Event]]:
    """Every merge of the writers' event sequences (begin, commit, begin, commit, ...)."""
    seqs = [
        [(kind, w, k) for k in range(len(p)) for kind in ("begin", "commit")] for w, p in enumerate(programs)
    ]
    for order in _lazy_orders(seqs):
        pos = [0] * len(seqs)
        out = []
        for w in order:
            out.append(seqs[w][pos[w]])
            pos[w] += 1
        yield out


def _lazy_orders(seqs: list[list[Event]]) -> Iterator[tuple[int, ...]]:
    """Which writer moves at each step: the distinct orders of the multiset of writers."""

    def rec(left: list[int], acc: list[int]) -> Iterator[tuple[int, ...]]:
        if not any(left):
            yield tuple(acc)
            return
        for w, n in enumerate(left):
            if n:
                left[w] -= 1
                acc.append(w)
                yield from rec(left, acc)
                acc.pop()
                left[w] += 1

    yield from rec([len(s) for s in seqs], [])


def history_key(events: list[Event]) -> tuple[object, ...]:
    """What decides the outcome: how many commits precede each begin, and the commit order."""
    commits = 0
    starts: dict[tuple[int, int], int] = {}
    order: list[tuple[int, int]] = []
    for kind, w, k in events:
        if kind == "begin":
            starts[(w, k)] = commits
        else:
            commits += 1
            order.append((w, k))
    return tuple(sorted(starts.items())), tuple(order)


def distinct_histories(programs: Sequence[Sequence[Op]]) -> list[list[Event]]:
    seen: dict[tuple[object, ...], list[Event]] = {}
    for events in interleavings(programs):
        seen.setdefault(history_key(events), events)
    return list(seen.values())


@dataclass
class Outcome:
    committed: list[Op]
    rejected: list[tuple[Op, str]]


def lost_writes(final: list[Row], committed: list[Op]) -> list[str]:
    """Committed inserts missing and committed deletes undone, unless a later committed operation
    explains it (spelled out separately from the model comparison for readable failures)."""
    problems = []
    for i, op in enumerate(committed):
        later = committed[i + 1 :]

        def touched(key: int, part: str) -> bool:
            return any(
                (o.kind in ("delete", "overwrite") and o.key == key)
                or (o.kind == "upsert" and any(r[0] == key for r in o.rows))
                or (o.kind == "replace_partitions" and any(r[1] == part for r in o.rows))
                for o in later  # noqa: B023
            )

        if op.kind in ("append", "upsert"):
            problems += [
                f"insert {r} by {op} was lost" for r in op.rows if r not in final and not touched(r[0], r[1])
            ]
        if op.kind == "delete" and op.key is not None:
            back = [r for r in final if r[0] == op.key]
            if back and not touched(op.key, back[0][1]):
                problems.append(f"delete({op.key}) was undone: {back}")
    return problems


def check_history(
    catalog: InMemoryCatalog,
    name: str,
    programs: Sequence[Sequence[Op]],
    events: list[Event],
    props: dict[str, str],
) -> Outcome:
    table = create_table(catalog, name, [INITIAL_A, INITIAL_B], props)
    handles: dict[tuple[int, int], Table] = {}
    out = Outcome([], [])
    trace: list[str] = []
    for kind, w, k in events:
        op = programs[w][k]
        if kind == "begin":
            handles[(w, k)] = catalog.load_table(table.identifier)
            trace.append(f"w{w} begins {op}")
            continue
        try:
            run_op(handles.pop((w, k)), op)
        except ConflictError as e:
            out.rejected.append((op, type(e).__name__))
            trace.append(f"w{w} {op} -> {type(e).__name__}")
        else:
            out.committed.append(op)
            trace.append(f"w{w} {op} -> committed")
        table.refresh()
        where = "; ".join(trace)
        final = table_rows(table)
        expected = serial(INITIAL, out.committed)
        assert final == expected, f"not the serial execution of the committed operations after: {where}"
        assert lost_writes(final, out.committed) == [], where
        assert sequence_number_violations(table) == [], where
        assert dangling_delete_violations(table) == [], where
    assert orphan_files(table) == set(), "; ".join(trace)
    return out


PROGRAMS: dict[str, tuple[dict[str, str], list[list[Op]]]] = {
    # Two writers x two operations, every distinct history.
    "mor-serializable": (
        {**mode_properties(MOR), **isolation_properties("serializable")},
        [
            [Op("delete", key=2), Op("append", rows=((10, "a", 1),))],
            [Op("upsert", rows=((2, "a", 5),)), Op("compact", part="a")],
        ],
    ),
    "mor-snapshot": (
        {**mode_properties(MOR), **isolation_properties("snapshot")},
        [
            [Op("upsert", rows=((3, "a", 7),)), Op("delete", key=5)],
            [Op("delete", key=3), Op("compact", part="a")],
        ],
    ),
    "cow-snapshot": (
        {**mode_properties(COW), **isolation_properties("snapshot")},
        [
            [Op("delete", key=2), Op("upsert", rows=((4, "a", 3),))],
            [Op("upsert", rows=((2, "a", 5),)), Op("compact", part="a")],
        ],
    ),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_two_writers_every_history(tmp_path: Path, name: str) -> None:
    props, programs = PROGRAMS[name]
    catalog = InMemoryCatalog("memory", warehouse=tmp_path.as_uri())
    histories = distinct_histories(programs)
    rejected = 0
    for i, events in enumerate(histories):
        outcome = check_history(catalog, f"t{i}", programs, events, props)
        rejected += len(outcome.rejected)
    # The programs are chosen to collide: some histories must have been rejected, some not.
    assert 0 < rejected < len(histories) * 4


THREE_WRITERS = [
    [Op("delete", key=2), Op("upsert", rows=((4, "a", 9),))],
    [Op("upsert", rows=((2, "a", 5),)), Op("append", rows=((11, "b", 1),))],
    [Op("compact", part="a"), Op("delete", key=4)],
]


@pytest.mark.parametrize("mode", [MOR, COW])
def test_three_writers_sampled_histories(tmp_path: Path, mode: str) -> None:
    """Three writers have thousands of distinct histories; a fixed random sample of them, plus the
    fully serial and the fully concurrent ones, keeps the test fast and reproducible."""
    props = {**mode_properties(mode), **isolation_properties("snapshot")}
    catalog = InMemoryCatalog("memory", warehouse=tmp_path.as_uri())
    owners = [w for w, p in enumerate(THREE_WRITERS) for _ in range(2 * len(p))]
    rng = random.Random(20261121)
    samples: dict[tuple[object, ...], list[Event]] = {}
    serial_order = tuple(owners)
    all_begins_first = (0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2)
    for order in [
        serial_order,
        all_begins_first,
        *(tuple(rng.sample(owners, len(owners))) for _ in range(200)),
    ]:
        events = _events_for(order)
        samples.setdefault(history_key(events), events)
        if len(samples) >= 24:
            break
    for i, events in enumerate(samples.values()):
        check_history(catalog, f"t{i}", THREE_WRITERS, events, props)


def test_three_writers_one_operation_each_every_history(tmp_path: Path) -> None:
    """The 10720 shape with a compaction racing both: update, delete and rewrite of one row's file,
    merge-on-read at snapshot isolation, in every distinct history."""
    programs = [[Op("upsert", rows=((2, "a", 5),))], [Op("delete", key=2)], [Op("compact", part="a")]]
    props = {**mode_properties(MOR), **isolation_properties("snapshot")}
    catalog = InMemoryCatalog("memory", warehouse=tmp_path.as_uri())
    histories = distinct_histories(programs)
    rejected = 0
    for i, events in enumerate(histories):
        rejected += len(check_history(catalog, f"t{i}", programs, events, props).rejected)
    assert rejected > 0


def _events_for(order: tuple[int, ...]) -> list[Event]:
    seqs = [
        [(kind, w, k) for k in range(len(p)) for kind in ("begin", "commit")]
        for w, p in enumerate(THREE_WRITERS)
    ]
    pos = [0] * len(seqs)
    out = []
    for w in order:
        out.append(seqs[w][pos[w]])
        pos[w] += 1
    return out


def test_history_enumeration_is_exhaustive_and_deduplicated() -> None:
    programs = [[Op("delete", key=1)] * 2, [Op("delete", key=2)] * 2]
    assert sum(1 for _ in interleavings(programs)) == 70  # C(8, 4)
    histories = distinct_histories(programs)
    assert len({history_key(h) for h in histories}) == len(histories)
    assert len(histories) < 70
