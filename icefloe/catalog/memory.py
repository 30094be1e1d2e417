"""A catalog kept in Python dicts, for tests and notebooks.

Table metadata and data still go to real files under the warehouse (a temporary directory the
catalog creates when none is given); only the pointers and namespaces live in memory, guarded by
one lock so that concurrent commits see a real compare-and-swap.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence

from icefloe.catalog._base import (
    WAREHOUSE,
    Catalog,
    Identifier,
    Namespace,
    NamespaceLike,
    PropertiesUpdateSummary,
    child_namespaces,
    to_namespace,
)
from icefloe.errors import (
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)

__all__ = ["InMemoryCatalog"]


class InMemoryCatalog(Catalog):
    def __init__(self, name: str = "memory", warehouse: str | None = None, **properties: str) -> None:
        if warehouse is None:
            warehouse = properties.pop(WAREHOUSE, None) or tempfile.mkdtemp(prefix="icefloe-memory-")
        super().__init__(name, **{**properties, WAREHOUSE: warehouse})
        self._lock = threading.RLock()
        self._namespaces: dict[Namespace, dict[str, str]] = {}
        self._tables: dict[Identifier, str] = {}

    # ------------------------------------------------------------------ namespaces
    def _known_namespaces(self) -> list[Namespace]:
        return [*self._namespaces, *(ident[:-1] for ident in self._tables)]

    def namespace_exists(self, namespace: NamespaceLike) -> bool:
        ns = to_namespace(namespace)
        if not ns:
            return True
        with self._lock:
            return any(known[: len(ns)] == ns for known in self._known_namespaces())

    def create_namespace(self, namespace: NamespaceLike, properties: Mapping[str, str] | None = None) -> None:
        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("cannot create the root namespace", hint="name the namespace, e.g. 'db'")
        with self._lock:
            if self.namespace_exists(ns):
                raise NamespaceAlreadyExistsError(
                    f"namespace {'.'.join(ns)!r} already exists in catalog {self.name!r}", namespace=ns
                )
            self._namespaces[ns] = {str(k): str(v) for k, v in (properties or {}).items()}

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Namespace]:
        ns = to_namespace(parent)
        with self._lock:
            if ns:
                self._require_namespace(ns)
            return child_namespaces(self._known_namespaces(), ns)

    def drop_namespace(self, namespace: NamespaceLike) -> None:
        ns = to_namespace(namespace)
        with self._lock:
            self._check_droppable(ns)
            self._namespaces.pop(ns, None)

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]:
        ns = to_namespace(namespace)
        with self._lock:
            self._require_namespace(ns)
            return dict(self._namespaces.get(ns, {}))

    def update_namespace_properties(
        self,
        namespace: NamespaceLike,
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        ns = to_namespace(namespace)
        removals, updates = list(removals), dict(updates or {})
        overlap = set(removals) & set(updates)
        if overlap:
            raise ValidationError(
                f"properties both removed and updated: {sorted(overlap)}",
                hint="a key can be removed or set, not both",
            )
        with self._lock:
            self._require_namespace(ns)
            props = self._namespaces.setdefault(ns, {})
            removed = [k for k in removals if k in props]
            missing = [k for k in removals if k not in props]
            for k in removed:
                del props[k]
            props.update({str(k): str(v) for k, v in updates.items()})
            return PropertiesUpdateSummary(removed=removed, updated=list(updates), missing=missing)

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        with self._lock:
            self._require_namespace(ns)
            return sorted(ident for ident in self._tables if ident[:-1] == ns)

    # ------------------------------------------------------------------ pointers
    def _load_pointer(self, identifier: Identifier) -> str | None:
        with self._lock:
            return self._tables.get(identifier)

    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        with self._lock:
            if identifier in self._tables:
                raise TableAlreadyExistsError(
                    f"table {'.'.join(identifier)!r} already exists in catalog {self.name!r}",
                    identifier=identifier,
                )
            if not self.namespace_exists(identifier[:-1]):
                raise NoSuchNamespaceError(
                    f"namespace {'.'.join(identifier[:-1])!r} does not exist", namespace=identifier[:-1]
                )
            self._tables[identifier] = metadata_location

    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        with self._lock:
            current = self._tables.get(identifier)
            if current != expected:
                raise CommitFailedError(
                    f"table {'.'.join(identifier)!r} was changed by another commit "
                    f"(expected {expected}, found {current})",
                    hint="refresh the table and retry",
                    identifier=identifier,
                )
            self._tables[identifier] = new

    def _swap_pointers(self, swaps: Sequence[tuple[Identifier, str, str]]) -> None:
        with self._lock:
            for identifier, expected, _ in swaps:
                current = self._tables.get(identifier)
                if current != expected:
                    raise CommitFailedError(
                        f"table {'.'.join(identifier)!r} was changed by another commit "
                        f"(expected {expected}, found {current})",
                        hint="refresh the tables and retry",
                        identifier=identifier,
                    )
            for identifier, _, new in swaps:
                self._tables[identifier] = new

    def _delete_pointer(self, identifier: Identifier) -> bool:
        with self._lock:
            return self._tables.pop(identifier, None) is not None

    def _rename_pointer(self, source: Identifier, target: Identifier) -> None:
        with self._lock:
            if target in self._tables:
                raise TableAlreadyExistsError(f"table {'.'.join(target)!r} already exists", identifier=target)
            if source not in self._tables:
                raise NoSuchTableError(f"table {'.'.join(source)!r} does not exist", identifier=source)
            self._tables[target] = self._tables.pop(source)
