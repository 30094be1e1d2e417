"""FileIO for the local file system: plain paths and ``file:`` URIs.

Locations are not percent-decoded: Iceberg Java writes partition directories such as
``name=a%20b`` literally, so ``file:/t/name=a%20b/f.parquet`` names a file whose path contains
``%20``.

Streams are pyarrow native files (``pa.OSFile``), not Python file objects: pyarrow then reads and
writes Parquet in C++ without the GIL (through a Python file every read and write goes back
into the interpreter), and fastavro, ``json`` and plain ``read``/``seek``/``tell`` callers work on
them unchanged.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from typing import IO, cast

import pyarrow as pa

from icefloe.errors import FileIOError
from icefloe.io import FileInfo

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


def _error(action: str, location: str, e: OSError | pa.ArrowException) -> FileIOError:
    not_found = isinstance(e, FileNotFoundError)
    errno = e.errno if isinstance(e, OSError) else None
    # pyarrow's messages repeat the path; the OS reason is enough next to the location.
    reason = os.strerror(errno) if errno else str(e)
    err = FileIOError(f"cannot {action} {location!r}: {reason}", location=location, not_found=not_found)
    err.errno = errno
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
        # A regular file is random-access whether or not the caller asked for it. OSFile rather
        # than a memory map: a mapped file that shrinks under us would kill the process (SIGBUS)
        # and the measured gain of mapping was within noise.
        try:
            return cast(IO[bytes], pa.OSFile(self._path, "rb"))
        except (OSError, pa.ArrowException) as e:
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
        two writers can never both believe they wrote the same file.

        pyarrow cannot open a native stream on a descriptor, so the exclusive create claims the
        name first and the native stream then opens that (empty, ours) file by path in append
        mode (no truncation: a file swapped in between is left untouched); comparing the two
        descriptors' inodes proves it is the file we created."""
        parent = os.path.dirname(self._path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
            if overwrite:
                return cast(IO[bytes], pa.OSFile(self._path, "wb"))
            fd = os.open(self._path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError as e:
            raise self._exists_error(e) from e
        except (OSError, pa.ArrowException) as e:
            raise _error("create", self._location, e) from e
        try:
            stream = pa.OSFile(self._path, "ab")
        except (OSError, pa.ArrowException) as e:
            os.close(fd)
            raise _error("create", self._location, e) from e
        try:
            claimed, opened = os.fstat(fd), os.fstat(stream.fileno())
        finally:
            os.close(fd)
        if (claimed.st_dev, claimed.st_ino) != (opened.st_dev, opened.st_ino):
            stream.close()
            raise self._exists_error(None)
        return cast(IO[bytes], stream)

    def _exists_error(self, cause: OSError | None) -> FileIOError:
        err = FileIOError(
            f"cannot create {self._location!r}: the file already exists",
            hint="Iceberg never overwrites files; pick a new name or pass overwrite=True",
            location=self._location,
            already_exists=True,
        )
        err.errno = cause.errno if cause is not None else None
        return err

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

    def list_prefix(self, prefix: str, *, recursive: bool = True) -> Iterator[FileInfo]:
        """The files below directory ``prefix`` (see `SupportsPrefixListing`). Symbolic links are
        listed as files (deleting one removes the link, never its target) unless they point at a
        directory, which is neither listed nor followed."""
        base = prefix.rstrip("/")
        root = local_path(base) or "/"
        stack = [(root, base)]
        while stack:
            directory, location = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            except OSError as e:
                raise _error("list", location, e) from e
            for entry in sorted(entries, key=lambda e: e.name):
                child = f"{location}/{entry.name}"
                try:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISLNK(st.st_mode) and os.path.isdir(entry.path):
                        continue
                except FileNotFoundError:  # removed while we list
                    continue
                except OSError as e:
                    raise _error("list", child, e) from e
                if stat.S_ISDIR(st.st_mode):
                    if recursive:
                        stack.append((entry.path, child))
                    else:
                        yield FileInfo(child, 0, st.st_mtime_ns // 1_000_000, is_dir=True)
                else:
                    yield FileInfo(child, st.st_size, st.st_mtime_ns // 1_000_000)

    def __repr__(self) -> str:
        return "LocalFileIO()"
