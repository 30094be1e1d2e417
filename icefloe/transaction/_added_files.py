"""Checks of the files a caller hands to a commit (``append_files``, ``overwrite_files``,
``replace_partitions_files``, ``row_delta``, ``rewrite_files``), run before anything is written.

A file the table references must exist, be readable through the table's FileIO and be what its
`DataFile` says it is, or every later read of the table fails. What is cheap to know is checked::

    per file   a DataFile of the content the method takes (no delete file in an append), a format
               Iceberg allows for that content, an absolute path the FileIO can address, a known
               partition spec and a partition tuple of its arity, no file given twice (a
               deletion vector is named by its Puffin file and content_offset: one Puffin file
               holds the vectors of many data files)
    then       one stat per path (in parallel on object stores): it exists and its size is
               file_size_in_bytes

A failing check raises `ValidationError` naming the files, before any manifest is written: the
table and every file stay as they were (the caller's files are never deleted for failing it).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from icefloe.errors import ConfigError, FileIOError, IcefloeError, ValidationError
from icefloe.io.local import LocalFileIO
from icefloe.manifest import DataFile, DataFileContent, FileFormat

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["check_added_files"]

# Formats the spec allows per content; Puffin holds deletion vectors (position deletes, v3).
_ROW_FORMATS = frozenset({FileFormat.PARQUET, FileFormat.AVRO, FileFormat.ORC})
_STAT_WORKERS = 16
_SHOWN = 5


def check_added_files(
    io: FileIO,
    metadata: TableMetadata,
    files: Sequence[object],
    *,
    content: Literal["data", "deletes"],
    method: str,
) -> None:
    """Refuse ``files`` (handed to ``method``) unless each is a `DataFile` of ``content`` that the
    table can reference; see the module docstring. Raises `ValidationError` naming the files."""
    problems: dict[str, str] = {}
    to_stat: list[DataFile] = []
    seen: set[tuple[str, int | None]] = set()
    stat_paths: set[str] = set()
    for f in files:
        if not isinstance(f, DataFile):
            raise ValidationError(
                f"{method} takes DataFile objects, got {type(f).__name__}: {f!r}",
                hint="describe each file with icefloe.manifest.DataFile (icefloe.arrow.writer "
                "returns them for the files it writes)",
                method=method,
            )
        path = f.file_path
        problem = _static_problem(io, metadata, f, content, method)
        key = (str(path), _blob_offset(f))
        if problem is None and key in seen:
            problem = "it is given twice" if key[1] is None else "its deletion vector is given twice"
        if problem is not None:
            problems.setdefault(str(path), problem)
        elif str(path) not in stat_paths:  # the vectors of one Puffin file: one stat
            to_stat.append(f)
            stat_paths.add(str(path))
        seen.add(key)
    for f, problem in zip(to_stat, _stat_all(io, to_stat), strict=True):
        if problem is not None:
            problems.setdefault(f.file_path, problem)
    if problems:
        raise _refused(method, problems)


def _blob_offset(f: DataFile) -> int | None:
    """A deletion vector's offset in its Puffin file (None for files that are one entry)."""
    if f.file_format == FileFormat.PUFFIN and f.content == DataFileContent.POSITION_DELETES:
        return f.content_offset
    return None


def _refused(method: str, problems: dict[str, str]) -> ValidationError:
    shown = list(problems.items())[:_SHOWN]
    more = len(problems) - len(shown)
    lines = "; ".join(f"{path}: {why}" for path, why in shown) + (f"; and {more} more" if more else "")
    return ValidationError(
        f"{method} refused {len(problems)} file(s): {lines}",
        hint="nothing was committed and no file was touched; fix or leave out these files and call again",
        method=method,
        files=list(problems),
        problems=dict(problems),
    )


def _static_problem(
    io: FileIO, metadata: TableMetadata, f: DataFile, content: str, method: str
) -> str | None:
    """What is wrong with ``f`` without touching storage, or None."""
    if content == "data" and f.content != DataFileContent.DATA:
        return (
            f"it is a {f.content.name.lower().replace('_', ' ')} file, and {method} adds data files "
            "only (commit delete files with row_delta)"
        )
    if content == "deletes" and f.content not in (
        DataFileContent.POSITION_DELETES,
        DataFileContent.EQUALITY_DELETES,
    ):
        return f"it is a data file where {method} expects a delete file"
    problem = _format_problem(metadata, f)
    if problem is not None:
        return problem
    problem = _path_problem(io, f.file_path)
    if problem is not None:
        return problem
    spec = metadata.partition_specs_by_id.get(f.spec_id)
    if spec is None:
        known = ", ".join(str(i) for i in sorted(metadata.partition_specs_by_id))
        return f"its partition spec id {f.spec_id} is not one of the table's ({known})"
    if not isinstance(f.partition, tuple) or len(f.partition) != len(spec.fields):
        return (
            f"its partition {f.partition!r} does not have the {len(spec.fields)} value(s) of "
            f"partition spec {f.spec_id}"
        )
    if not isinstance(f.record_count, int) or f.record_count < 0:
        return f"invalid record_count {f.record_count!r}"
    if not isinstance(f.file_size_in_bytes, int) or f.file_size_in_bytes < 0:
        return f"invalid file_size_in_bytes {f.file_size_in_bytes!r}"
    return None


def _format_problem(metadata: TableMetadata, f: DataFile) -> str | None:
    try:
        fmt = FileFormat(str(f.file_format).upper())
    except ValueError:
        return f"unknown file format {f.file_format!r} (Iceberg files are Parquet, Avro or ORC)"
    if fmt in _ROW_FORMATS:
        return None
    if fmt == FileFormat.PUFFIN and f.content == DataFileContent.POSITION_DELETES:
        if metadata.format_version >= 3:
            return None
        return "deletion vectors (Puffin) need a format version 3 table"
    return f"a {f.content.name.lower().replace('_', ' ')} file cannot be {fmt.value}"


def _path_problem(io: FileIO, path: object) -> str | None:
    if not isinstance(path, str) or not path:
        return "file_path must be a non-empty string"
    if any(unicodedata.category(ch) == "Cc" for ch in path):
        return "file_path contains a control character"
    scheme = urlsplit(path).scheme.lower()
    if len(scheme) == 1:  # a Windows drive letter
        return None
    if not scheme:
        if not path.startswith("/"):
            return "file_path is relative; Iceberg stores absolute paths or URIs"
        return None
    if isinstance(io, LocalFileIO) and scheme != "file":
        return f"the table's FileIO ({type(io).__name__}) cannot address {scheme}:// paths"
    return None


def _stat_all(io: FileIO, files: list[DataFile]) -> list[str | None]:
    if len(files) <= 1 or isinstance(io, LocalFileIO):
        return [_stat_problem(io, f) for f in files]
    with ThreadPoolExecutor(max_workers=min(_STAT_WORKERS, len(files))) as pool:
        return list(pool.map(lambda f: _stat_problem(io, f), files))


def _stat_problem(io: FileIO, f: DataFile) -> str | None:
    try:
        source = io.new_input(f.file_path)
        if isinstance(io, LocalFileIO) and not source.exists():
            return "the file does not exist (or is not a regular file)"
        size = len(source)
    except FileIOError as e:
        if e.context.get("not_found"):
            return "the file does not exist"
        return f"the file cannot be read: {e.message}"
    except ConfigError as e:
        return f"the table's FileIO cannot address it: {e.message}"
    except (IcefloeError, OSError, ValueError, TypeError) as e:
        # TypeError: an object store answers a "directory" (a prefix) without a size
        return f"the file cannot be read: {e}"
    if size != f.file_size_in_bytes:
        return f"it has {size} bytes, its DataFile says file_size_in_bytes={f.file_size_in_bytes}"
    return None
