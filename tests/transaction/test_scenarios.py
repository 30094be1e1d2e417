"""Each operation against each concurrent operation, at both isolation levels.

Every scenario reads the same way:

- setup: table partitioned by ``part``; file A = rows 1-4 in partition ``a``, file B = rows 5-8
  in partition ``b`` (all ``v = 0``);
- what was read: our operation's table handle is loaded now (its snapshot is where it starts);
- what committed meanwhile: the concurrent operation, committed through a fresh handle;
- what we try: our operation, on the stale handle;
- expected: the outcome by Iceberg Java's validation rules (docs: ICEBERG-NOTES.md "Validation each
  operation runs before its compare-and-swap"), plus icefloe's stricter rule that a merge-on-read
  DELETE also rejects concurrent delete files at snapshot isolation (apache/iceberg#10720).

Every operation touches row 2 of file A (the concurrent append inserts another row with id 2, the
phantom a serializable reader must not miss). A success must leave the rows of some serial order of
the two operations; a conflict must leave exactly the concurrent operation's result and no file of
ours behind.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from icefloe.catalog import Catalog
from icefloe.errors import (
    CommitStateUnknownError,
    ConflictError,
    ConflictingDataFilesError,
    ConflictingDeleteFilesError,
    MissingFilesError,
)
from icefloe.testing import CommitFault, FaultInjectingCatalog

from ._model import (
    COW,
    MOR,
    Op,
    Row,
    create_table,
    dangling_delete_violations,
    isolation_properties,
    live_files,
    mode_properties,
    orphan_files,
    run_op,
    sequence_number_violations,
    serial,
    set_properties,
    table_rows,
)

A_ROWS: tuple[Row, ...] = ((1, "a", 0), (2, "a", 0), (3, "a", 0), (4, "a", 0))
B_ROWS: tuple[Row, ...] = ((5, "b", 0), (6, "b", 0), (7, "b", 0), (8, "b", 0))
INITIAL = [*A_ROWS, *B_ROWS]


@dataclass(frozen=True)
class Kind:
    """An operation as the scenarios name it: what it does and in which write mode."""

    name: str
    mode: str
    ours: Op
    concurrent: Op


def _part_a(v: int) -> tuple[Row, ...]:
    return tuple((i, "a", v) for i in range(1, 5))


KINDS = {
    k.name: k
    for k in [
        Kind("append", COW, Op("append", rows=((9, "a", 10),)), Op("append", rows=((2, "a", 20),))),
        Kind("delete-COW", COW, Op("delete", key=2), Op("delete", key=2)),
        Kind("delete-MOR", MOR, Op("delete", key=2), Op("delete", key=2)),
        Kind(
            "overwrite",
            COW,
            Op("overwrite", rows=((2, "a", 10),), key=2),
            Op("overwrite", rows=((2, "a", 20),), key=2),
        ),
        Kind("update-COW", COW, Op("upsert", rows=((2, "a", 10),)), Op("upsert", rows=((2, "a", 20),))),
        Kind("update-MOR", MOR, Op("upsert", rows=((2, "a", 10),)), Op("upsert", rows=((2, "a", 20),))),
        Kind(
            "replace-partitions",
            COW,
            Op("replace_partitions", rows=_part_a(10)),
            Op("replace_partitions", rows=_part_a(20)),
        ),
        Kind("rewrite", COW, Op("compact", part="a"), Op("compact", part="a")),
    ]
}

OK = "ok"
DATA: type[ConflictError] = ConflictingDataFilesError
DELS: type[ConflictError] = ConflictingDeleteFilesError
MISS: type[ConflictError] = MissingFilesError
Outcome = str | type[ConflictError] | tuple[type[ConflictError], ...]

# (ours, concurrent) -> (serializable, snapshot). Where two checks fail at once the first one
# icefloe runs speaks: "files we remove/reference still exist" runs before "no new data files",
# so icefloe says MissingFilesError where Java (which checks new data first) reports conflicting
# data files. Either is a correct rejection; the table pins icefloe's.
_COW_FAMILY: dict[str, tuple[Outcome, Outcome]] = {
    # Copy-on-write removes file A and adds its rewrite: at serializable new data matching the
    # filter conflicts; at any level new deletes for A, or A gone, conflict.
    "append": (DATA, OK),
    "delete-COW": (MISS, MISS),
    "delete-MOR": (DELS, DELS),
    "overwrite": (MISS, MISS),
    "update-COW": (MISS, MISS),
    "update-MOR": (DATA, DELS),
    "replace-partitions": (MISS, MISS),
    # Compaction commits a `replace`, whose added files are not new rows: only A's removal counts.
    "rewrite": (MISS, MISS),
}
_ROW_DELTA: dict[str, tuple[Outcome, Outcome]] = {
    # Merge-on-read references file A by position: A must still exist and get no other deletes.
    "append": (DATA, OK),
    "delete-COW": (MISS, MISS),
    "delete-MOR": (DELS, DELS),  # snapshot: icefloe's stricter rule (Java lets a DELETE through)
    "overwrite": (MISS, MISS),
    "update-COW": (MISS, MISS),
    "update-MOR": (DATA, DELS),
    "replace-partitions": (MISS, MISS),
    "rewrite": (MISS, MISS),
}
_REWRITE: dict[str, tuple[Outcome, Outcome]] = {
    # Compaction only needs its inputs to be live and without new deletes; isolation does not apply.
    "append": (OK, OK),
    "delete-COW": (MISS, MISS),
    "delete-MOR": (DELS, DELS),
    "overwrite": (MISS, MISS),
    "update-COW": (MISS, MISS),
    "update-MOR": (DELS, DELS),
    "replace-partitions": (MISS, MISS),
    "rewrite": (MISS, MISS),
}
_REPLACE_PARTITIONS: dict[str, tuple[Outcome, Outcome]] = {
    # Dynamic partition overwrite is a blind write re-evaluated on every attempt: it drops whatever
    # partition a holds at commit time, so nothing concurrent can be lost or resurrected. Only at
    # serializable does new data in partition a (a phantom its input may have missed) conflict.
    # Iceberg Java (Spark) also rejects concurrent deletes/removals in the partitions at both levels;
    # icefloe deliberately does not: the serial order (concurrent, ours) is what commits.
    "append": (DATA, OK),
    "delete-COW": (DATA, OK),
    "delete-MOR": (OK, OK),
    "overwrite": (DATA, OK),
    "update-COW": (DATA, OK),
    "update-MOR": (DATA, OK),
    "replace-partitions": (DATA, OK),
    "rewrite": (OK, OK),  # compaction adds no new rows
}
EXPECTED: dict[str, dict[str, tuple[Outcome, Outcome]]] = {
    "append": {c: (OK, OK) for c in KINDS},
    "delete-COW": _COW_FAMILY,
    "delete-MOR": _ROW_DELTA,
    "overwrite": _COW_FAMILY,
    "update-COW": _COW_FAMILY,
    "update-MOR": _ROW_DELTA,
    "replace-partitions": _REPLACE_PARTITIONS,
    "rewrite": _REWRITE,
}


@dataclass(frozen=True)
class Scenario:
    ours: str
    concurrent: str
    isolation: str
    expected: Outcome

    def story(self) -> str:
        ours, conc = KINDS[self.ours], KINDS[self.concurrent]
        return (
            f"setup: A=rows 1-4 (part a), B=rows 5-8 (part b); read: {self.ours} handle loaded; "
            f"meanwhile: {conc.concurrent} ({conc.mode}) committed; we try: {ours.ours} ({ours.mode}, "
            f"{self.isolation}); expected: {outcome_name(self.expected)}"
        )

    @property
    def id(self) -> str:
        return (
            f"{self.ours} x concurrent-{self.concurrent} x {self.isolation} -> {outcome_name(self.expected)}"
        )


def outcome_name(o: Outcome) -> str:
    if isinstance(o, str):
        return o
    if isinstance(o, tuple):
        return "|".join(t.__name__ for t in o)
    return o.__name__


SCENARIOS = [
    Scenario(ours, conc, iso, EXPECTED[ours][conc][i])
    for ours in KINDS
    for conc in KINDS
    for i, iso in enumerate(("serializable", "snapshot"))
]


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_scenario(catalog: Catalog, sc: Scenario) -> None:
    ours, conc = KINDS[sc.ours], KINDS[sc.concurrent]
    # setup
    table = create_table(
        catalog, "t", [A_ROWS, B_ROWS], {**mode_properties(ours.mode), **isolation_properties(sc.isolation)}
    )
    # what was read
    stale = catalog.load_table("db.t")
    # what committed meanwhile
    fresh = catalog.load_table("db.t")
    if conc.mode != ours.mode:
        set_properties(fresh, mode_properties(conc.mode))
    concurrent_snapshot = run_op(fresh, conc.concurrent)
    if conc.mode != ours.mode:
        set_properties(fresh, mode_properties(ours.mode))
    after_concurrent = table_rows(fresh)
    assert after_concurrent == serial(INITIAL, [conc.concurrent])
    snapshots_before = [s.snapshot_id for s in fresh.refresh().snapshots()]
    orphans_before = orphan_files(fresh)

    # what we try
    error: Exception | None = None
    try:
        run_op(stale, ours.ours)
    except ConflictError as e:
        error = e

    table.refresh()
    final = table_rows(table)
    if sc.expected == OK:
        assert error is None, f"{sc.story()}; got {type(error).__name__}: {error}"
        serial_orders = [
            serial(INITIAL, [conc.concurrent, ours.ours]),
            serial(INITIAL, [ours.ours, conc.concurrent]),
        ]
        assert final in serial_orders, f"{sc.story()}; {final} is the result of no serial order"
    else:
        assert not isinstance(sc.expected, str)
        expected = sc.expected if isinstance(sc.expected, tuple) else (sc.expected,)
        assert error is not None, f"expected {outcome_name(sc.expected)}, but the commit went through"
        assert isinstance(error, expected), (
            f"expected {outcome_name(sc.expected)}, got {type(error).__name__}"
        )
        assert error.hint, "a conflict must tell the user what to do"
        assert error.context["snapshot_id"] == concurrent_snapshot, "the error names the conflicting commit"
        assert error.context["files"], "the error names the files involved"
        assert {"operation", "isolation_level"} <= set(error.context)
        # ...and left no trace: same snapshots, same rows, no file of ours on disk.
        assert [s.snapshot_id for s in table.snapshots()] == snapshots_before
        assert final == after_concurrent
    assert orphan_files(table) == orphans_before, "the operation left files the table does not reference"
    assert sequence_number_violations(table) == []
    assert dangling_delete_violations(table) == []


def test_the_matrix_covers_every_pair() -> None:
    assert len(SCENARIOS) == len(KINDS) ** 2 * 2
    assert len({s.id for s in SCENARIOS}) == len(SCENARIOS)


# ---------------------------------------------------------------------- apache/iceberg#10720
@pytest.mark.parametrize("first", ["update", "delete"])
def test_concurrent_mor_update_and_delete_of_one_row_at_snapshot_isolation(
    catalog: Catalog, first: str
) -> None:
    """Jack Vanlightly's failing case: a merge-on-read UPDATE and a merge-on-read DELETE of the same
    row, both reading the same snapshot, at snapshot isolation. Java lets the DELETE commit after
    the UPDATE and the updated row survives the delete -- no serial order gives that. icefloe
    rejects whichever commits second, and the row ends as the serial order of what committed."""
    table = create_table(
        catalog, "t", [A_ROWS, B_ROWS], {**mode_properties(MOR), **isolation_properties("snapshot")}
    )
    update, delete = Op("upsert", rows=((2, "a", 1),)), Op("delete", key=2)
    updater, deleter = catalog.load_table("db.t"), catalog.load_table("db.t")
    (winner, winner_op), (loser, loser_op) = (
        ((updater, update), (deleter, delete))
        if first == "update"
        else ((deleter, delete), (updater, update))
    )
    run_op(winner, winner_op)
    with pytest.raises(ConflictingDeleteFilesError) as info:
        run_op(loser, loser_op)
    assert info.value.hint
    table.refresh()
    assert table_rows(table) == serial(INITIAL, [winner_op])
    row2 = [r for r in table_rows(table) if r[0] == 2]
    assert row2 == ([(2, "a", 1)] if first == "update" else [])

    # Re-read and retry: the loser now commits, and the row ends as the serial order says.
    run_op(catalog.load_table("db.t"), loser_op)
    table.refresh()
    assert table_rows(table) == serial(INITIAL, [winner_op, loser_op])
    assert dangling_delete_violations(table) == []
    assert sequence_number_violations(table) == []


# ---------------------------------------------------------------------- the retry window
def test_commit_slipping_in_between_validation_and_swap_is_still_caught(
    faulty: FaultInjectingCatalog,
) -> None:
    """The race the retry loop exists for: our operation validated against the head it saw, then a
    concurrent delete lands before our swap. The swap fails, the retry re-validates on the new
    head, and the conflict is reported instead of committing over it."""
    create_table(faulty, "t", [A_ROWS, B_ROWS], {**mode_properties(MOR), **isolation_properties("snapshot")})
    ours = faulty.load_table("db.t")
    faulty.commits.clear()
    faulty.before_next_swap(lambda: run_op(faulty.inner.load_table("db.t"), Op("delete", key=2)))
    with pytest.raises(ConflictingDeleteFilesError):
        run_op(ours, Op("upsert", rows=((2, "a", 1),)))
    table = faulty.load_table("db.t")
    assert table_rows(table) == serial(INITIAL, [Op("delete", key=2)])
    assert [c.outcome for c in faulty.commits] == ["lost"]
    assert orphan_files(table) == set()


def test_lost_swap_is_retried_and_lands_once(faulty: FaultInjectingCatalog) -> None:
    create_table(faulty, "t", [A_ROWS, B_ROWS], mode_properties(MOR))
    table = faulty.load_table("db.t")
    faulty.commits.clear()
    faulty.inject(CommitFault.LOST_SWAP, CommitFault.LOST_SWAP)
    run_op(table, Op("delete", key=3))
    assert [c.outcome for c in faulty.commits] == ["lost-swap", "lost-swap", "ok"]
    assert table_rows(faulty.load_table("db.t")) == serial(INITIAL, [Op("delete", key=3)])
    assert orphan_files(table.refresh()) == set()


def test_unknown_outcome_that_landed_counts_as_success(faulty: FaultInjectingCatalog) -> None:
    create_table(faulty, "t", [A_ROWS, B_ROWS], mode_properties(COW))
    table = faulty.load_table("db.t")
    faulty.commits.clear()
    faulty.inject(CommitFault.UNKNOWN_APPLIED)
    snapshot_id = run_op(table, Op("delete", key=3))
    assert [c.outcome for c in faulty.commits] == ["unknown-applied"], "resolved without a second commit"
    fresh = faulty.load_table("db.t")
    assert snapshot_id is not None and fresh.current_snapshot().snapshot_id == snapshot_id  # type: ignore[union-attr]
    assert table_rows(fresh) == serial(INITIAL, [Op("delete", key=3)])
    assert orphan_files(fresh) == set()


def test_unknown_outcome_that_did_not_land_keeps_every_file(faulty: FaultInjectingCatalog) -> None:
    """When the catalog cannot say, nothing may be deleted: the files could be live. The error
    reaches the caller and the table is unchanged; the leftovers are orphans for later cleanup."""
    create_table(faulty, "t", [A_ROWS, B_ROWS], mode_properties(MOR))
    table = faulty.load_table("db.t")
    faulty.inject(CommitFault.UNKNOWN_NOT_APPLIED)
    with pytest.raises(CommitStateUnknownError):
        run_op(table, Op("delete", key=3))
    fresh = faulty.load_table("db.t")
    assert table_rows(fresh) == INITIAL
    leftovers = orphan_files(fresh)
    assert any(p.endswith(".parquet") for p in leftovers), "the delete file must not be removed"
    assert any(".metadata.json" in p for p in leftovers), "the unconfirmed metadata must be kept"


# ---------------------------------------------------------------------- delete files left behind
@pytest.mark.parametrize("second", ["delete-COW", "delete-whole-file", "overwrite", "replace-partitions"])
def test_removing_a_data_file_removes_the_deletes_that_only_applied_to_it(
    catalog: Catalog, second: str
) -> None:
    """Setup: a merge-on-read delete left a position-delete file for file A. What we try: an
    operation that removes file A (copy-on-write delete, whole-file delete, overwrite, partition
    replace). Its position deletes apply to nothing any more and must go with it (Iceberg Java
    drops the deletes of a dropped partition); the rows must be right either way."""
    table = create_table(catalog, "t", [A_ROWS, B_ROWS], mode_properties(MOR))
    run_op(table, Op("delete", key=1))
    assert len(live_files(table).deletes) == 1
    set_properties(table, mode_properties(COW))
    op = {
        "delete-COW": Op("delete", key=2),
        "delete-whole-file": Op("delete", key=-1),
        "overwrite": Op("overwrite", rows=((2, "a", 9),), key=2),
        "replace-partitions": Op("replace_partitions", rows=((1, "a", 9),)),
    }[second]
    if second == "delete-whole-file":
        table.delete("part = 'a'")
        expected = [r for r in INITIAL if r[1] != "a"]
    else:
        run_op(table, op)
        expected = serial(INITIAL, [Op("delete", key=1), op])
    assert table_rows(table) == expected
    assert dangling_delete_violations(table) == []


def test_compaction_committed_after_concurrent_commits_keeps_its_starting_sequence_number(
    catalog: Catalog,
) -> None:
    """Setup: rows in file A. What was read: the compaction's snapshot S. What committed meanwhile:
    an append. What we try: the compaction. Its output must carry S's data sequence number (not the
    new snapshot's), so that deletes committed after S keep applying to the rewritten rows."""
    table = create_table(catalog, "t", [A_ROWS, B_ROWS], mode_properties(MOR))
    stale = catalog.load_table("db.t")
    start_seq = stale.metadata.current_snapshot().sequence_number  # type: ignore[union-attr]
    run_op(catalog.load_table("db.t"), Op("append", rows=((9, "a", 1),)))
    snapshot_id = run_op(stale, Op("compact", part="a"))
    table.refresh()
    assert snapshot_id is not None
    compacted = [e for e in live_files(table).entries if e.snapshot_id == snapshot_id]
    assert compacted and all(e.sequence_number == start_seq for e in compacted)
    assert all(e.file_sequence_number == table.snapshot_by_id(snapshot_id).sequence_number for e in compacted)
    assert table_rows(table) == serial(INITIAL, [Op("append", rows=((9, "a", 1),))])
    assert sequence_number_violations(table) == []
