"""What a table's metadata reaches, and the local runner that reads it with a thread pool.

Snapshot expiry and orphan-file removal both ask "which files does this metadata still
reference?" The answer is planned here from metadata alone and executed by a runner::

    plan (engine-free)   snapshots -> their manifest lists (paths), statistics files (paths),
                         metadata files (the current one and the metadata log)
      -> execute         manifest lists -> manifests -> live content files (data, position
                         deletes, equality deletes, deletion-vector Puffin files)
                         locally: `LocalReachability` (threads); on Spark: the runner in
                         ``icefloe/spark/reachability.py`` (manifests read by executors)

Only *live* entries of a manifest (ADDED, EXISTING) reach their file, as in Iceberg Java
(``ManifestFiles.readPaths``): a DELETED entry records that its snapshot removed the file.

A runner answers two questions, each with only small picklable inputs (the FileIO's properties,
manifest-list paths, `ManifestRef` tuples):

- ``unreachable(expired_lists, retained_lists)``: the manifests listed by the expired manifest
  lists and by no retained one, and the content files live in those manifests and in no manifest
  of a retained list (Java's ``ExpireSnapshotsSparkAction``: candidates ``except`` valid files);
- ``reachable(lists)``: every manifest and live content file the lists reach (orphan removal).

A file that cannot be read is reported (`Unreadable`), never guessed about: when a *retained*
manifest list or manifest cannot be read, nothing it might protect is called unreachable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from icefloe.errors import CorruptFileError, FileIOError, IcefloeError
from icefloe.io import FileIO, load_file_io
from icefloe.io._decode import MANIFEST, MANIFEST_LIST, decoding
from icefloe.manifest import DataFileContent, ManifestContent, ManifestFile
from icefloe.manifest._avro import AvroFile, collect_named
from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "CONTENT_KINDS",
    "EQUALITY_DELETES",
    "FILE_KINDS",
    "MANIFEST_KIND",
    "MANIFEST_LIST_KIND",
    "METADATA_KIND",
    "POSITION_DELETES",
    "STATISTICS_KIND",
    "DATA",
    "IOSpec",
    "LocalReachability",
    "ManifestRef",
    "Reachable",
    "ReachabilityRunner",
    "Unreachable",
    "Unreadable",
    "content_kind",
    "manifest_list_paths",
    "metadata_file_paths",
    "statistics_paths",
]

_log = logging.getLogger(__name__)

# The kinds of files, in the words of Iceberg Java's action results.
DATA = "data"
POSITION_DELETES = "position_deletes"
EQUALITY_DELETES = "equality_deletes"
MANIFEST_KIND = "manifest"
MANIFEST_LIST_KIND = "manifest_list"
STATISTICS_KIND = "statistics"
METADATA_KIND = "metadata"
CONTENT_KINDS = (DATA, POSITION_DELETES, EQUALITY_DELETES)
FILE_KINDS = (*CONTENT_KINDS, MANIFEST_KIND, MANIFEST_LIST_KIND, STATISTICS_KIND)

_CONTENT_KIND = {
    DataFileContent.DATA: DATA,
    DataFileContent.POSITION_DELETES: POSITION_DELETES,
    DataFileContent.EQUALITY_DELETES: EQUALITY_DELETES,
}


def content_kind(content: int) -> str:
    """``data`` / ``position_deletes`` / ``equality_deletes`` for a data file's content code."""
    return _CONTENT_KIND[DataFileContent(content)]


@dataclass(frozen=True, slots=True)
class IOSpec:
    """What a worker needs to build the table's FileIO: the catalog's properties (``io-impl``,
    ``s3.*``) and a location of the table (which picks the backend)."""

    properties: Mapping[str, str]
    location: str

    def file_io(self) -> FileIO:
        return load_file_io(dict(self.properties), self.location)


@dataclass(frozen=True, slots=True)
class ManifestRef:
    """A manifest as a manifest list names it: enough to read its entries (picklable, small).
    The file counts are None when the list does not record them (v1)."""

    path: str
    length: int
    spec_id: int
    content: int
    added_snapshot_id: int
    added_files: int | None = None
    existing_files: int | None = None

    @classmethod
    def of(cls, m: ManifestFile) -> ManifestRef:
        return cls(
            m.manifest_path,
            m.manifest_length,
            m.partition_spec_id,
            int(m.content),
            m.added_snapshot_id,
            m.added_files_count,
            m.existing_files_count,
        )

    @property
    def may_have_live_files(self) -> bool:
        """False only when the list says the manifest holds no ADDED and no EXISTING entry."""
        return self.added_files != 0 or self.existing_files != 0

    def manifest_file(self) -> ManifestFile:
        return ManifestFile(
            manifest_path=self.path,
            manifest_length=self.length,
            partition_spec_id=self.spec_id,
            content=ManifestContent(self.content),
            added_snapshot_id=self.added_snapshot_id,
        )


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A manifest list or manifest that could not be read: its path, kind and why."""

    path: str
    file_kind: str
    message: str


@dataclass
class Unreachable:
    """What expired snapshots referenced and no retained snapshot does: manifest paths, and
    content file paths with their kind (`DATA`, `POSITION_DELETES`, `EQUALITY_DELETES`).
    ``complete`` is false when a retained file could not be read: then ``content`` and
    ``manifests`` are empty, since nothing can be proven unreachable."""

    manifests: list[str] = field(default_factory=list)
    content: dict[str, str] = field(default_factory=dict)
    unreadable: list[Unreadable] = field(default_factory=list)
    complete: bool = True


@dataclass
class Reachable:
    """Every manifest and live content file some manifest list reaches."""

    manifests: set[str] = field(default_factory=set)
    content: set[str] = field(default_factory=set)
    unreadable: list[Unreadable] = field(default_factory=list)


class ReachabilityRunner(Protocol):
    """Reads manifest lists and manifests for a reachability question (see the module doc)."""

    def unreachable(
        self, io: IOSpec, expired_lists: Sequence[str], retained_lists: Sequence[str]
    ) -> Unreachable: ...

    def reachable(self, io: IOSpec, lists: Sequence[str]) -> Reachable: ...


# ------------------------------------------------------------------ planning (metadata only)


def manifest_list_paths(metadata: TableMetadata, snapshot_ids: Iterable[int] | None = None) -> list[str]:
    """The manifest lists of the snapshots (all of them when ``snapshot_ids`` is None)."""
    wanted = None if snapshot_ids is None else set(snapshot_ids)
    return list(
        dict.fromkeys(
            s.manifest_list
            for s in metadata.snapshots
            if s.manifest_list and (wanted is None or s.snapshot_id in wanted)
        )
    )


def statistics_paths(metadata: TableMetadata, snapshot_ids: Iterable[int] | None = None) -> list[str]:
    """Statistics and partition-statistics files of the snapshots (all when None)."""
    wanted = None if snapshot_ids is None else set(snapshot_ids)
    out: dict[str, None] = {}
    for stats in (*metadata.statistics, *metadata.partition_statistics):
        path = stats.get("statistics-path")
        if isinstance(path, str) and (wanted is None or stats.get("snapshot-id") in wanted):
            out[path] = None
    return list(out)


def metadata_file_paths(metadata: TableMetadata, metadata_location: str) -> list[str]:
    """The current metadata file and every file of its metadata log."""
    out = {e.metadata_file: None for e in metadata.metadata_log}
    out[metadata_location] = None
    return list(out)


# ------------------------------------------------------------------ reading (shared by runners)


# Reachability needs a handful of fields of each record, not the full model that
# read_manifest_list / read_manifest build (partition summaries, DataFile with every metric):
# these readers pick the fields by id from the decoded records, about twice as fast on large
# histories. Field ids: manifest list 500 path, 501 length, 502 spec id, 517 content,
# 503 added snapshot id, 504/505 added/existing files; manifest 0 status, 2 data_file,
# 100 file_path, 134 content.
_STATUS_DELETED = 2


def _by_id(fields: Any) -> dict[int, str]:
    return {
        int(f["field-id"]): str(f["name"]) for f in fields or () if isinstance(f, dict) and "field-id" in f
    }


def _record_fields(schema: Any, name: str, named: dict[str, Any]) -> list[Any]:
    for f in schema.get("fields", ()):
        if f.get("name") != name:
            continue
        t = f["type"]
        if isinstance(t, list):
            t = next(b for b in t if b != "null")
        if isinstance(t, str):
            t = named[t]
        return list(t.get("fields", ()))
    return []


def _open_avro(io: FileIO, path: str, kind: str) -> AvroFile:
    stream = io.new_input(path).open()
    try:
        return AvroFile(stream, path, kind)
    finally:
        stream.close()


def read_list(io: FileIO, path: str) -> tuple[ManifestRef, ...]:
    """The manifests a manifest list names."""
    with decoding(path, MANIFEST_LIST):
        avro = _open_avro(io, path, MANIFEST_LIST)
        ids = _by_id(avro.schema.get("fields"))
        for fid, what in (
            (500, "manifest_path"),
            (501, "manifest_length"),
            (502, "partition_spec_id"),
            (503, "added_snapshot_id"),
        ):
            if fid not in ids:
                raise CorruptFileError.of(
                    path, MANIFEST_LIST, f"not a manifest list: no {what} ({fid}) field"
                )
        n_path, n_len, n_spec, n_snap = ids[500], ids[501], ids[502], ids[503]
        n_content, n_added, n_existing = ids.get(517), ids.get(504), ids.get(505)
        out = []
        for rec in avro:
            out.append(
                ManifestRef(
                    rec[n_path],
                    rec[n_len],
                    rec[n_spec],
                    rec[n_content] if n_content else 0,
                    rec[n_snap],
                    rec[n_added] if n_added else None,
                    rec[n_existing] if n_existing else None,
                )
            )
        return tuple(out)


def read_live_content(io: FileIO, ref: ManifestRef) -> list[tuple[str, int]]:
    """(path, content code) of every live (ADDED or EXISTING) entry of the manifest."""
    if not ref.may_have_live_files:
        return []
    with decoding(ref.path, MANIFEST):
        avro = _open_avro(io, ref.path, MANIFEST)
        top = _by_id(avro.schema.get("fields"))
        if 0 not in top or 2 not in top:
            raise CorruptFileError.of(
                ref.path, MANIFEST, "not a manifest: no status (0) or data_file (2) field"
            )
        df = _by_id(_record_fields(avro.schema, top[2], collect_named(avro.schema, {})))
        if 100 not in df:
            raise CorruptFileError.of(ref.path, MANIFEST, "not a manifest: data_file has no file_path (100)")
        n_status, n_df, n_path, n_content = top[0], top[2], df[100], df.get(134)
        out = []
        for rec in avro:
            if rec[n_status] == _STATUS_DELETED:
                continue
            file = rec[n_df]
            out.append((file[n_path], file[n_content] if n_content else 0))
        return out


def problem(path: str, kind: str, error: Exception) -> Unreadable:
    """An unreadable file; re-raises what is not about the file (a storage failure a retry may
    fix is still about the file: it is reported, and the caller decides)."""
    message = error.message if isinstance(error, IcefloeError) else f"{type(error).__name__}: {error}"
    return Unreadable(path, kind, message)


def is_file_problem(error: BaseException) -> bool:
    """Errors that mean "this file cannot be read" (missing, damaged, storage failure)."""
    return isinstance(error, IcefloeError | OSError)


_T = TypeVar("_T")
_R = TypeVar("_R")


def _parallel(
    fn: Callable[[_T], _R], items: Sequence[_T], workers: int
) -> Iterator[tuple[_T, _R | None, Exception | None]]:
    def one(item: _T) -> tuple[_T, _R | None, Exception | None]:
        try:
            return item, fn(item), None
        except Exception as e:
            return item, None, e

    if len(items) <= 1 or workers <= 1:
        yield from (one(i) for i in items)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        yield from pool.map(one, items)


def _raise_unless_file_problem(error: Exception) -> None:
    if not is_file_problem(error):
        raise error


class LocalReachability:
    """Reads manifest lists and manifests in this process with ``workers`` threads (fastavro
    decodes without holding the GIL for its I/O; the table's own FileIO is used)."""

    def __init__(self, io: FileIO | None = None, workers: int = 8) -> None:
        self._io = io
        self.workers = workers

    def _file_io(self, spec: IOSpec) -> FileIO:
        return self._io if self._io is not None else spec.file_io()

    def _manifests(
        self, io: FileIO, lists: Sequence[str], problems: list[Unreadable]
    ) -> dict[str, ManifestRef]:
        out: dict[str, ManifestRef] = {}
        for path, refs, error in _parallel(lambda p: read_list(io, p), list(lists), self.workers):
            if error is not None:
                _raise_unless_file_problem(error)
                problems.append(problem(path, MANIFEST_LIST, error))
                continue
            for ref in refs or ():
                out.setdefault(ref.path, ref)
        return out

    def _content(
        self, io: FileIO, manifests: Iterable[ManifestRef], problems: list[Unreadable]
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        for ref, files, error in _parallel(lambda r: read_live_content(io, r), list(manifests), self.workers):
            if error is not None:
                _raise_unless_file_problem(error)
                problems.append(problem(ref.path, MANIFEST, error))
                continue
            for path, content in files or ():
                out.setdefault(path, content)
        return out

    def unreachable(
        self, io: IOSpec, expired_lists: Sequence[str], retained_lists: Sequence[str]
    ) -> Unreachable:
        fio = self._file_io(io)
        result = Unreachable()
        retained_problems: list[Unreadable] = []
        retained = self._manifests(fio, retained_lists, retained_problems)
        expired = self._manifests(fio, expired_lists, result.unreadable)
        candidates = [ref for path, ref in expired.items() if path not in retained]
        if retained_problems:
            result.unreadable += retained_problems
            result.complete = False
            return result
        result.manifests = [ref.path for ref in candidates]
        content = self._content(fio, candidates, result.unreadable)
        if content:
            still = self._content(fio, retained.values(), retained_problems)
            if retained_problems:
                result.unreadable += retained_problems
                result.complete = False
                result.manifests = []
                return result
            content = {p: c for p, c in content.items() if p not in still}
        result.content = {p: content_kind(c) for p, c in content.items()}
        return result

    def reachable(self, io: IOSpec, lists: Sequence[str]) -> Reachable:
        fio = self._file_io(io)
        result = Reachable()
        manifests = self._manifests(fio, lists, result.unreadable)
        result.manifests = set(manifests)
        result.content = set(self._content(fio, manifests.values(), result.unreadable))
        return result


def log_unreadable(what: str, problems: Sequence[Unreadable]) -> None:
    for p in problems:
        _log.warning("%s: cannot read %s %s: %s", what, p.file_kind, p.path, p.message)


def not_found(error: BaseException) -> bool:
    return isinstance(error, FileIOError) and bool(error.context.get("not_found"))
