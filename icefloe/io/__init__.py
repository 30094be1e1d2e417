"""File access for metadata and data files: a small protocol and two backends.

Iceberg never relies on listing or renaming for correctness, so the protocol only opens, creates,
checks and deletes single files. Listing is a separate, optional capability
(:class:`SupportsPrefixListing`, Iceberg Java's ``SupportsPrefixOperations``) used only to find
files that no metadata references (orphan-file removal), never to decide what a table holds.
``create()`` never replaces an existing file unless asked to: metadata, manifest and
manifest-list names are unique and a clash means a bug or a concurrent writer. ``LocalFileIO``
serves plain paths and ``file:`` URIs; ``ArrowFileIO`` serves everything ``pyarrow.fs`` knows
(s3://, gs://, abfs://, hdfs://, and local paths too).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Protocol, runtime_checkable
from urllib.parse import urlsplit

from icefloe.errors import ConfigError, IcefloeError

__all__ = [
    "IO_IMPL",
    "FileIO",
    "FileInfo",
    "InputFile",
    "OutputFile",
    "SupportsPrefixListing",
    "is_local",
    "load_file_io",
]

#: Catalog/table property that picks the FileIO: ``local``, ``arrow`` or a dotted class path.
IO_IMPL = "io-impl"


@runtime_checkable
class InputFile(Protocol):
    """A file to read. ``open()`` returns a binary stream with read/seek/tell that pyarrow.parquet
    and fastavro accept; with ``seekable=True`` it is random-access (needed for Parquet footers).

    The built-in backends return ``pyarrow.NativeFile`` objects typed as ``IO[bytes]`` (pyarrow
    then reads Parquet natively, without the GIL); callers rely only on read/seek/tell/close and
    the context-manager protocol, which Python files and native files share."""

    @property
    def location(self) -> str: ...

    def __len__(self) -> int: ...

    def exists(self) -> bool: ...

    def open(self, seekable: bool = True) -> IO[bytes]: ...


@runtime_checkable
class OutputFile(Protocol):
    """A file to write once. ``create()`` returns a writable binary stream usable as a context
    manager (a ``pyarrow.NativeFile`` from the built-in backends; writers of Parquet use it
    directly and wrap anything else in ``pyarrow.PythonFile``)."""

    @property
    def location(self) -> str: ...

    def exists(self) -> bool: ...

    def create(self, overwrite: bool = False) -> IO[bytes]: ...


@runtime_checkable
class FileIO(Protocol):
    """Factory for input and output files; ``properties`` are the catalog/table properties."""

    properties: Mapping[str, str]

    def new_input(self, location: str) -> InputFile: ...

    def new_output(self, location: str) -> OutputFile: ...

    def delete(self, location: str) -> None: ...

    def exists(self, location: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file (or, from a non-recursive listing, directory): its location in the form of
    the listed prefix (``prefix + relative path``), its size and last modification time."""

    location: str
    size: int
    modified_ms: int
    is_dir: bool = False


@runtime_checkable
class SupportsPrefixListing(Protocol):
    """A FileIO that can list what lies under a location (local directories, object-store
    prefixes). Used only for cleanup (orphan files), never for correctness."""

    def list_prefix(self, prefix: str, *, recursive: bool = True) -> Iterator[FileInfo]:
        """The files below ``prefix`` (a directory location; ``/`` is added when missing), every
        level deep with ``recursive``, else the files and directories directly below it (
        ``is_dir`` set for directories). Symbolic links to directories are not followed. A
        prefix that does not exist lists nothing."""
        ...


def _scheme(location: str | None) -> str:
    if not location:
        return ""
    scheme = urlsplit(location).scheme.lower()
    # A one-letter "scheme" is a Windows drive letter, not a URI scheme.
    return "" if len(scheme) == 1 else scheme


def is_local(io: FileIO, location: str) -> bool:
    """Whether ``io`` reads ``location`` from a local disk, where opening and reading a small file
    costs microseconds: callers then read metadata files one after another on their own thread
    (a thread pool only adds hand-offs and GIL contention) instead of overlapping round trips."""
    from icefloe.io.local import LocalFileIO

    if isinstance(io, LocalFileIO):
        return True
    from icefloe.io.arrow import ArrowFileIO

    if isinstance(io, ArrowFileIO):
        import pyarrow.fs as pafs

        try:
            return isinstance(io.resolve(location)[0], pafs.LocalFileSystem)
        except (IcefloeError, OSError, ValueError):  # a location it cannot resolve: not known local
            return False
    return False


def load_file_io(properties: Mapping[str, str] | None = None, location: str | None = None) -> FileIO:
    """The FileIO for ``location`` (a table or warehouse location).

    ``io-impl`` in ``properties`` wins: ``local``, ``arrow`` or ``package.module.ClassName`` (the
    class is called with the properties). Otherwise ``file:`` and plain paths get
    :class:`~icefloe.io.local.LocalFileIO` and every other scheme
    :class:`~icefloe.io.arrow.ArrowFileIO`.
    """
    props: dict[str, str] = dict(properties or {})
    impl = props.get(IO_IMPL)
    if impl:
        if impl == "local":
            from icefloe.io.local import LocalFileIO

            return LocalFileIO(props)
        if impl == "arrow":
            from icefloe.io.arrow import ArrowFileIO

            return ArrowFileIO(props)
        return _load_class(impl, props)
    if _scheme(location) in ("", "file"):
        from icefloe.io.local import LocalFileIO

        return LocalFileIO(props)
    from icefloe.io.arrow import ArrowFileIO

    return ArrowFileIO(props)


def _load_class(path: str, props: dict[str, str]) -> FileIO:
    module_name, _, class_name = path.rpartition(".")
    hint = f"set {IO_IMPL} to 'local', 'arrow' or an importable 'package.module.ClassName'"
    if not module_name:
        raise ConfigError(f"invalid {IO_IMPL} {path!r}", hint=hint, property=IO_IMPL)
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"cannot load FileIO class {path!r}: {e}", hint=hint, property=IO_IMPL) from e
    io = cls(props)
    if not isinstance(io, FileIO):
        raise ConfigError(
            f"{path!r} does not implement the FileIO protocol (new_input, new_output, delete, "
            "exists, properties)",
            hint=hint,
            property=IO_IMPL,
        )
    return io
