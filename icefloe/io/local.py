"""FileIO for the local file system: plain paths and ``file:`` URIs.

Locations are not percent-decoded: Iceberg Java writes partition directories such as
``name=a%20b`` literally, so ``file:/t/name=a%20b/f.parquet`` names a file whose path contains
``%20``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO

from icefloe.errors import FileIOError

__all__ = ["LocalFileIO", "LocalInputFile", "LocalOutputFile", "local_path"]


def local_path(location: str) -> str:
    """The file system path of a plain path or a ``file:`` URI (``file:/x``, ``file:///x``,
    ``file://localhost/x``)."""
    if location[:5].lower() != "file:":
        return location
    rest = location[5:]
    if rest.startswith("//"):
        authority, sep, path = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise FileIOError(
                f"cannot open {location!r}: file URIs with a host ({authority!r}) are not local",
                hint="use file:///path for local files",
                location=location,
            )
        return sep + path
    return rest


def _error(action: str, location: str, e: OSError) -> FileIOError:
    not_found = isinstance(e, FileNotFoundError)
    msg = f"cannot {action} {location!r}: {e.strerror or e}"
    err = FileIOError(msg, location=location, not_found=not_found)
    err.errno = e.errno
    return err


class LocalInputFile:
    __slots__ = ("_location", "_path")

    def __init__(self, location: str) -> None:
        self._location = location
        self._path = local_path(location)

    @property
    def location(self) -> str:
        return self._location

    def __len__(self) -> int:
        try:
            return os.stat(self._path).st_size
        except OSError as e:
            raise _error("stat", self._location, e) from e

    def exists(self) -> bool:
        return os.path.isfile(self._path)

    def open(self, seekable: bool = True) -> IO[bytes]:
        # A buffered regular file is random-access whether or not the caller asked for it.
        try:
            return open(self._path, "rb")
        except OSError as e:
            raise _error("open", self._location, e) from e

    def __repr__(self) -> str:
        return f"LocalInputFile({self._location!r})"


class LocalOutputFile:
    __slots__ = ("_location", "_path")

    def __init__(self, location: str) -> None:
        self._location = location
        self._path = local_path(location)

    @property
    def location(self) -> str:
        return self._location

    def exists(self) -> bool:
        return os.path.exists(self._path)

    def create(self, overwrite: bool = False) -> IO[bytes]:
        """Open for writing. Without ``overwrite`` the file is created exclusively (``O_EXCL``), so
        two writers can never both believe they wrote the same file."""
        parent = os.path.dirname(self._path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
            return open(self._path, "wb" if overwrite else "xb")
        except FileExistsError as e:
            err = FileIOError(
                f"cannot create {self._location!r}: the file already exists",
                hint="Iceberg never overwrites files; pick a new name or pass overwrite=True",
                location=self._location,
                already_exists=True,
            )
            err.errno = e.errno
            raise err from e
        except OSError as e:
            raise _error("create", self._location, e) from e

    def __repr__(self) -> str:
        return f"LocalOutputFile({self._location!r})"


class LocalFileIO:
    """FileIO over the local file system."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: Mapping[str, str] = dict(properties or {})

    def new_input(self, location: str) -> LocalInputFile:
        return LocalInputFile(location)

    def new_output(self, location: str) -> LocalOutputFile:
        return LocalOutputFile(location)

    def delete(self, location: str) -> None:
        """Delete one file; a missing file is an error (``context["not_found"]`` is true)."""
        try:
            os.remove(local_path(location))
        except OSError as e:
            raise _error("delete", location, e) from e

    def exists(self, location: str) -> bool:
        return os.path.exists(local_path(location))

    def __repr__(self) -> str:
        return "LocalFileIO()"
