"""The optimistic-concurrency commit loop.

    attempt ─▶ refresh base ─▶ each action: apply(base') ─▶ catalog compare-and-swap
       ▲                                                        │
       └──── CommitFailedError: back off (commit.retry.*) ◀─────┘

Each attempt re-applies the actions on the refreshed metadata (they re-validate there), reusing
what they already wrote: new manifests are written once, a retry writes only a new manifest list
(and, for actions that remove files, the rewrites of manifests it had not rewritten yet); the
refresh takes the metadata the catalog read when it refused the swap instead of reading it again.

How long to retry (``commit.retry.*``, Iceberg Java's names and defaults):

    an action that can conflict    at most num-retries retries, within total-timeout-ms
    only appends (cannot conflict) every retry that fits in total-timeout-ms: an append lands
                                   unless the table is unreachable for that long
    each wait                      jittered exponential backoff in [min-wait-ms, max-wait-ms]

A definite failure cleans up what the actions wrote; an unknown
outcome is resolved by checking the current pointer and the metadata log for the metadata file
the catalog tried to install, then by looking for our snapshots in the refreshed table; if still
unknown it is re-raised without deleting anything (the new metadata may be live).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe.errors import CommitFailedError, CommitStateUnknownError, IcefloeError
from icefloe.spec.properties import int_property
from icefloe.spec.updates import AssertRefSnapshotId, MetadataUpdate, TableRequirement, apply_updates
from icefloe.transaction._producer import SnapshotProducer

if TYPE_CHECKING:
    from icefloe.catalog import Catalog
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["CommitStats", "RetryPolicy", "commit_actions"]


@dataclass(frozen=True)
class RetryPolicy:
    """commit.retry.* with Iceberg Java's defaults."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 30 * 60_000

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> RetryPolicy:
        def get(key: str, default: int) -> int:
            return int_property(props, key, default)

        return cls(
            num_retries=get("commit.retry.num-retries", 4),
            min_wait_ms=get("commit.retry.min-wait-ms", 100),
            max_wait_ms=get("commit.retry.max-wait-ms", 60_000),
            total_timeout_ms=get("commit.retry.total-timeout-ms", 30 * 60_000),
        )

    def wait_ms(self, retry: int) -> float:
        """Exponential backoff with full jitter in [min, min * 2^retry], capped at max."""
        ceiling = min(self.max_wait_ms, self.min_wait_ms * (2 ** min(retry, 40)))
        return float(random.uniform(self.min_wait_ms, max(self.min_wait_ms, ceiling)))

    def may_retry(self, retries: int, elapsed_ms: float, *, until_timeout: bool) -> bool:
        """Whether another attempt may start after ``retries`` retries and ``elapsed_ms``.

        ``until_timeout``: the commit cannot conflict (appends only), so ``num_retries`` does not
        bound it; only the total timeout does."""
        if elapsed_ms >= self.total_timeout_ms:
            return False
        return until_timeout or retries < self.num_retries


@dataclass
class CommitStats:
    attempts: int = 0
    retries: int = 0


def commit_actions(
    catalog: Catalog,
    identifier: tuple[str, ...],
    base: TableMetadata,
    actions: Sequence[SnapshotProducer],
    *,
    extra_updates: Sequence[MetadataUpdate] = (),
    extra_requirements: Sequence[TableRequirement] = (),
    stats: CommitStats | None = None,
    staged: Sequence[TableMetadata] = (),
) -> tuple[TableMetadata, str]:
    """Commit ``actions`` (applied in order) as one atomic change, retrying on conflicts.

    ``staged[i]``, when given, is the metadata action ``i`` was already applied to while the
    transaction was built (``staged[0]`` is ``base``): as long as the table has not moved, each
    action is applied to that same object again, which returns its earlier result instead of
    writing another manifest list."""
    stats = stats if stats is not None else CommitStats()
    try:
        policy = RetryPolicy.from_properties(dict(base.properties))
    except IcefloeError:
        _cleanup(actions, committed=False)  # a bad commit.retry.* value: nothing may stay behind
        raise
    started = time.monotonic()
    # Appends validate nothing: retrying them can only succeed, so they retry until the timeout.
    until_timeout = not extra_requirements and all(a.cannot_conflict for a in actions)
    current = base
    while True:
        stats.attempts += 1
        try:
            updates: list[MetadataUpdate] = list(extra_updates)
            requirements: list[TableRequirement] = list(extra_requirements)
            reuse = current is base and len(staged) == len(actions)
            # The actions see the transaction's own metadata changes (properties, schema) on every
            # attempt, not only on the first one, whose staged metadata already holds them.
            working = apply_updates(current, extra_updates, None) if extra_updates and not reuse else current
            for i, action in enumerate(actions):
                if reuse:
                    working = staged[i]
                changes = action.apply(working)
                # Later actions in the transaction see the earlier ones' effects.
                working = apply_updates(working, changes.updates, None)
                updates += changes.updates
                for r in changes.requirements:
                    _add_requirement(requirements, r)
            result = catalog.commit_table(identifier, requirements, updates)
        except CommitFailedError as e:
            elapsed_ms = (time.monotonic() - started) * 1000
            if not policy.may_retry(stats.retries, elapsed_ms, until_timeout=until_timeout):
                _cleanup(actions, committed=False)
                e.context.pop("current_metadata", None)  # internal to the loop, and large
                e.context.setdefault("attempts", stats.attempts)
                raise
            stats.retries += 1
            remaining_ms = policy.total_timeout_ms - elapsed_ms
            time.sleep(max(0.0, min(policy.wait_ms(stats.retries), remaining_ms)) / 1000)
            current = _refreshed(catalog, identifier, e)
            continue
        except CommitStateUnknownError as e:
            if _landed(catalog, identifier, actions, e.context.get("metadata_location")):
                _cleanup(actions, committed=True)
                table = catalog.load_table(identifier)
                return table.metadata, table.metadata_location
            raise
        except IcefloeError:
            # Validation failed or the input was bad: nothing was committed.
            _cleanup(actions, committed=False)
            raise
        _cleanup(actions, committed=True)
        return result


def _refreshed(catalog: Catalog, identifier: tuple[str, ...], error: CommitFailedError) -> TableMetadata:
    """The table's metadata after a refused commit: the catalog attaches what it read when a
    requirement failed (``current_metadata``), so it is not read a second time; a lost swap or
    a catalog that attaches nothing means loading it."""
    from icefloe.spec.table_metadata import TableMetadata

    seen = error.context.get("current_metadata")
    if isinstance(seen, TableMetadata):
        return seen
    return catalog.load_table(identifier).metadata


def _add_requirement(requirements: list[TableRequirement], r: TableRequirement) -> None:
    """Requirements describe the base the whole commit starts from: when two actions of one
    transaction touch the same branch, only the first one's expectation of it is kept."""
    if r in requirements:
        return
    if isinstance(r, AssertRefSnapshotId) and any(
        isinstance(q, AssertRefSnapshotId) and q.ref == r.ref for q in requirements
    ):
        return
    requirements.append(r)


def _landed(
    catalog: Catalog,
    identifier: tuple[str, ...],
    actions: Sequence[SnapshotProducer],
    attempted_location: str | None = None,
) -> bool:
    """Whether the commit whose outcome is unknown went through.

    It did if the metadata file it tried to install is the current pointer or appears in the
    metadata log (a later commit built on it), or if every action's snapshot is in the table.
    When neither can be seen, the outcome stays unknown: the caller re-raises and deletes nothing.
    """
    try:
        table = catalog.load_table(identifier)
    except IcefloeError:
        return False
    metadata = table.metadata
    if attempted_location is not None and (
        table.metadata_location == attempted_location
        or any(entry.metadata_file == attempted_location for entry in metadata.metadata_log)
    ):
        return True
    return bool(actions) and all(
        a.committed_snapshot is not None and a.committed_snapshot.snapshot_id in metadata.snapshots_by_id
        for a in actions
    )


def _cleanup(actions: Sequence[SnapshotProducer], *, committed: bool) -> None:
    for a in actions:
        a.cleanup(committed=committed)
