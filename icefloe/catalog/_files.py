"""Metadata files as the catalogs see them: naming, exclusive writes, reads, and the set of files
a purge deletes.

A catalog owns exactly one mutable thing per table: the pointer to the current metadata file.
Everything else is an immutable file that is written once under a fresh name and never
overwritten, so that a lost compare-and-swap cannot damage what another writer committed.
Files are found only by following references from the metadata (never by listing a directory),
which keeps purge correct on object stores.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from icefloe.errors import FileIOError, IcefloeError
from icefloe.io import FileIO
from icefloe.spec.table_metadata import TableMetadata, read_metadata_json, write_metadata_json

__all__ = [
    "delete_files",
    "metadata_file_location",
    "parse_metadata_version",
    "reachable_files",
    "read_metadata_file",
    "removed_metadata_files",
    "write_metadata_file",
]

_log = logging.getLogger(__name__)

# Java names metadata files `NNNNN-<uuid>.metadata.json` (catalogs) or `vN.metadata.json` (Hadoop
# tables); either may be the previous file of a table registered from elsewhere.
_VERSIONED_NAME = re.compile(r"^(\d+)-[^/]*\.metadata\.json$")
_HADOOP_NAME = re.compile(r"^v(\d+)(?:\.[a-z0-9]+)?\.metadata\.json$")

WRITE_METADATA_PATH = "write.metadata.path"


def parse_metadata_version(location: str) -> int:
    """Version number of a metadata file, or -1 when its name follows no known pattern (the next
    file is then version 0, as in Java; the uuid in the name still makes it unique)."""
    name = location.rsplit("/", 1)[-1]
    for pattern in (_VERSIONED_NAME, _HADOOP_NAME):
        m = pattern.match(name)
        if m:
            return int(m.group(1))
    return -1


def metadata_file_location(metadata: TableMetadata, version: int) -> str:
    """Where version ``version`` of the metadata goes: `write.metadata.path` when the table sets
    it, else `<table location>/metadata`."""
    folder = metadata.properties.get(WRITE_METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
    return f"{folder.rstrip('/')}/{version:05d}-{uuid.uuid4()}.metadata.json"


def write_metadata_file(io: FileIO, location: str, metadata: TableMetadata) -> None:
    """Write a new metadata file; fails rather than replace an existing file."""
    data = write_metadata_json(metadata).encode("utf-8")
    try:
        with io.new_output(location).create(overwrite=False) as stream:
            stream.write(data)
    except IcefloeError:
        raise
    except OSError as e:
        raise FileIOError(
            f"cannot write table metadata file {location}: {e}",
            hint="check that the table location is writable",
            location=location,
        ) from e


def read_metadata_file(io: FileIO, location: str) -> TableMetadata:
    try:
        with io.new_input(location).open() as stream:
            data = stream.read()
    except (FileIOError, OSError) as e:
        message = e.message if isinstance(e, FileIOError) else str(e)
        not_found = bool(e.context.get("not_found")) if isinstance(e, FileIOError) else False
        raise FileIOError(
            f"cannot read table metadata file {location}: {message}",
            hint="the catalog points at a metadata file that is missing or unreadable; "
            "if the table's files were moved, register the new location with register_table",
            location=location,
            not_found=not_found or isinstance(e, FileNotFoundError),
        ) from e
    return read_metadata_json(data, location)


def reachable_files(io: FileIO, metadata: TableMetadata, metadata_location: str) -> list[list[str]]:
    """Every file the metadata references, in deletion order: content files, then manifests,
    then manifest lists and statistics, then metadata files (the current one last).

    Deleting in this order means a purge that stops half-way still leaves readable references to
    whatever remains. Unreadable manifest lists or manifests are skipped with a warning: a purge
    should not get stuck on a table that is already damaged.
    """
    from icefloe.manifest import read_manifest, read_manifest_list

    content: dict[str, None] = {}
    manifests: dict[str, None] = {}
    manifest_lists: dict[str, None] = {}
    for snapshot in metadata.snapshots:
        list_path = snapshot.manifest_list
        if not list_path:
            continue
        manifest_lists[list_path] = None
        try:
            manifest_files = read_manifest_list(io, list_path)
        except (IcefloeError, OSError) as e:
            _log.warning("purge: skipping unreadable manifest list %s: %s", list_path, e)
            continue
        for manifest in manifest_files:
            if manifest.manifest_path in manifests:
                continue
            manifests[manifest.manifest_path] = None
            try:
                for entry in read_manifest(io, manifest):
                    content[entry.data_file.file_path] = None
            except (IcefloeError, OSError) as e:
                _log.warning("purge: skipping unreadable manifest %s: %s", manifest.manifest_path, e)

    for stats in (*metadata.statistics, *metadata.partition_statistics):
        path = stats.get("statistics-path")
        if isinstance(path, str):
            manifest_lists[path] = None

    metadata_files: dict[str, None] = {}
    for log_entry in metadata.metadata_log:
        metadata_files[log_entry.metadata_file] = None
    metadata_files.pop(metadata_location, None)
    metadata_files[metadata_location] = None
    return [list(content), list(manifests), list(manifest_lists), list(metadata_files)]


METADATA_DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"


def removed_metadata_files(base: TableMetadata, new: TableMetadata) -> list[str]:
    """The metadata files a commit from ``base`` to ``new`` dropped from the metadata log (it
    keeps ``write.metadata.previous-versions-max`` entries), when ``new`` has
    ``write.metadata.delete-after-commit.enabled``; delete them once the commit landed (Java's
    ``deleteRemovedMetadataFiles``)."""
    from icefloe.spec.properties import bool_property

    if not bool_property(new.properties, METADATA_DELETE_AFTER_COMMIT, False):
        return []
    kept = {e.metadata_file for e in new.metadata_log}
    return [e.metadata_file for e in base.metadata_log if e.metadata_file not in kept]


def delete_files(io: FileIO, paths: Iterable[str], workers: int = 8) -> int:
    """Delete files best-effort (already-missing files are fine); returns how many failed."""
    paths = list(paths)
    if not paths:
        return 0

    def delete_one(path: str) -> bool:
        try:
            io.delete(path)
            return True
        except (IcefloeError, OSError) as e:
            _log.warning("could not delete %s: %s", path, e)
            return False

    if len(paths) == 1:
        return 0 if delete_one(paths[0]) else 1
    with ThreadPoolExecutor(max_workers=min(workers, len(paths))) as pool:
        return sum(1 for ok in pool.map(delete_one, paths) if not ok)
