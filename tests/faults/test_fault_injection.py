"""Fault injection at every step of every operation (issue 15, part 3).

For each operation below, a tiny partitioned table is restored from a template and the k-th
FileIO call (new_input, new_output, open, create, a stream's write and close, delete, list) or the
k-th catalog call (pointer load, pointer swap) of the operation fails, with three kinds of fault:
an I/O error, and a commit whose state is unknown both ways (the swap happened, or it did not,
and the client gets `CommitStateUnknownError` either way; for FileIO calls "applied" means the
write or delete took effect before the error). After every injected failure the table must load,
hold exactly a committed state (before or after the operation; "before" when the operation
reported a plain failure), reference no missing file, take the operation again on the same
`Table` object after a failure that committed nothing, and come back to exactly its referenced
files after ``remove_orphan_files(older_than=now)``; the error must be a typed `IcefloeError`.
Covered: v2 tables (copy-on-write and merge-on-read position deletes) and v3 deletion vectors.
The machinery and the precise checks are in fault_harness.py.

The catalog layer is swept twice: at the pointer calls of an in-memory catalog (every operation),
and at the database calls of a real SQL (SQLite) catalog (connect/begin fail; a transaction's
commit fails after committing or after rolling back), which also exercises how that catalog
resolves an unknown commit.

**Default (bounded, < 60 s):** every catalog call k of every operation, every FileIO call k of
the operations in ``EXHAUSTIVE_BY_DEFAULT``, and for the others k = 1, the last call and
``SAMPLES`` random calls per fault kind; the SQL database sweep for ``SQL_BY_DEFAULT``.

**Exhaustive, on demand:** ``ICEFLOE_FAULTS=exhaustive`` fails every k of every operation::

    ICEFLOE_FAULTS=exhaustive .venv/bin/python -m pytest -q -p no:cacheprovider tests/faults

The figures (calls per operation, trials per layer and kind, failed checks) are printed in the
"fault injection" section at the end of the run.

Crash tests (a writer killed with SIGKILL at random points) are in test_crash.py: 3 kills by
default, 20 with ``ICEFLOE_FAULTS=exhaustive``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest
from fault_harness import SCHEMA, sweep, sweep_sql
from fault_harness import rows as _rows

EXHAUSTIVE = os.environ.get("ICEFLOE_FAULTS", "").lower() == "exhaustive"
EXHAUSTIVE_BY_DEFAULT = {"append", "expire_snapshots"}
SAMPLES = 1


def _now() -> int:
    return time.time_ns() // 1_000_000


def _schema_update(t: Any) -> None:
    with t.update_schema() as u:
        u.add_column("extra", SCHEMA.field("v").type)


def _spec_update(t: Any) -> None:
    with t.update_spec() as u:
        u.add_field("bucket(4, id)")


def _branch_and_tag(t: Any) -> None:
    current = t.current_snapshot()
    with t.manage_snapshots() as ms:
        ms.create_branch("b1", current.snapshot_id).create_tag("t1", current.parent_snapshot_id)


def _rollback(t: Any) -> None:
    with t.manage_snapshots() as ms:
        ms.rollback_to(t.current_snapshot().parent_snapshot_id)


def _transaction(t: Any) -> None:
    with t.transaction() as tx:
        tx.append(_rows(600, 601))
        tx.delete("id = 3")
        tx.set_properties(**{"faults.marker": "1"})


OPERATIONS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "append": ("cow", lambda t: t.append(_rows(100, 101))),
    "overwrite": ("cow", lambda t: t.overwrite(_rows(200, 201))),
    "overwrite where": ("cow", lambda t: t.overwrite(_rows(301, cat="a"), "cat = 'a'")),
    "delete copy-on-write": ("cow", lambda t: t.delete("id = 3")),
    "delete merge-on-read": ("mor", lambda t: t.delete("id = 3")),
    "delete merge-on-read v3 (deletion vectors)": ("mor-v3", lambda t: t.delete("id = 3")),
    "update copy-on-write": ("cow", lambda t: t.update("id = 4", {"v": "u"})),
    "update merge-on-read": ("mor", lambda t: t.update("id = 4", {"v": "u"})),
    "update merge-on-read v3 (deletion vectors)": ("mor-v3", lambda t: t.update("id = 5", {"v": "u"})),
    "upsert": ("cow", lambda t: t.upsert(_rows(3, 400, v="new"), ["id"])),
    "replace_partitions": ("cow", lambda t: t.replace_partitions(_rows(500, cat="b"))),
    "transaction (append, delete, properties)": ("cow", _transaction),
    "append, old metadata deleted after commit": ("cow-dac", lambda t: t.append(_rows(102))),
    "schema update": ("cow", _schema_update),
    "spec update": ("cow", _spec_update),
    "branch and tag": ("cow", _branch_and_tag),
    "rollback": ("cow", _rollback),
    "rewrite_data_files": (
        "cow",
        lambda t: t.maintenance.rewrite_data_files(options={"min-input-files": "2"}),
    ),
    "rewrite_position_delete_files": (
        "mor",
        lambda t: t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"}),
    ),
    "rewrite_manifests": ("cow", lambda t: t.maintenance.rewrite_manifests()),
    "expire_snapshots": (
        "cow",
        lambda t: t.maintenance.expire_snapshots(older_than=_now(), retain_last=1),
    ),
    "remove_orphan_files": (
        "orphan",
        lambda t: t.maintenance.remove_orphan_files(older_than=_now()),
    ),
}

#: Operations whose sweep finds a bug not fixed yet: name -> the bug (xfail, strict).
KNOWN_BUGS: dict[str, str] = {}


def _params() -> list[Any]:
    out = []
    for name in OPERATIONS:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[name])] if name in KNOWN_BUGS else []
        out.append(pytest.param(name, marks=marks, id=name.replace(" ", "-")))
    return out


@pytest.mark.parametrize("name", _params())
def test_every_fault_leaves_a_committed_state(templates: dict[str, Any], name: str) -> None:
    template_name, op = OPERATIONS[name]
    figures = sweep(
        templates[template_name],
        name,
        op,
        exhaustive=EXHAUSTIVE or name in EXHAUSTIVE_BY_DEFAULT,
        samples=SAMPLES,
    )
    assert figures.total > 0
    assert not figures.failures, f"{len(figures.failures)} failed checks:\n" + "\n".join(
        figures.failures[:10]
    )


#: Operations whose SQL catalog database calls are failed by default (all of them when exhaustive).
SQL_BY_DEFAULT = ("append", "delete merge-on-read", "expire_snapshots")


@pytest.mark.parametrize("name", [n for n in OPERATIONS if EXHAUSTIVE or n in SQL_BY_DEFAULT])
def test_every_database_fault_of_a_sql_catalog_leaves_a_committed_state(
    templates: dict[str, Any], name: str, tmp_path: Any
) -> None:
    """The catalog layer once more with a real SQL (SQLite) catalog: its k-th database call
    fails (connect/begin: the database is unreachable; a transaction commit: the commit happened
    or not and the client gets the error either way) and the same checks hold."""
    template_name, op = OPERATIONS[name]
    figures = sweep_sql(templates[template_name], name, op, str(tmp_path / "catalog.db"))
    assert figures.total > 0
    assert not figures.failures, f"{len(figures.failures)} failed checks:\n" + "\n".join(
        figures.failures[:10]
    )


def _append_then_fail_untyped(t: Any) -> None:
    t.append(_rows(900))
    raise OSError("a raw error after the commit")


def _delete_an_old_manifest_list(t: Any) -> None:
    t.append(_rows(901))
    os.remove(t.snapshots()[0].manifest_list.removeprefix("file://"))


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (_append_then_fail_untyped, "untyped OSError"),
        (_delete_an_old_manifest_list, "referenced files are gone"),
    ],
)
def test_the_checks_catch_broken_operations(templates: dict[str, Any], op: Any, expected: str) -> None:
    """The harness itself: an operation that commits and then raises an untyped error, or that
    deletes a file its own snapshot references, fails the checks."""
    from fault_harness import FaultPlan, Kind, check, clean_table, rows_of, run

    template = templates["cow"]
    plan = FaultPlan("none", 0, Kind.RAISE)
    out, _ = run(template, op, plan)
    after = rows_of(clean_table(template, out.pointer))
    with pytest.raises(AssertionError, match=expected):
        check(template, plan, out, after)
