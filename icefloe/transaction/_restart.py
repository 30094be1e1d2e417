"""Statement restart: a row-level statement whose commit fails validation because of a concurrent
commit runs again from the new snapshot, instead of handing the conflict to the caller.

::

    attempt 1: plan on snapshot S ─▶ read, rewrite (execute) ─▶ commit: checks ─▶ ConflictError
               the commit loop deletes what attempt 1 wrote (rewrites, delete files, manifests)
    refresh ─▶ attempt 2: plan on the new head S' ─▶ execute ─▶ commit: checks since S' only
    ...        at most ``commit.statement-restart.max-attempts`` attempts (default 3), then the
               last attempt's ConflictError, with ``statement_attempts`` in its context

A restart never re-applies files planned on an older snapshot: every attempt plans, reads and
writes again. Input the caller handed over (the rows of an upsert or an overwrite) is written
once and reused, since it does not depend on the snapshot. Only statements called on the table
itself restart (``table.delete(...)``); inside ``with table.transaction()`` the user's code cannot
be re-run, so a conflict there is raised as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from icefloe.errors import ConflictError
from icefloe.spec.properties import STATEMENT_RESTART_MAX_ATTEMPTS, int_property

__all__ = ["DEFAULT_MAX_ATTEMPTS", "max_attempts", "run_statement"]

DEFAULT_MAX_ATTEMPTS = 3

T = TypeVar("T")


def max_attempts(properties: Mapping[str, str]) -> int:
    """``commit.statement-restart.max-attempts``: how many times a statement may run in all (1: no
    restart)."""
    return int_property(properties, STATEMENT_RESTART_MAX_ATTEMPTS, DEFAULT_MAX_ATTEMPTS, minimum=1)


def run_statement(attempt: Callable[[int], T], *, limit: int, before_restart: Callable[[], object]) -> T:
    """Run ``attempt(1)``, ``attempt(2)``, ... while each fails with a `ConflictError` that allows
    a restart (``context["restartable"]`` is not False), at most ``limit`` times;
    ``before_restart`` refreshes the table in between."""
    n = 1
    while True:
        try:
            return attempt(n)
        except ConflictError as e:
            if n >= limit or e.context.get("restartable") is False:
                e.context["statement_attempts"] = n
                if n > 1:
                    e.hint = (
                        f"{e.hint + '; ' if e.hint else ''}the statement ran {n} times from newer "
                        f"snapshots and conflicted each time (raise {STATEMENT_RESTART_MAX_ATTEMPTS} "
                        "to try longer)"
                    )
                raise
        n += 1
        before_restart()
