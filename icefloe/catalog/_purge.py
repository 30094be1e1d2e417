"""Purging a dropped table: delete every file its metadata reaches, even when some are damaged.

::

    before the pointer is dropped (nothing changed yet):
      current metadata file ─▶ snapshots ─▶ manifest lists ─▶ manifests ─▶ content files
                             + statistics files + earlier metadata files (metadata log)
      a file on the way that is damaged or missing ─▶ recorded, not followed, deleted like the rest
      a storage failure (a retry may succeed) or an unsupported metadata format ─▶ raise: nothing
      is dropped or deleted
    after the pointer is dropped:
      delete content files, then manifests, then manifest lists and statistics, then metadata
      files (the current one last), so that a purge stopped half-way leaves readable references
      to whatever remains

Iceberg Java's ``CatalogUtil.dropTableData`` likewise warns about a manifest it cannot read and
moves on; here a damaged manifest list or metadata file does not stop the purge either. The
:class:`PurgeReport` lists them (``unreadable``): whatever only they referenced cannot be found
without listing the table's location, which a purge never does (listing is not reliable on object
stores and could reach other tables' files).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe.errors import FileIOError, IcefloeError, UnsupportedFeatureError
from icefloe.io import FileIO
from icefloe.io._decode import MANIFEST, MANIFEST_LIST, TABLE_METADATA, decoding
from icefloe.spec.table_metadata import TableMetadata, read_metadata_json

if TYPE_CHECKING:
    from icefloe.manifest import ManifestFile

__all__ = ["PurgePlan", "PurgeProblem", "PurgeReport", "plan_purge"]

_log = logging.getLogger(__name__)

CONTENT_FILE = "content file"
STATISTICS_FILE = "statistics file"


@dataclass(frozen=True)
class PurgeProblem:
    """A file a purge could not read or could not delete, and why."""

    path: str
    file_kind: str
    error: IcefloeError


@dataclass(frozen=True)
class PurgeReport:
    """What ``drop_table(..., purge=True)`` did with the table's files.

    ``deleted`` files were removed; ``already_missing`` were referenced but gone before the purge
    (fine: the goal is that they do not exist). ``unreadable`` files (a damaged or missing
    manifest list, manifest or metadata file) were deleted too where they existed, but the files
    they reference could not be found: those remain under the table's location and must be
    removed by hand. ``not_deleted`` files could not be deleted (their errors say why).
    ``by_server`` is true when a REST catalog's server ran the purge: the client learns nothing
    about its outcome (the server logs it).
    """

    deleted: int = 0
    already_missing: int = 0
    unreadable: tuple[PurgeProblem, ...] = ()
    not_deleted: tuple[PurgeProblem, ...] = ()
    by_server: bool = False
    #: referenced files the purge was not allowed to delete (outside the catalog's
    #: ``purge_filter``, e.g. a REST server's allowed locations); they were left as they are
    outside: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every file of the table was found and is gone now (unknown, so False, when the
        server purged)."""
        return not (self.by_server or self.unreadable or self.not_deleted or self.outside)


@dataclass
class PurgePlan:
    """The files to delete, found before the table's pointer is dropped."""

    io: FileIO
    groups: list[tuple[str, list[str]]] = field(default_factory=list)
    unreadable: list[PurgeProblem] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def restrict(self, allowed: Callable[[str], bool]) -> None:
        """Keep only the files ``allowed`` accepts; the others are reported as ``outside``."""
        kept: list[tuple[str, list[str]]] = []
        for kind, paths in self.groups:
            ok = [p for p in paths if allowed(p)]
            self.outside += [p for p in paths if not allowed(p)]
            kept.append((kind, ok))
        self.groups = kept

    def execute(self, workers: int = 8) -> PurgeReport:
        """Delete the files group by group and report: within a group, up to ``workers``
        directories at a time, the files of one directory one after the other."""
        deleted = missing = 0
        failed: list[PurgeProblem] = []
        for kind, paths in self.groups:
            for path, error in _delete_all(self.io, paths, workers):
                if error is None:
                    deleted += 1
                elif isinstance(error, FileIOError) and error.context.get("not_found"):
                    missing += 1
                else:
                    _log.warning("purge: could not delete %s %s: %s", kind, path, error.message)
                    failed.append(PurgeProblem(path, kind, error))
        return PurgeReport(
            deleted, missing, tuple(self.unreadable), tuple(failed), outside=tuple(self.outside)
        )


def plan_purge(io: FileIO, metadata_location: str) -> PurgePlan:
    """Find every file reachable from the metadata at ``metadata_location``.

    Raises (and nothing is changed) only when the current metadata file cannot be read for a
    reason other than damage or absence: a storage failure a retry may fix, or a format this
    icefloe does not support (its files cannot be found safely)."""
    plan = PurgePlan(io)
    try:
        metadata: TableMetadata | None = _read_metadata(io, metadata_location)
    except UnsupportedFeatureError:
        raise
    except IcefloeError as e:
        _unreadable(plan, metadata_location, TABLE_METADATA, e)
        metadata = None
    if metadata is None:
        plan.groups.append((TABLE_METADATA, [metadata_location]))
        return plan

    content: dict[str, None] = {}
    manifests: dict[str, None] = {}
    lists: dict[str, None] = {}
    for snapshot in metadata.snapshots:
        list_path = snapshot.manifest_list
        if not list_path or list_path in lists:
            continue
        lists[list_path] = None
        try:
            manifest_files = _read_list(io, list_path)
        except IcefloeError as e:
            _unreadable(plan, list_path, MANIFEST_LIST, e)
            continue
        for manifest in manifest_files:
            path = manifest.manifest_path
            if path in manifests:
                continue
            manifests[path] = None
            try:
                for file_path in _content_files(io, manifest):
                    content[file_path] = None
            except IcefloeError as e:
                _unreadable(plan, path, MANIFEST, e)

    statistics: dict[str, None] = {}
    for stats in (*metadata.statistics, *metadata.partition_statistics):
        stats_path = stats.get("statistics-path")
        if isinstance(stats_path, str):
            statistics[stats_path] = None
    metadata_files = dict.fromkeys(_earlier_metadata_files(io, metadata))
    metadata_files.pop(metadata_location, None)
    metadata_files[metadata_location] = None
    plan.groups += [
        (CONTENT_FILE, list(content)),
        (MANIFEST, list(manifests)),
        (MANIFEST_LIST, list(lists)),
        (STATISTICS_FILE, list(statistics)),
        (TABLE_METADATA, list(metadata_files)),
    ]
    return plan


def _read_metadata(io: FileIO, location: str) -> TableMetadata:
    with decoding(location, TABLE_METADATA):
        with io.new_input(location).open() as stream:
            data = stream.read()
        return read_metadata_json(data, location)


def _earlier_metadata_files(io: FileIO, metadata: TableMetadata) -> list[str]:
    """Every earlier metadata file, oldest first: the metadata log holds only the last
    ``write.metadata.previous-versions-max`` (100) files, so the oldest readable file of each log
    is read for the files before it (Java's ``ReachableFileUtil.metadataFileLocations``,
    recursive). A table with 402 metadata files left 301 behind when only the current log was
    followed. A missing or damaged old file is skipped for the next one of its log."""
    found: dict[str, None] = {}
    log = [e.metadata_file for e in metadata.metadata_log]
    chain: list[list[str]] = []
    while True:
        new = [path for path in log if path not in found]
        if not new:
            break
        found.update(dict.fromkeys(new))
        chain.append(new)
        older: TableMetadata | None = None
        for path in new:
            try:
                older = _read_metadata(io, path)
                break
            except UnsupportedFeatureError:
                continue
            except IcefloeError as e:
                if isinstance(e, FileIOError) and not e.context.get("not_found"):
                    raise  # a storage failure: the purge stops before anything is dropped
                continue
        if older is None:
            break
        log = [e.metadata_file for e in older.metadata_log]
    return [path for files in reversed(chain) for path in files]


def _read_list(io: FileIO, path: str) -> Sequence[ManifestFile]:
    from icefloe.manifest import read_manifest_list

    with decoding(path, MANIFEST_LIST):  # also types what a third-party FileIO raises
        return read_manifest_list(io, path, cache=False)


def _content_files(io: FileIO, manifest: ManifestFile) -> list[str]:
    from icefloe.manifest import read_manifest

    with decoding(manifest.manifest_path, MANIFEST):
        return [e.data_file.file_path for e in read_manifest(io, manifest, cache=False)]


def _unreadable(plan: PurgePlan, path: str, kind: str, error: IcefloeError) -> None:
    """Record a damaged or missing file; re-raise a storage failure (a retry may succeed, and the
    files behind it would be lost for good once the table is dropped)."""
    if isinstance(error, FileIOError) and not error.context.get("not_found"):
        if error.hint is None:
            error.hint = (
                "the table was not dropped and nothing was deleted; retry the purge, or drop the "
                "table without purge"
            )
        raise error
    _log.warning(
        "purge: cannot read %s %s, the files it references are not deleted: %s", kind, path, error.message
    )
    plan.unreadable.append(PurgeProblem(path, kind, error))


def _delete_all(io: FileIO, paths: list[str], workers: int) -> list[tuple[str, IcefloeError | None]]:
    """Delete ``paths``: directories in parallel, the files of one directory serially.

    pyarrow's S3 delete is three requests (HEAD, DELETE, then a PUT re-creating the parent
    "directory" marker), and concurrent marker writes into one directory queue up on SeaweedFS:
    200 files of one directory took 2.0 s to delete with 8 threads and 0.5 s one at a time (the
    purge of a 201-file table 9-11 s before, about 1 s now). Threads still pay off across
    directories (a partitioned table's data files), the more so where requests are slower than
    on a local SeaweedFS."""

    def delete_one(path: str) -> tuple[str, IcefloeError | None]:
        try:
            io.delete(path)
        except IcefloeError as e:
            return path, e
        except OSError as e:  # a third-party FileIO's raw error
            not_found = isinstance(e, FileNotFoundError)
            return path, FileIOError(f"cannot delete {path!r}: {e}", location=path, not_found=not_found)
        return path, None

    def delete_directory(directory_paths: list[str]) -> list[tuple[str, IcefloeError | None]]:
        return [delete_one(p) for p in directory_paths]

    by_directory: dict[str, list[str]] = {}
    for path in paths:
        by_directory.setdefault(path.rsplit("/", 1)[0], []).append(path)
    if len(by_directory) <= 1 or workers <= 1:
        return delete_directory(paths)
    with ThreadPoolExecutor(max_workers=min(workers, len(by_directory))) as pool:
        return [result for done in pool.map(delete_directory, by_directory.values()) for result in done]
