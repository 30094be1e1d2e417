"""The Spark runner of reachability and listing (snapshot expiry, orphan-file removal).

What crosses to the executors is small and picklable: the FileIO's properties and a table
location (`IOSpec`), manifest-list paths, `ManifestRef` tuples, directory locations and the
comparison rules (`OrphanOptions`). Executors build the FileIO once per partition and read
manifest lists and manifests (or list directories); the set difference of an expiry and the join
of listed with referenced files run as Spark shuffles, so only the answer reaches the driver::

    expiry   job 1: manifest lists (expired and retained, tagged) -> distinct manifests per side
                    (small: one row per manifest) -> driver: candidate = expired - retained
             job 2: live entries of candidate and retained manifests (tagged)
                    -> reduce by path: reached by a retained manifest? -> the others, collected
    orphans  driver lists the top levels, executors the rest (job 1, kept) -> job 2: manifest
             lists -> manifests -> job 3: live entries + manifests + other referenced files,
             left-joined by path with the listed files -> orphans and prefix conflicts
             (a table whose whole tree the driver listed with at most
             ``DRIVER_ONLY_MAX_FILES`` files is compared on the driver instead: three Spark jobs
             with shuffles cost seconds, a few hundred manifests read locally milliseconds)

Each job returns its unreadable files with its answer (tagged rows), so a failure costs no extra
job. Planning (what is expired, how locations compare, which paths are hidden) lives in
``icefloe.maintenance``; this module only executes it, like Java's ``ExpireSnapshotsSparkAction``
and ``DeleteOrphanFilesSparkAction``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from icefloe.errors import UnsupportedFeatureError
from icefloe.io import SupportsPrefixListing
from icefloe.io._decode import MANIFEST, MANIFEST_LIST
from icefloe.maintenance.orphan_files import (
    Conflicts,
    FileURI,
    OrphanOptions,
    ValidFiles,
    classify,
    find_orphans,
    is_hidden,
)
from icefloe.maintenance.reachability import (
    IOSpec,
    LocalReachability,
    ManifestRef,
    Reachable,
    Unreachable,
    Unreadable,
    content_kind,
    is_file_problem,
    problem,
    read_list,
    read_live_content,
)

__all__ = ["SparkReachability"]

# Java's DeleteOrphanFilesSparkAction: the driver lists at most 3 levels, and only directories
# with at most 10 subdirectories; executors list the rest.
_DRIVER_LISTING_DEPTH = 3
_DRIVER_LISTING_SUBDIRS = 10
#: orphan removal on a table whose tree the driver listed completely, with at most this many
#: files, reads the manifests and compares on the driver (module attribute: tests set it to 0)
DRIVER_ONLY_MAX_FILES = 20_000
EXPIRED, RETAINED = 0, 1
_ERROR = "\x00unreadable"  # the key of error rows in keyed RDDs (no path starts with NUL)


def _read_lists(io: IOSpec, tagged: Iterable[tuple[int, str]]) -> Iterator[tuple[int, Any]]:
    """(side, ManifestRef) for the distinct manifests of this partition's lists, and (-1,
    Unreadable) for lists that cannot be read."""
    fio = io.file_io()
    seen: set[tuple[int, str]] = set()
    for side, path in tagged:
        try:
            refs = read_list(fio, path)
        except Exception as e:
            if not is_file_problem(e):
                raise
            yield -1, problem(path, MANIFEST_LIST, e)
            continue
        for ref in refs:
            if (side, ref.path) not in seen:
                seen.add((side, ref.path))
                yield side, ref


def _read_entries(io: IOSpec, tagged: Iterable[tuple[int, ManifestRef]]) -> Iterator[tuple[str, Any]]:
    """(path, (side, content)) for each live entry, (_ERROR, Unreadable) for bad manifests."""
    fio = io.file_io()
    for side, ref in tagged:
        try:
            files = read_live_content(fio, ref)
        except Exception as e:
            if not is_file_problem(e):
                raise
            yield _ERROR, (side, problem(ref.path, MANIFEST, e))
            continue
        for path, content in files:
            yield path, (side, content)


def _merge_sides(a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
    """Keep RETAINED over EXPIRED: a file any retained manifest reaches stays."""
    return a if a[0] >= b[0] else b


def _not_retained(kv: tuple[str, tuple[int, Any]]) -> bool:
    return kv[0] == _ERROR or kv[1][0] == EXPIRED


def _is_error(kv: tuple[str, Any]) -> bool:
    return kv[0] == _ERROR


def _error_row(kv: tuple[str, tuple[int, Unreadable]]) -> tuple[int, Unreadable]:
    return 2, kv[1][1]


def _list_dirs(io: IOSpec, options: OrphanOptions, directories: Iterable[str]) -> Iterator[str]:
    fio = io.file_io()
    if not isinstance(fio, SupportsPrefixListing):  # checked on the driver first
        raise UnsupportedFeatureError(f"{type(fio).__name__} cannot list files")
    for directory in directories:
        for info in fio.list_prefix(directory, recursive=True):
            if options.keep_listed(info.location, info.modified_ms):
                yield info.location


def _classify(mode: str, row: tuple[str, tuple[FileURI, Iterable[FileURI] | None]]) -> list[tuple[int, Any]]:
    _, (actual, refs) = row
    orphan, conflicts = classify(actual, list(refs or ()), mode)
    out: list[tuple[int, Any]] = [(1, c) for c in conflicts]
    if orphan:
        out.append((0, actual.location))
    return out


def _keyed_uri(uri_of: Callable[[str], FileURI], location: str) -> tuple[str, FileURI]:
    uri = uri_of(location)
    return uri.path, uri


class SparkReachability:
    """Reads manifests and lists directories on the executors of ``spark`` (a SparkSession)."""

    def __init__(self, spark: Any, parallelism: int | None = None) -> None:
        self.spark = spark
        self._sc = spark.sparkContext
        self.parallelism = parallelism or max(2, int(self._sc.defaultParallelism))

    def _slices(self, n: int) -> int:
        return max(1, min(n, self.parallelism * 2))

    def _manifests(
        self, io: IOSpec, expired: Sequence[str], retained: Sequence[str]
    ) -> tuple[dict[str, ManifestRef], dict[str, ManifestRef], list[Unreadable], list[Unreadable]]:
        """The distinct manifests of the expired and of the retained lists (one job), and the
        lists of each side that could not be read."""
        tagged = [(EXPIRED, p) for p in expired] + [(RETAINED, p) for p in retained]
        if not tagged:
            return {}, {}, [], []
        retained_set = set(retained)
        rows = (
            self._sc.parallelize(tagged, self._slices(len(tagged)))
            .mapPartitions(partial(_read_lists, io))
            .collect()
        )
        by_side: tuple[dict[str, ManifestRef], dict[str, ManifestRef]] = ({}, {})
        bad_expired: list[Unreadable] = []
        bad_retained: list[Unreadable] = []
        for side, payload in rows:
            if side < 0:
                (bad_retained if payload.path in retained_set else bad_expired).append(payload)
            else:
                by_side[side].setdefault(payload.path, payload)
        return by_side[EXPIRED], by_side[RETAINED], bad_expired, bad_retained

    def _entries(self, io: IOSpec, tagged: list[tuple[int, ManifestRef]]) -> Any:
        """RDD of (path, (side, content)) / (_ERROR, (side, Unreadable)) of ``tagged`` manifests."""
        return self._sc.parallelize(tagged, self._slices(len(tagged))).mapPartitions(
            partial(_read_entries, io)
        )

    def unreachable(
        self, io: IOSpec, expired_lists: Sequence[str], retained_lists: Sequence[str]
    ) -> Unreachable:
        result = Unreachable()
        if not expired_lists:
            return result
        expired, retained, bad_expired, bad_retained = self._manifests(io, expired_lists, retained_lists)
        result.unreadable += bad_expired
        if bad_retained:
            result.unreadable += bad_retained
            result.complete = False
            return result
        candidates = [ref for path, ref in expired.items() if path not in retained]
        result.manifests = sorted(ref.path for ref in candidates)
        if not candidates:
            return result
        tagged = [(EXPIRED, ref) for ref in candidates] + [(RETAINED, ref) for ref in retained.values()]
        rows = (
            self._entries(io, tagged)
            .reduceByKey(_merge_sides_or_errors, self.parallelism)
            .filter(_not_retained)
            .collect()
        )
        content: dict[str, str] = {}
        for path, value in rows:
            if path == _ERROR:
                for side, bad in _as_list(value):
                    if side == RETAINED:
                        result.complete = False
                    result.unreadable.append(bad)
            else:
                content[path] = content_kind(value[1])
        if not result.complete:
            result.manifests = []
            return result
        result.content = content
        return result

    def reachable(self, io: IOSpec, lists: Sequence[str]) -> Reachable:
        result = Reachable()
        _, manifests, _, bad = self._manifests(io, (), lists)
        result.unreadable += bad
        result.manifests = set(manifests)
        if not manifests:
            return result
        tagged = [(RETAINED, ref) for ref in manifests.values()]
        rows = self._entries(io, tagged).reduceByKey(_merge_sides_or_errors, self.parallelism).collect()
        for path, value in rows:
            if path == _ERROR:
                result.unreadable += [bad for _, bad in _as_list(value)]
            else:
                result.content.add(path)
        return result

    # ------------------------------------------------------------------ orphans

    def _driver_listing(self, io: IOSpec, options: OrphanOptions) -> tuple[list[str], list[str]]:
        """Files found on the driver and the directories left to the executors."""
        fio = io.file_io()
        if not isinstance(fio, SupportsPrefixListing):
            raise UnsupportedFeatureError(
                f"the table's FileIO ({type(fio).__name__}) cannot list files",
                hint="use a FileIO that implements list_prefix (icefloe.io.SupportsPrefixListing)",
            )
        base = options.location.rstrip("/")
        files: list[str] = []
        pending: list[str] = []
        level = [options.location]
        for _depth in range(_DRIVER_LISTING_DEPTH):
            below: list[str] = []
            for directory in level:
                subdirs: list[str] = []
                for info in fio.list_prefix(directory, recursive=False):
                    if info.is_dir:
                        if not is_hidden(info.location[len(base) + 1 :], options.hidden_partition_prefixes):
                            subdirs.append(info.location)
                    elif options.keep_listed(info.location, info.modified_ms):
                        files.append(info.location)
                if len(subdirs) > _DRIVER_LISTING_SUBDIRS:
                    pending += subdirs
                else:
                    below += subdirs
            level = below
            if not level:
                break
        pending += level
        return files, pending

    def orphans(
        self, io: IOSpec, options: OrphanOptions, valid: Callable[[], ValidFiles]
    ) -> tuple[list[str], Conflicts, list[Unreadable]]:
        files, pending = self._driver_listing(io, options)
        if not pending and len(files) <= DRIVER_ONLY_MAX_FILES:
            refs = valid()
            reach = LocalReachability(io.file_io()).reachable(io, refs.manifest_lists)
            if reach.unreadable:
                return [], set(), reach.unreadable
            found, conflicted = find_orphans(
                files, [*refs.others, *reach.manifests, *reach.content], options
            )
            return found, conflicted, []
        listed = self._sc.parallelize(files, 1)
        if pending:
            deep = self._sc.parallelize(pending, self._slices(len(pending))).mapPartitions(
                partial(_list_dirs, io, options)
            )
            listed = listed.union(deep)
        listed = listed.cache()
        try:
            listed.count()  # the listing is complete before the table's references are read
            refs = valid()
            _, manifests, _, bad = self._manifests(io, (), refs.manifest_lists)
            if bad:
                return [], set(), bad
            tagged = [(RETAINED, ref) for ref in manifests.values()]
            entries = (self._entries(io, tagged) if tagged else self._sc.parallelize([], 1)).cache()
            extra = [*manifests, *refs.others]
            referenced = entries.keys().union(self._sc.parallelize(extra, self._slices(len(extra))))
            valid_uris = referenced.distinct().map(partial(_keyed_uri, options.uri)).groupByKey()
            actual = listed.map(partial(_keyed_uri, options.listed_uri))
            joined = actual.leftOuterJoin(valid_uris).flatMap(
                partial(_classify, options.prefix_mismatch_mode)
            )
            errors = entries.filter(_is_error).map(_error_row)
            rows = joined.union(errors).collect()
            entries.unpersist()
        finally:
            listed.unpersist()
        orphans = [p for tag, p in rows if tag == 0]
        conflicts: Conflicts = {c for tag, c in rows if tag == 1}
        unreadable: list[Unreadable] = [u for tag, u in rows if tag == 2]
        if unreadable:
            return [], set(), unreadable
        return orphans, conflicts, []


def _merge_sides_or_errors(a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
    """reduceByKey: for files keep RETAINED over EXPIRED; for the error key, collect them all as
    (side, [(side, Unreadable), ...])."""
    if isinstance(a[1], Unreadable | list) or isinstance(b[1], Unreadable | list):
        return (max(a[0], b[0]), _as_list(a) + _as_list(b))
    return _merge_sides(a, b)


def _as_list(v: tuple[int, Any]) -> list[tuple[int, Any]]:
    """The (side, Unreadable) pairs of an error row, merged or not."""
    return list(v[1]) if isinstance(v[1], list) else [v]
