"""Statement restart (``commit.statement-restart.max-attempts``) and appends that always land.

Scenarios read as in test_scenarios.py: setup; what our statement read (a handle loaded now);
what committed meanwhile (through a fresh handle); what we try (the statement on the stale handle,
called on the table itself, so it may restart from the new snapshot); expected outcome. Concurrent
runs end with the serializability check: the table equals the result of some serial order of the
statements that reported success.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

import pyarrow.compute as pc
import pytest

from icefloe.catalog import Catalog
from icefloe.errors import (
    CommitFailedError,
    ConfigError,
    ConflictError,
    ConflictingDeleteFilesError,
    IcefloeError,
)
from icefloe.spec.properties import STATEMENT_RESTART_MAX_ATTEMPTS
from icefloe.testing import CommitFault, FaultInjectingCatalog
from icefloe.transaction import RetryPolicy

from ._model import (
    COW,
    MOR,
    Row,
    arrow_rows,
    create_table,
    dangling_delete_violations,
    isolation_properties,
    mode_properties,
    orphan_files,
    set_properties,
    table_rows,
)

ONE_FILE: list[Row] = [(i, "a", 0) for i in range(20)]

Effect = Callable[[list[Row]], list[Row]]


def serial_results(initial: Sequence[Row], effects: Sequence[Effect]) -> list[list[Row]]:
    """The table each serial order of ``effects`` leaves (one per permutation)."""
    out = []
    for order in itertools.permutations(effects):
        rows = list(initial)
        for effect in order:
            rows = effect(rows)
        out.append(sorted(rows))
    return out


def assert_serializable(final: list[Row], initial: Sequence[Row], succeeded: Sequence[Effect]) -> None:
    assert final in serial_results(initial, succeeded), (
        f"the table ({final}) is not the result of any serial order of the {len(succeeded)} "
        "statements that reported success"
    )


def delete_effect(lo: int, hi: int) -> Effect:
    return lambda rows: [r for r in rows if not lo <= r[0] < hi]


def update_effect(lo: int, hi: int) -> Effect:
    return lambda rows: [(r[0], r[1], r[2] + 1) if lo <= r[0] < hi else r for r in rows]


# ---------------------------------------------------------------------- retry policy
def test_appends_retry_until_the_total_timeout_not_num_retries(faulty: FaultInjectingCatalog) -> None:
    create_table(faulty, "t", [ONE_FILE], {"commit.retry.num-retries": "1", "commit.retry.max-wait-ms": "2"})
    table = faulty.load_table("db.t")
    faulty.inject(*[CommitFault.LOST_SWAP] * 12)
    tx = table.transaction()
    tx.append(arrow_rows([(100, "a", 0)]))
    tx.commit()
    assert tx.stats.retries == 12
    assert (100, "a", 0) in table_rows(faulty.load_table("db.t"))
    assert orphan_files(table.refresh()) == set()


def test_a_commit_that_can_conflict_still_stops_after_num_retries(faulty: FaultInjectingCatalog) -> None:
    create_table(faulty, "t", [ONE_FILE], {"commit.retry.num-retries": "1", **mode_properties(MOR)})
    table = faulty.load_table("db.t")
    faulty.inject(*[CommitFault.LOST_SWAP] * 3)
    with pytest.raises(CommitFailedError) as info:
        table.delete("id < 3")
    assert info.value.context["attempts"] == 2
    assert "current_metadata" not in info.value.context
    assert table_rows(table.refresh()) == sorted(ONE_FILE)
    assert orphan_files(table) == set()


def test_retry_policy_bounds() -> None:
    policy = RetryPolicy(num_retries=2, min_wait_ms=10, max_wait_ms=50, total_timeout_ms=1000)
    assert policy.may_retry(1, 0, until_timeout=False)
    assert not policy.may_retry(2, 0, until_timeout=False)
    assert policy.may_retry(500, 999, until_timeout=True)
    assert not policy.may_retry(0, 1000, until_timeout=True)
    assert all(10 <= policy.wait_ms(r) <= 50 for r in (1, 5, 100, 10_000))


# ---------------------------------------------------------------------- statement restart
def test_disjoint_mor_deletes_of_one_file_both_succeed(catalog: Catalog) -> None:
    """Setup: one data file of ids 0-19, merge-on-read. Read: both handles. Meanwhile: ids 0-9
    deleted. We try: delete ids 10-19 on the stale handle. Its first attempt conflicts (a new
    position delete file for the same data file); the restart re-plans on the new snapshot."""
    create_table(catalog, "t", [ONE_FILE], mode_properties(MOR))
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id < 10")
    snap = ours.delete("id >= 10")
    assert snap is not None
    table = catalog.load_table("db.t")
    assert table_rows(table) == []
    assert table.current_snapshot().snapshot_id == snap.snapshot_id  # type: ignore[union-attr]
    assert orphan_files(table) == set()  # the first attempt's delete file went
    assert dangling_delete_violations(table) == []


def test_restart_is_bounded_by_the_property_and_fails_typed(catalog: Catalog) -> None:
    create_table(catalog, "t", [ONE_FILE], {**mode_properties(MOR), STATEMENT_RESTART_MAX_ATTEMPTS: "1"})
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id < 10")
    with pytest.raises(ConflictingDeleteFilesError) as info:
        ours.delete("id >= 10")
    assert info.value.context["statement_attempts"] == 1
    table = catalog.load_table("db.t")
    assert table_rows(table) == sorted(r for r in ONE_FILE if r[0] >= 10)
    assert orphan_files(table) == set()


def test_restarts_that_keep_conflicting_fail_typed_after_max_attempts(faulty: FaultInjectingCatalog) -> None:
    """Every attempt is beaten by another delete of the same file just before its swap."""
    create_table(faulty, "t", [ONE_FILE], {**mode_properties(MOR), STATEMENT_RESTART_MAX_ATTEMPTS: "3"})
    ours = faulty.load_table("db.t")
    victims = iter(range(3))

    def concurrent_delete() -> None:
        faulty.inner.load_table("db.t").delete(f"id = {next(victims)}")
        faulty.before_next_swap(concurrent_delete)

    faulty.before_next_swap(concurrent_delete)
    with pytest.raises(ConflictError) as info:
        ours.delete("id >= 10")
    assert info.value.context["statement_attempts"] == 3
    assert STATEMENT_RESTART_MAX_ATTEMPTS in (info.value.hint or "")
    table = faulty.inner.load_table("db.t")
    assert table_rows(table) == sorted(r for r in ONE_FILE if r[0] >= 3)
    assert orphan_files(table) == set()


def test_inside_an_explicit_transaction_a_conflict_is_raised(catalog: Catalog) -> None:
    create_table(catalog, "t", [ONE_FILE], mode_properties(MOR))
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id < 10")
    with pytest.raises(ConflictingDeleteFilesError), ours.transaction() as tx:
        tx.delete("id >= 10")
    assert orphan_files(catalog.load_table("db.t")) == set()


@pytest.mark.parametrize("mode", [COW, MOR])
def test_update_restarts_and_applies_to_the_new_snapshot(catalog: Catalog, mode: str) -> None:
    create_table(catalog, "t", [ONE_FILE], mode_properties(mode))
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id < 5")
    ours.update("id < 10", set={"v": pc.field("v") + 1})
    table = catalog.load_table("db.t")
    assert table_rows(table) == update_effect(0, 10)(delete_effect(0, 5)(sorted(ONE_FILE)))
    assert orphan_files(table) == set()


@pytest.mark.parametrize("mode", [COW, MOR])
def test_upsert_restarts_reusing_its_written_input(catalog: Catalog, mode: str) -> None:
    create_table(catalog, "t", [ONE_FILE], mode_properties(mode))
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id < 5")
    ours.upsert(arrow_rows([(3, "a", 7), (30, "a", 7)]), ["id"])
    table = catalog.load_table("db.t")
    expected = sorted([*(r for r in ONE_FILE if r[0] >= 5), (3, "a", 7), (30, "a", 7)])
    assert table_rows(table) == expected
    assert orphan_files(table) == set()


def test_overwrite_where_restarts(catalog: Catalog) -> None:
    create_table(catalog, "t", [ONE_FILE], mode_properties(COW))
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id = 15")
    ours.overwrite(arrow_rows([(100, "a", 1)]), where="id >= 10")
    table = catalog.load_table("db.t")
    assert table_rows(table) == sorted([*(r for r in ONE_FILE if r[0] < 10), (100, "a", 1)])
    assert orphan_files(table) == set()


def test_a_failed_statement_deletes_its_written_input(catalog: Catalog) -> None:
    create_table(catalog, "t", [ONE_FILE], {**mode_properties(COW), STATEMENT_RESTART_MAX_ATTEMPTS: "1"})
    ours, theirs = catalog.load_table("db.t"), catalog.load_table("db.t")
    theirs.delete("id = 15")
    with pytest.raises(ConflictError):
        ours.overwrite(arrow_rows([(100, "a", 1)]), where="id >= 10")
    with pytest.raises(ConflictError):
        ours.upsert(arrow_rows([(12, "a", 1)]), ["id"])
    assert orphan_files(catalog.load_table("db.t")) == set()


@pytest.mark.parametrize("value", ["0", "three", "-1"])
def test_the_property_is_checked_when_set(catalog: Catalog, value: str) -> None:
    table = create_table(catalog, "t", [ONE_FILE], {})
    with pytest.raises(ConfigError, match="statement-restart"):
        set_properties(table, {STATEMENT_RESTART_MAX_ATTEMPTS: value})


# ---------------------------------------------------------------------- concurrent statements
def _run_concurrently(statements: Sequence[Callable[[], object]]) -> list[BaseException | None]:
    results: list[BaseException | None] = [None] * len(statements)
    barrier = threading.Barrier(len(statements))

    def run(i: int) -> None:
        barrier.wait()
        try:
            statements[i]()
        except BaseException as e:  # recorded and checked by the test
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(statements))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.mark.parametrize("round_", range(3))
def test_threads_deleting_disjoint_ranges_of_one_mor_file_all_succeed(catalog: Catalog, round_: int) -> None:
    create_table(catalog, "t", [ONE_FILE], {**mode_properties(MOR), STATEMENT_RESTART_MAX_ATTEMPTS: "10"})
    ranges = [(0, 5), (5, 10), (10, 15)]
    handles = [catalog.load_table("db.t") for _ in ranges]
    errors = _run_concurrently(
        [
            lambda h=h, r=r: h.delete(f"id >= {r[0]} and id < {r[1]}")
            for h, r in zip(handles, ranges, strict=True)
        ]
    )
    assert errors == [None] * len(ranges)
    table = catalog.load_table("db.t")
    assert table_rows(table) == sorted(r for r in ONE_FILE if r[0] >= 15)
    assert orphan_files(table) == set()


@pytest.mark.parametrize(("mode", "level"), [(MOR, "serializable"), (MOR, "snapshot"), (COW, "serializable")])
def test_concurrent_update_and_delete_of_the_same_rows_is_serializable(
    catalog: Catalog, mode: str, level: str
) -> None:
    create_table(catalog, "t", [ONE_FILE], {**mode_properties(mode), **isolation_properties(level)})
    updater, deleter = catalog.load_table("db.t"), catalog.load_table("db.t")
    statements: list[tuple[Callable[[], object], Effect]] = [
        (lambda: updater.update("id < 12", set={"v": pc.field("v") + 1}), update_effect(0, 12)),
        (lambda: deleter.delete("id >= 6 and id < 16"), delete_effect(6, 16)),
    ]
    errors = _run_concurrently([s for s, _ in statements])
    assert all(e is None or isinstance(e, IcefloeError) for e in errors), errors
    succeeded = [effect for (_, effect), e in zip(statements, errors, strict=True) if e is None]
    table = catalog.load_table("db.t")
    assert_serializable(table_rows(table), ONE_FILE, succeeded)
    assert orphan_files(table) == set()
    assert dangling_delete_violations(table) == []


def test_the_checker_rejects_a_non_serial_result() -> None:
    lost_update = [(i, "a", 1 if i < 6 else 0) for i in range(20) if not 6 <= i < 16]
    with pytest.raises(AssertionError):
        assert_serializable(
            sorted([*lost_update, (7, "a", 1)]), ONE_FILE, [update_effect(0, 12), delete_effect(6, 16)]
        )

