"""Orphan-file removal: files under the table's location that no metadata references.

Writers that die between writing files and committing them (a killed process, a lost commit
whose cleanup never ran) leave files that no snapshot references. This action follows Iceberg
Java's ``DeleteOrphanFilesSparkAction``::

    list     every file under ``location`` (the table location by default) whose modification
             time is older than ``older_than`` (default: 3 days ago, so that files of writers
             still in flight survive); hidden paths (a name below ``location`` starting with
             ``_`` or ``.``, unless it is a partition directory of such a field) are skipped,
             symbolic links to directories are not followed, nothing outside ``location`` is
             ever looked at
      -> valid   what the table references, listed *after* the files: every manifest list,
             manifest and live content file of every snapshot, statistics files, the current
             metadata file and those in its metadata log, and ``metadata/version-hint.text``
      -> compare by path, after normalising each location into scheme, authority and path
             (``file:/x``, ``file:///x`` and ``/x`` are one path; ``s3a://`` and ``s3n://`` equal
             ``s3://`` by default: ``equal_schemes`` / ``equal_authorities`` add more); a listed
             file whose path matches a referenced one with a different scheme or authority is a
             conflict, handled by ``prefix_mismatch_mode``: ``error`` (default, nothing is
             deleted), ``ignore`` (kept) or ``delete``
      -> delete  the orphans (unless ``dry_run``)

Listing goes through the table's FileIO (:class:`icefloe.io.SupportsPrefixListing`), or Spark
executors when ``spark=`` is given; a listing is used only here, never to decide what a table holds.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from icefloe.errors import FileIOError, UnsupportedFeatureError, ValidationError
from icefloe.io import FileIO, SupportsPrefixListing
from icefloe.maintenance._deletes import DeleteFailure, delete_paths
from icefloe.maintenance.reachability import (
    IOSpec,
    LocalReachability,
    Unreadable,
    manifest_list_paths,
    metadata_file_paths,
    statistics_paths,
)

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = [
    "EQUAL_SCHEMES_DEFAULT",
    "PREFIX_MISMATCH_MODES",
    "FileURI",
    "LocalOrphans",
    "OrphanOptions",
    "OrphanRunner",
    "RemoveOrphanFilesResult",
    "ValidFiles",
    "classify",
    "find_orphans",
    "is_hidden",
    "remove_orphan_files",
    "to_file_uri",
]

DEFAULT_AGE_MS = 3 * 24 * 3600 * 1000
EQUAL_SCHEMES_DEFAULT = {"s3n": "s3", "s3a": "s3"}
PREFIX_MISMATCH_MODES = ("error", "ignore", "delete")
VERSION_HINT = "version-hint.text"
# Table properties that put a table's files somewhere else than under its location.
_LOCATION_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)


# ------------------------------------------------------------------ locations


@dataclass(frozen=True, slots=True)
class FileURI:
    """A location split as Java's ``FileURI``: scheme and authority after the equal-schemes /
    equal-authorities mapping (None when absent), and the path (duplicate slashes collapsed)."""

    scheme: str | None
    authority: str | None
    path: str
    location: str

    def matches(self, actual: FileURI) -> bool:
        """Whether ``actual`` (a listed file) is this referenced file: an absent scheme or
        authority on the referenced side matches any (Java: ``uriComponentMatch``)."""
        return _component_match(self.scheme, actual.scheme) and _component_match(
            self.authority, actual.authority
        )


def _component_match(valid: str | None, actual: str | None) -> bool:
    return not valid or (actual is not None and valid.lower() == actual.lower())


def _split(location: str) -> tuple[str | None, str | None, str]:
    scheme: str | None = None
    rest = location
    head, sep, tail = location.partition(":")
    if sep and head and "/" not in head and len(head) > 1 and (head[0].isalpha()):
        scheme, rest = head, tail
    authority: str | None = None
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        if not authority:
            authority = None
    while "//" in rest:
        rest = rest.replace("//", "/")
    if len(rest) > 1:
        rest = rest.rstrip("/")
    return scheme, authority, rest


def to_file_uri(
    location: str, equal_schemes: Mapping[str, str], equal_authorities: Mapping[str, str]
) -> FileURI:
    scheme, authority, path = _split(location)
    if scheme is not None:
        scheme = equal_schemes.get(scheme, scheme)
    if authority is not None:
        authority = equal_authorities.get(authority, authority)
    return FileURI(scheme, authority, path, location)


def _flatten(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """Java's ``flattenMap``: a key ``"s3n,s3a"`` maps each of its comma-separated names."""
    out: dict[str, str] = {}
    for key, value in (mapping or {}).items():
        for name in str(key).split(","):
            if name.strip():
                out[name.strip()] = str(value).strip()
    return out


@dataclass(frozen=True)
class OrphanOptions:
    """The comparison rules of one run (picklable: Spark executors apply them)."""

    location: str
    older_than_ms: int
    equal_schemes: Mapping[str, str] = field(default_factory=lambda: dict(EQUAL_SCHEMES_DEFAULT))
    equal_authorities: Mapping[str, str] = field(default_factory=dict)
    prefix_mismatch_mode: str = "error"
    hidden_partition_prefixes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "equal_schemes", _flatten(self.equal_schemes))
        object.__setattr__(self, "equal_authorities", _flatten(self.equal_authorities))

    def uri(self, location: str) -> FileURI:
        """A referenced location, split (a missing scheme or authority matches any)."""
        return to_file_uri(location, self.equal_schemes, self.equal_authorities)

    def listed_uri(self, location: str) -> FileURI:
        """A listed location, split: a plain path is on the local file system (Hadoop lists
        it as ``file:``)."""
        uri = to_file_uri(location, self.equal_schemes, self.equal_authorities)
        if uri.scheme is None:
            return FileURI(self.equal_schemes.get("file", "file"), uri.authority, uri.path, location)
        return uri

    def keep_listed(self, location: str, modified_ms: int) -> bool:
        """Whether a listed file is a candidate: old enough and not hidden."""
        if modified_ms >= self.older_than_ms:
            return False
        base = self.location.rstrip("/")
        if not location.startswith(base + "/"):
            return False
        return not is_hidden(location[len(base) + 1 :], self.hidden_partition_prefixes)


def is_hidden(relative: str, partition_prefixes: Sequence[str] = ()) -> bool:
    """Java's hidden-path rule below the listed location: some level's name starts with ``_`` or
    ``.``, unless it is a directory of a partition field whose name starts so (``_f=...``)."""
    for name in relative.split("/"):
        if name.startswith(("_", ".")) and not any(name.startswith(p) for p in partition_prefixes):
            return True
    return False


def hidden_partition_prefixes(metadata: TableMetadata) -> tuple[str, ...]:
    names = {f.name for spec in metadata.partition_specs for f in spec.fields}
    return tuple(sorted(f"{n}=" for n in names if n.startswith(("_", "."))))


Conflicts = set[tuple[str | None, str | None]]


def classify(actual: FileURI, refs: Sequence[FileURI], mode: str) -> tuple[bool, Conflicts]:
    """Whether listed file ``actual`` is an orphan given the referenced files with its path
    (``refs``), and the scheme/authority conflicts found (only in mode ``error``)."""
    if not refs:
        return True, set()
    if any(r.matches(actual) for r in refs):
        return False, set()
    if mode == "delete":
        return True, set()
    conflicts: Conflicts = set()
    if mode == "error":
        for r in refs:
            if not _component_match(r.scheme, actual.scheme):
                conflicts.add((r.scheme, actual.scheme))
            if not _component_match(r.authority, actual.authority):
                conflicts.add((r.authority, actual.authority))
    return False, conflicts


def find_orphans(
    actual: Iterable[str], valid: Iterable[str], options: OrphanOptions
) -> tuple[list[str], Conflicts]:
    """The listed files that no referenced file matches, and the (referenced, listed) scheme or
    authority pairs that conflicted (a referenced file with the same path, another prefix)."""
    by_path: dict[str, list[FileURI]] = {}
    for location in valid:
        uri = options.uri(location)
        by_path.setdefault(uri.path, []).append(uri)
    orphans: list[str] = []
    conflicts: Conflicts = set()
    for location in actual:
        uri = options.listed_uri(location)
        orphan, found = classify(uri, by_path.get(uri.path, ()), options.prefix_mismatch_mode)
        if orphan:
            orphans.append(location)
        conflicts |= found
    return orphans, conflicts


def _same_or_below(child: str, parent: str, options: OrphanOptions) -> bool:
    c, p = options.uri(child), options.uri(parent)
    if not (_component_match(p.scheme, c.scheme) and _component_match(p.authority, c.authority)):
        return False
    cp, pp = posixpath.normpath(c.path), posixpath.normpath(p.path)
    return cp == pp or cp.startswith(pp.rstrip("/") + "/")


# ------------------------------------------------------------------ valid files


def valid_metadata_locations(metadata: TableMetadata, metadata_location: str) -> list[str]:
    """Referenced files that are not found through manifests: manifest lists, statistics files,
    the current and logged metadata files and a Hadoop table's version hint."""
    out = manifest_list_paths(metadata)
    out += statistics_paths(metadata)
    out += metadata_file_paths(metadata, metadata_location)
    out.append(f"{metadata.location.rstrip('/')}/metadata/{VERSION_HINT}")
    return out


# ------------------------------------------------------------------ runners


@dataclass(frozen=True)
class ValidFiles:
    """What the table references, before reading manifests: its manifest lists (read by the
    runner) and the other referenced files (statistics, metadata files, version hint)."""

    manifest_lists: list[str]
    others: list[str]


class OrphanRunner(Protocol):
    """Lists ``options.location``, *then* calls ``valid()`` (so that a file committed during
    the listing counts as referenced), reads what its manifest lists reach and compares (module
    doc). Returns the orphans, the prefix conflicts and the files it could not read."""

    def orphans(
        self, io: IOSpec, options: OrphanOptions, valid: Callable[[], ValidFiles]
    ) -> tuple[list[str], Conflicts, list[Unreadable]]: ...


class LocalOrphans:
    """Lists through the table's FileIO and reads manifests with threads, in this process."""

    def __init__(self, io: FileIO, workers: int = 8) -> None:
        self._io = io
        self.workers = workers

    def list_files(self, options: OrphanOptions) -> Iterator[str]:
        if not isinstance(self._io, SupportsPrefixListing):
            raise UnsupportedFeatureError(
                f"the table's FileIO ({type(self._io).__name__}) cannot list files",
                hint="use a FileIO that implements list_prefix (icefloe.io.SupportsPrefixListing), "
                "as icefloe's local and pyarrow.fs FileIOs do",
            )
        for info in self._io.list_prefix(options.location, recursive=True):
            if options.keep_listed(info.location, info.modified_ms):
                yield info.location

    def orphans(
        self, io: IOSpec, options: OrphanOptions, valid: Callable[[], ValidFiles]
    ) -> tuple[list[str], Conflicts, list[Unreadable]]:
        listed = list(self.list_files(options))
        refs = valid()
        reach = LocalReachability(self._io, self.workers).reachable(io, refs.manifest_lists)
        if reach.unreadable:
            return [], set(), reach.unreadable
        orphans, conflicts = find_orphans(listed, [*refs.others, *reach.manifests, *reach.content], options)
        return orphans, conflicts, []


# ------------------------------------------------------------------ the action


@dataclass(frozen=True)
class RemoveOrphanFilesResult:
    """``orphan_files``: what no metadata references (deleted, or with ``dry_run`` to be
    deleted); ``not_deleted`` failed to delete (their messages say why)."""

    orphan_files: tuple[str, ...]
    dry_run: bool = False
    not_deleted: tuple[DeleteFailure, ...] = ()

    def __iter__(self) -> Iterator[str]:
        return iter(self.orphan_files)

    def __len__(self) -> int:
        return len(self.orphan_files)


def _older_than_ms(older_than: Any, now_ms: int) -> int:
    from icefloe.maintenance.expire_snapshots import epoch_ms

    if older_than is None:
        return now_ms - DEFAULT_AGE_MS
    ms = epoch_ms(older_than)
    if ms > now_ms:
        raise ValidationError(
            f"older_than {ms} is in the future (now is {now_ms})",
            hint="files of writers still in flight would be deleted; pass a time in the past "
            "(the default is 3 days ago)",
        )
    return ms


def _check_mode(mode: str) -> str:
    value = str(mode).lower()
    if value not in PREFIX_MISMATCH_MODES:
        raise ValidationError(
            f"invalid prefix_mismatch_mode {mode!r}",
            hint="use 'error' (the default), 'ignore' or 'delete'",
        )
    return value


def remove_orphan_files(
    table: Table,
    *,
    older_than: Any = None,
    location: str | None = None,
    dry_run: bool = False,
    spark: Any = None,
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    prefix_mismatch_mode: str = "error",
    runner: OrphanRunner | None = None,
) -> RemoveOrphanFilesResult:
    """``table.maintenance.remove_orphan_files(...)``: see the module doc and docs/maintenance.md."""
    from icefloe.maintenance.expire_snapshots import check_gc_enabled

    now_ms = time.time_ns() // 1_000_000
    threshold = _older_than_ms(older_than, now_ms)
    mode = _check_mode(prefix_mismatch_mode)
    current = table.catalog.load_table(table.identifier)
    metadata = current.metadata
    check_gc_enabled(metadata, "remove orphan files")
    schemes = {**EQUAL_SCHEMES_DEFAULT, **_flatten(equal_schemes)}  # Java: the defaults, then the caller's
    options = OrphanOptions(
        location=(location or metadata.location).rstrip("/"),
        older_than_ms=threshold,
        equal_schemes=schemes,
        equal_authorities=_flatten(equal_authorities),
        prefix_mismatch_mode=mode,
        hidden_partition_prefixes=hidden_partition_prefixes(metadata),
    )
    roots = [
        metadata.location,
        *(metadata.properties[k] for k in _LOCATION_PROPERTIES if metadata.properties.get(k)),
    ]
    if not any(_same_or_below(options.location, root, options) for root in roots):
        raise ValidationError(
            f"{options.location!r} is not inside the table's location {metadata.location!r}",
            hint="orphan-file removal lists only the table's own directories (its location, "
            "write.data.path, write.metadata.path); files there that the table does not reference "
            "are deleted",
            location=options.location,
        )
    if runner is None:
        if spark is None:
            runner = LocalOrphans(table.io)
        else:
            from icefloe.spark.reachability import SparkReachability

            runner = SparkReachability(spark)

    io_spec = IOSpec(dict(table.io.properties), current.metadata_location)

    def valid() -> ValidFiles:
        fresh = table.catalog.load_table(table.identifier)
        return ValidFiles(
            manifest_list_paths(fresh.metadata),
            valid_metadata_locations(fresh.metadata, fresh.metadata_location),
        )

    orphans, conflicts, unreadable = runner.orphans(io_spec, options, valid)
    if unreadable:
        first = unreadable[0]
        raise FileIOError(
            f"cannot remove orphan files: {len(unreadable)} file(s) the table references cannot be read, "
            f"first {first.file_kind} {first.path}: {first.message}",
            hint="nothing was deleted: the files they reference could not be told apart from orphans; "
            "repair or restore them first",
            unreadable=[(u.path, u.file_kind) for u in unreadable],
        )
    if conflicts:
        pairs = ", ".join(f"{a!r} vs {b!r}" for a, b in sorted(conflicts, key=str))
        raise ValidationError(
            f"cannot tell whether some files are orphans: metadata references files at the same paths "
            f"with another scheme or authority ({pairs})",
            hint="say which are equal with equal_schemes={...} / equal_authorities={...}, or pass "
            "prefix_mismatch_mode='ignore' (keep them) or 'delete' (only if you are sure they differ); "
            "nothing was deleted",
            conflicts=sorted(conflicts, key=str),
        )
    orphans = sorted(orphans)
    if dry_run or not orphans:
        return RemoveOrphanFilesResult(tuple(orphans), dry_run=dry_run)
    outcome = delete_paths(table.io, orphans, "orphan")
    return RemoveOrphanFilesResult(tuple(orphans), not_deleted=tuple(outcome.failed))
