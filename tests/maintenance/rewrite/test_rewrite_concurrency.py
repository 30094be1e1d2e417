"""Each rewrite action against each concurrent change, as scenarios.

Every scenario reads the same way:

- setup: a table partitioned by ``part`` (6 appends: files in partitions ``a`` and ``b``), in the
  write mode the concurrent change needs;
- what was read: our action plans (its starting snapshot is the table's head now);
- what committed meanwhile: the concurrent change, through a fresh handle, either before our
  action rewrites anything or after it wrote its files and before it commits;
- what we try: our action's execution and commit;
- expected: it commits, or fails with the typed error Iceberg Java's validation rules give
  (ICEBERG-NOTES.md, "Validation each operation runs"); either way every snapshot still in the
  table reads the rows it read before, every file it reaches exists, no file of ours is left
  behind, and the current rows are the concurrent change's (a rewrite changes no row).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from rewrite_checks import (
    COW,
    MOR,
    check_snapshots_intact,
    every_snapshot_rows,
    make_table,
    orphans,
    referenced_files,
    rows,
    table_rows,
)

from icefloe.errors import (
    ConflictError,
    ConflictingDeleteFilesError,
    FileIOError,
    IcefloeError,
    MissingFilesError,
)
from icefloe.io.local import local_path
from icefloe.maintenance import _execution
from icefloe.maintenance.rewrite_data_files import RewriteDataFiles
from icefloe.maintenance.rewrite_manifests import RewriteManifestsAction
from icefloe.maintenance.rewrite_position_deletes import RewritePositionDeleteFiles
from icefloe.spec.updates import AssertTableUUID, RemoveSnapshots

OK = "ok"
# names of the files our actions write before the concurrent change lands
OUR_FILES = ("rewrite-test", "deletes-test", "optimized-m-")
Outcome = str | type[IcefloeError] | tuple[type[IcefloeError], ...]


# ------------------------------------------------------------------ concurrent changes


def _expire(table: Any, keep: Callable[[list[int]], list[int]]) -> None:
    """Expire-style removal: drop the snapshots ``keep`` does not keep, then delete the files
    only they reached (what snapshot expiry does)."""
    ids = [s.snapshot_id for s in sorted(table.snapshots(), key=lambda s: s.sequence_number)]
    kept = set(keep(ids))
    gone = [i for i in ids if i not in kept]
    reached_by_kept = set().union(*(referenced_files(table, i) for i in kept))
    reached_by_gone = set().union(*(referenced_files(table, i) for i in gone)) if gone else set()
    table.catalog.commit_table(
        table.identifier, [AssertTableUUID(table.metadata.table_uuid)], [RemoveSnapshots(gone)]
    )
    for p in reached_by_gone - reached_by_kept:
        os.remove(p)


CONCURRENT: dict[str, tuple[dict[str, str], Callable[[Any], None]]] = {
    "append": (MOR, lambda t: t.append(rows([1001, 1003], "a"))),
    "delete-COW": (COW, lambda t: t.delete("id = 3")),
    "delete-MOR": (MOR, lambda t: t.delete("id = 3")),
    "delete-MOR-elsewhere": (MOR, lambda t: t.delete("id = 4")),  # partition b
    "overwrite": (COW, lambda t: t.overwrite(rows([3], "a"), "id = 3")),
    "rewrite": (
        MOR,
        lambda t: t.maintenance.rewrite_data_files(where="part = 'a'", options={"rewrite-all": "true"}),
    ),
    "expire-old": (MOR, lambda t: _expire(t, lambda ids: ids[2:])),
    "append-expire-start": (MOR, lambda t: (t.append(rows([1001], "a")), _expire(t, lambda ids: ids[-1:]))),
}


@dataclass(frozen=True)
class Scenario:
    action: str
    concurrent: str
    expected: Outcome
    # where the concurrent change lands: after planning, or after the rewrite wrote its files
    when: str = "before-commit"


# Compaction of partition a (RewriteFiles from the starting snapshot).
_COMPACTION: dict[str, Outcome] = {
    "append": OK,  # new files are not rewritten: both commit
    "delete-COW": MissingFilesError,  # an input file was removed
    "delete-MOR": ConflictingDeleteFilesError,  # an input file got new deletes
    "delete-MOR-elsewhere": OK,
    "overwrite": MissingFilesError,
    "rewrite": MissingFilesError,
    "expire-old": OK,
    "append-expire-start": ConflictError,  # the starting snapshot is gone: history unknown
}
# Merging the position delete files of partition a (RewriteFiles of delete files).
_DELETES: dict[str, Outcome] = {
    "append": OK,
    "delete-COW": MissingFilesError,  # the data file was rewritten and its deletes went with it
    "delete-MOR": OK,  # new delete files beside ours
    "delete-MOR-elsewhere": OK,
    "overwrite": MissingFilesError,
    "rewrite": MissingFilesError,
    "expire-old": OK,
    "append-expire-start": ConflictError,  # the history since the start cannot be checked
}
# Rewriting the data manifests (RewriteManifests: the replaced manifests must still be current).
_MANIFESTS: dict[str, Outcome] = {
    "append": OK,
    "delete-COW": MissingFilesError,  # the manifest of the deleted file was rewritten
    "delete-MOR": OK,  # adds a delete manifest, keeps ours
    "delete-MOR-elsewhere": OK,
    "overwrite": MissingFilesError,
    "rewrite": MissingFilesError,
    "expire-old": OK,
    "append-expire-start": OK,
}

SCENARIOS = [
    *(
        Scenario("compaction", c, e, w)
        for c, e in _COMPACTION.items()
        for w in ("before-rewrite", "before-commit")
    ),
    *(Scenario("sort", c, e) for c, e in _COMPACTION.items()),
    *(Scenario("position-deletes", c, e) for c, e in _DELETES.items()),
    *(Scenario("manifests", c, e) for c, e in _MANIFESTS.items()),
]


# ------------------------------------------------------------------ our actions, in their three steps


def _compaction(table: Any, concurrent: Callable[[], None], when: str, strategy: str = "binpack") -> None:
    kwargs: dict[str, Any] = {"sort_order": "v"} if strategy == "sort" else {}
    action = RewriteDataFiles(table, strategy, where="part = 'a'", options={"rewrite-all": "true"}, **kwargs)
    plan = action.plan()
    assert plan.groups
    if when == "before-rewrite":
        concurrent()
    outcomes = list(action.runner().rewrite_data_groups(plan, "rewrite-test"))
    if when == "before-commit":
        concurrent()
    _execution.commit_data_groups(
        table,
        plan,
        iter(outcomes),
        partial_progress=False,
        max_commits=10,
        max_failed_commits=10,
        use_starting_sequence_number=True,
    )
    for o in outcomes:
        assert o.ok, o.describe_error()


def _position_deletes(table: Any, concurrent: Callable[[], None], when: str) -> None:
    from icefloe.maintenance.rewrite_position_deletes import commit_position_delete_groups

    action = RewritePositionDeleteFiles(table, where="part = 'a'", options={"rewrite-all": "true"})
    plan = action.plan()
    assert plan.groups
    outcomes = list(
        _execution.make_runner(None, table.io, 2).rewrite_position_delete_groups(plan, "deletes-test")
    )
    concurrent()
    commit_position_delete_groups(table, plan, iter(outcomes), partial_progress=False, max_commits=10)


def _manifests(table: Any, concurrent: Callable[[], None], when: str) -> None:
    action = RewriteManifestsAction(table)
    plan = action.plan()
    assert plan.sets
    written = action.write(plan)
    concurrent()
    action.commit(plan, written)


ACTIONS: dict[str, Callable[[Any, Callable[[], None], str], None]] = {
    "compaction": _compaction,
    "sort": lambda t, c, w: _compaction(t, c, w, "sort"),
    "position-deletes": _position_deletes,
    "manifests": _manifests,
}


def _setup(catalog: Any, name: str, action: str, mode: dict[str, str]) -> Any:
    t = make_table(catalog, name, files=6, properties=mode)
    if action == "position-deletes":
        # small merge-on-read deletes in partition a (icefloe writes one file per data file);
        # the table's own mode is set after them
        with t.transaction() as tx:
            tx.set_properties(**MOR)
        for i in (1, 5, 7, 51, 55):
            t.delete(f"id = {i}")
        with t.transaction() as tx:
            tx.set_properties(**mode)
    return t


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: f"{s.action}-vs-{s.concurrent}-{s.when}")
def test_rewrite_against_a_concurrent_change(catalog: Any, s: Scenario) -> None:
    mode, change = CONCURRENT[s.concurrent]
    name = f"{s.action}_{s.concurrent}_{s.when}".replace("-", "_")
    ours = _setup(catalog, name, s.action, mode)
    other = catalog.load_table(f"ns.{name}")
    state: dict[str, Any] = {}

    def concurrent() -> None:
        change(other)
        other.refresh()
        state["rows"] = table_rows(other)
        state["snapshots"] = every_snapshot_rows(other)
        state["orphans"] = orphans(other)
        state["location"] = other.metadata_location

    try:
        ACTIONS[s.action](ours, concurrent, s.when)
        outcome: Outcome = OK
    except IcefloeError as e:
        outcome = type(e)
    expected = s.expected
    if isinstance(expected, type):
        assert isinstance(outcome, type) and issubclass(outcome, expected), (outcome, expected)
        assert ours.refresh().metadata_location == state["location"]  # nothing committed
    else:
        assert outcome == OK
        assert ours.refresh().metadata_location != state["location"]
        assert ours.current_snapshot().summary.operation.value == "replace"
    # no row changed in any snapshot, no retained snapshot lost a file, nothing of ours is left
    check_snapshots_intact(ours, state["snapshots"])
    assert table_rows(ours) == state["rows"]
    # the files our action had written by then were orphans at that moment; none may stay one
    theirs = {p for p in state["orphans"] if not any(k in p for k in OUR_FILES)}
    assert orphans(ours) == theirs


def test_compaction_reading_a_file_expiry_deleted_fails_cleanly(catalog: Any) -> None:
    """A copy-on-write delete removes a file, then expiry deletes it before the rewrite reads it:
    the rewrite fails with a typed error, and writes nothing."""
    t = make_table(catalog, "expired_input", files=6, properties=COW)
    action = RewriteDataFiles(t, where="part = 'a'", options={"rewrite-all": "true"})
    plan = action.plan()
    other = catalog.load_table("ns.expired_input")
    other.delete("id = 3")
    _expire(other, lambda ids: ids[-1:])
    gone = [f for g in plan.groups for f in g.data_files if not os.path.exists(local_path(f.file_path))]
    assert gone
    before = every_snapshot_rows(other.refresh())
    left_over = orphans(other)
    location = other.metadata_location
    with pytest.raises((FileIOError, ConflictError)):
        action.execute(plan)
    assert t.refresh().metadata_location == location
    check_snapshots_intact(t, before)
    assert orphans(t) == left_over
