"""A bounded, thread-safe LRU of what was decoded from immutable metadata files.

Manifest lists and manifests are never rewritten in place (every write makes a new file with a new
name), so what a location decodes to can be kept and shared. Entries are keyed by the location
(plus a variant, when the decoded value also depends on the caller's inputs, as a manifest's
inherited snapshot ids do) and remember the file's size: a reader still opens the file (cheap, no
bytes are read; on object stores the size comes with the open) and uses an entry only when the
size matches. A location deleted and rewritten by another process is therefore not served stale,
and callers open exactly the files they would open without a cache, so "files opened" accounting
is the same cold and warm.

Values must be immutable (tuples of frozen objects): every caller shares them.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import IO, Generic, TypeVar

from icefloe.errors import ValidationError

__all__ = ["LocationCache", "file_size"]

V = TypeVar("V")


class LocationCache(Generic[V]):
    """LRU bounded by the total weight of its entries (a count when every weight is 1)."""

    def __init__(self, what: str, max_weight: int) -> None:
        self.what = what
        self.max_weight = max_weight
        self._entries: OrderedDict[tuple[str, Hashable], tuple[int, int, V]] = OrderedDict()
        self._by_location: dict[str, set[tuple[str, Hashable]]] = {}
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, location: str, size: int, variant: Hashable = None) -> V | None:
        key = (location, variant)
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != size:
                return None
            self._entries.move_to_end(key)
            return found[2]

    def put(self, location: str, size: int, value: V, *, variant: Hashable = None, weight: int = 1) -> None:
        key = (location, variant)
        with self._lock:
            if weight > self.max_weight:
                return  # larger than the whole cache (or the cache is off)
            self._remove(key)
            self._entries[key] = (size, weight, value)
            self._by_location.setdefault(location, set()).add(key)
            self._weight += weight
            self._evict()

    def discard(self, location: str) -> None:
        """Forget every entry of ``location`` (its file is being written or was deleted)."""
        with self._lock:
            for key in list(self._by_location.get(location, ())):
                self._remove(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_location.clear()
            self._weight = 0

    def resize(self, max_weight: int) -> None:
        if max_weight < 0:
            raise ValidationError(
                f"{self.what} cache size must be >= 0, got {max_weight}", hint="0 disables the cache"
            )
        with self._lock:
            self.max_weight = max_weight
            self._evict()

    @property
    def weight(self) -> int:
        with self._lock:
            return self._weight

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    # Callers hold the lock.
    def _remove(self, key: tuple[str, Hashable]) -> None:
        found = self._entries.pop(key, None)
        if found is None:
            return
        self._weight -= found[1]
        keys = self._by_location.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_location[key[0]]

    def _evict(self) -> None:
        while self._weight > self.max_weight and self._entries:
            self._remove(next(iter(self._entries)))


def file_size(stream: IO[bytes]) -> int | None:
    """The stream's total size without reading it, or None when it cannot tell (no caching then)."""
    try:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(0)
    except (OSError, ValueError, AttributeError):
        return None
    return size if isinstance(size, int) else None
