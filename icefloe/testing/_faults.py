"""A catalog wrapper that makes commits fail on purpose, for testing commit paths.

Real catalogs rarely lose a compare-and-swap at the moment a test needs it, and never time out on
cue. `FaultInjectingCatalog` wraps any icefloe catalog and, for the next commits, can:

- ``CommitFault.LOST_SWAP``: report that another writer won (`CommitFailedError`, retryable);
- ``CommitFault.UNKNOWN_NOT_APPLIED``: time out before the swap (`CommitStateUnknownError`; the
  table did not change);
- ``CommitFault.UNKNOWN_APPLIED``: time out after the swap (`CommitStateUnknownError`; the table
  *did* change, which is the case that must never be cleaned up);

and it can run a callback in the window between a commit's validation and its swap
(:meth:`FaultInjectingCatalog.before_next_swap`), so a test can slip a concurrent commit in
exactly where a real race would put it. Tables loaded through the wrapper commit through it.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from icefloe.catalog import Catalog
from icefloe.catalog._base import Identifier, Namespace, NamespaceLike, PropertiesUpdateSummary
from icefloe.errors import CommitFailedError, CommitStateUnknownError

__all__ = ["CommitFault", "CommitRecord", "FaultInjectingCatalog"]


class CommitFault(enum.Enum):
    LOST_SWAP = "lost-swap"
    UNKNOWN_NOT_APPLIED = "unknown-not-applied"
    UNKNOWN_APPLIED = "unknown-applied"


@dataclass(frozen=True)
class CommitRecord:
    """One pointer swap the wrapper saw: the table, the metadata it moved to, and what happened
    (``"ok"`` or a `CommitFault` value, or ``"lost"`` when the inner catalog refused the swap)."""

    identifier: Identifier
    new_metadata_location: str
    outcome: str


class FaultInjectingCatalog(Catalog):
    """Delegates to ``inner``; injects the queued faults into the next pointer swaps.

    Only swaps are affected (table creation goes through untouched). Thread-safe: concurrent
    writers consume queued faults one per swap, in the order the swaps happen.
    """

    def __init__(self, inner: Catalog, name: str | None = None) -> None:
        super().__init__(name or f"{inner.name}-faulty", **inner.properties)
        self.inner = inner
        self._faults: deque[CommitFault] = deque()
        self._hooks: deque[Callable[[], None]] = deque()
        self._fault_lock = threading.Lock()
        self.commits: list[CommitRecord] = []

    # ------------------------------------------------------------------ configuring faults
    def inject(self, *faults: CommitFault) -> None:
        """Queue faults; each of the next swaps consumes one."""
        with self._fault_lock:
            self._faults.extend(faults)

    def before_next_swap(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once, just before the next swap (after the commit was validated and
        its metadata written). The callback may commit to the same table through any catalog."""
        with self._fault_lock:
            self._hooks.append(callback)

    @property
    def pending_faults(self) -> int:
        with self._fault_lock:
            return len(self._faults)

    # ------------------------------------------------------------------ the swap
    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        with self._fault_lock:
            hook = self._hooks.popleft() if self._hooks else None
        if hook is not None:
            hook()
        with self._fault_lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is CommitFault.LOST_SWAP:
            self._record(identifier, new, fault.value)
            raise CommitFailedError(
                f"injected fault: lost the compare-and-swap of {'.'.join(identifier)!r}",
                hint="retry on the refreshed table",
                identifier=identifier,
            )
        if fault is CommitFault.UNKNOWN_NOT_APPLIED:
            self._record(identifier, new, fault.value)
            raise CommitStateUnknownError(
                f"injected fault: commit of {'.'.join(identifier)!r} timed out before the swap",
                identifier=identifier,
            )
        try:
            self.inner._swap_pointer(identifier, expected, new)
        except CommitFailedError:
            self._record(identifier, new, "lost")
            raise
        if fault is CommitFault.UNKNOWN_APPLIED:
            self._record(identifier, new, fault.value)
            raise CommitStateUnknownError(
                f"injected fault: commit of {'.'.join(identifier)!r} timed out after the swap",
                identifier=identifier,
            )
        self._record(identifier, new, "ok")

    def _record(self, identifier: Identifier, new: str, outcome: str) -> None:
        with self._fault_lock:
            self.commits.append(CommitRecord(identifier, new, outcome))

    # ------------------------------------------------------------------ plain delegation
    def close(self) -> None:
        self.inner.close()

    def create_namespace(self, namespace: NamespaceLike, properties: Mapping[str, str] | None = None) -> None:
        self.inner.create_namespace(namespace, properties)

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Namespace]:
        return self.inner.list_namespaces(parent)

    def drop_namespace(self, namespace: NamespaceLike) -> None:
        self.inner.drop_namespace(namespace)

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]:
        return self.inner.load_namespace_properties(namespace)

    def update_namespace_properties(
        self,
        namespace: NamespaceLike,
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        return self.inner.update_namespace_properties(namespace, removals, updates)

    def namespace_exists(self, namespace: NamespaceLike) -> bool:
        return self.inner.namespace_exists(namespace)

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]:
        return self.inner.list_tables(namespace)

    def _load_pointer(self, identifier: Identifier) -> str | None:
        return self.inner._load_pointer(identifier)

    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        self.inner._insert_pointer(identifier, metadata_location)

    def _delete_pointer(self, identifier: Identifier) -> bool:
        return self.inner._delete_pointer(identifier)

    def _rename_pointer(self, source: Identifier, target: Identifier) -> None:
        self.inner._rename_pointer(source, target)
