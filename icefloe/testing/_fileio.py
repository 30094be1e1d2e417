"""A FileIO wrapper that counts how often each file is opened, for planning tests
(e.g. "a filtered scan opens only the manifests it needs")."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import IO

from icefloe.io import FileIO, InputFile, OutputFile

__all__ = ["CountingFileIO"]


class _CountingInputFile:
    __slots__ = ("_inner", "_owner")

    def __init__(self, inner: InputFile, owner: CountingFileIO) -> None:
        self._inner = inner
        self._owner = owner

    @property
    def location(self) -> str:
        return self._inner.location

    def __len__(self) -> int:
        return len(self._inner)

    def exists(self) -> bool:
        return self._inner.exists()

    def open(self, seekable: bool = True) -> IO[bytes]:
        stream = self._inner.open(seekable)
        self._owner._count(self._inner.location)
        return stream


class CountingFileIO:
    """Delegates to ``inner``; ``opened[location]`` counts successful ``new_input(...).open()``."""

    def __init__(self, inner: FileIO) -> None:
        self.inner = inner
        self.opened: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def properties(self) -> Mapping[str, str]:  # type: ignore[override]
        return self.inner.properties

    def _count(self, location: str) -> None:
        with self._lock:
            self.opened[location] += 1

    def reset(self) -> None:
        with self._lock:
            self.opened.clear()

    def new_input(self, location: str) -> InputFile:
        return _CountingInputFile(self.inner.new_input(location), self)

    def new_output(self, location: str) -> OutputFile:
        return self.inner.new_output(location)

    def delete(self, location: str) -> None:
        self.inner.delete(location)

    def exists(self, location: str) -> bool:
        return self.inner.exists(location)
