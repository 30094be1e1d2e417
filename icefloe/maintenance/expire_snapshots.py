"""Snapshot expiry: Iceberg Java's ``RemoveSnapshots`` rules, a catalog commit, then file cleanup.

::

    plan     (metadata only) which refs and snapshots go, by the table's and each ref's retention
             settings: `plan_expiry`
      -> commit  remove-snapshot-ref + remove-snapshots through the catalog, with requirements:
                 the table is the same table, every ref is where the plan saw it, and (catalogs that
                 validate locally) no ref was added meanwhile. Lost race -> re-plan on the
                 refreshed table and retry (commit.retry.*); unknown outcome -> raise, delete nothing
      -> cleanup (only after the commit landed) the files the expired snapshots reached and no
                 snapshot of the committed table reaches: content files, manifests, manifest
                 lists, statistics files; read by a runner (threads, or Spark executors)

Retention follows ``RemoveSnapshots`` exactly:

- a ref other than ``main`` whose head is older than its ``max-ref-age-ms`` (default: table
  property ``history.expire.max-ref-age-ms``, unset = forever) is removed; ``main`` never is;
- each remaining branch keeps the ancestors of its head while fewer than its
  ``min-snapshots-to-keep`` are kept (default: ``retain_last``, else the table's
  ``history.expire.min-snapshots-to-keep``, 1) or while they are not older than its
  ``max-snapshot-age-ms`` (default: ``older_than``, else now minus the table's
  ``history.expire.max-snapshot-age-ms``, 5 days), stopping at the first one that is neither;
- each remaining tag keeps its snapshot;
- a snapshot that no ref reaches (a write-audit-publish staged snapshot, a rolled-back or
  cherry-picked-from snapshot) is kept while it is not older than the default age threshold;
- ``snapshot_ids`` are expired in addition, unless a remaining ref points at one (an error).

Files are cleaned up by reachability (Java's ``ReachableFileCleanup`` and its Spark action): a
file is deleted when an expired snapshot reached it and no snapshot left in the table does, so
cherry-picked, rolled-back and staged snapshots need no special rules: whatever a retained
snapshot still reads survives.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from icefloe.errors import CommitFailedError, NoSuchSnapshotError, ValidationError
from icefloe.maintenance._deletes import DeleteFailure, delete_paths
from icefloe.maintenance.reachability import (
    CONTENT_KINDS,
    DATA,
    EQUALITY_DELETES,
    FILE_KINDS,
    MANIFEST_KIND,
    MANIFEST_LIST_KIND,
    POSITION_DELETES,
    STATISTICS_KIND,
    IOSpec,
    LocalReachability,
    ReachabilityRunner,
    Unreadable,
    log_unreadable,
    manifest_list_paths,
    statistics_paths,
)
from icefloe.spec.properties import bool_property, int_property
from icefloe.spec.snapshot import MAIN_BRANCH, Snapshot, SnapshotRef
from icefloe.spec.updates import (
    AssertRefSnapshotId,
    AssertTableUUID,
    MetadataUpdate,
    RemoveSnapshotRef,
    RemoveSnapshots,
    TableRequirement,
    apply_updates,
)

if TYPE_CHECKING:
    from icefloe.catalog import Catalog
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = [
    "GC_ENABLED",
    "MAX_REF_AGE_MS",
    "MAX_SNAPSHOT_AGE_MS",
    "MIN_SNAPSHOTS_TO_KEEP",
    "ExpirePlan",
    "ExpireSnapshotsResult",
    "epoch_ms",
    "expire_snapshots",
    "plan_expiry",
]

_log = logging.getLogger(__name__)

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
GC_ENABLED = "gc.enabled"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3600 * 1000
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS_DEFAULT = sys.maxsize  # Java's Long.MAX_VALUE: refs never age out


def check_gc_enabled(metadata: TableMetadata, action: str) -> None:
    """Java refuses to expire snapshots or delete orphans when ``gc.enabled`` is false: the
    table's files may be shared with other tables."""
    if not bool_property(metadata.properties, GC_ENABLED, True):
        raise ValidationError(
            f"cannot {action}: garbage collection is disabled on this table (gc.enabled=false)",
            hint="its files may be shared with other tables; set gc.enabled=true only if they are not",
        )


# ------------------------------------------------------------------ plan


@dataclass(frozen=True)
class ExpirePlan:
    """Which refs and snapshots an expiry removes from ``base`` (engine-free, picklable)."""

    base: TableMetadata
    snapshot_ids: tuple[int, ...]
    refs: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.snapshot_ids and not self.refs

    def updates(self) -> list[MetadataUpdate]:
        out: list[MetadataUpdate] = [RemoveSnapshotRef(name) for name in self.refs]
        if self.snapshot_ids:
            out.append(RemoveSnapshots(self.snapshot_ids))
        return out

    def requirements(self, *, local: bool) -> list[TableRequirement]:
        """The table is the one planned on and every ref is where the plan saw it (a ref moved
        onto a snapshot being expired would otherwise silently vanish with it). Catalogs that
        check requirements in this process also refuse refs added meanwhile."""
        out: list[TableRequirement] = [AssertTableUUID(self.base.table_uuid)]
        out += [AssertRefSnapshotId(name, ref.snapshot_id) for name, ref in sorted(self.base.refs.items())]
        if local:
            out.append(AssertNoOtherRefs(frozenset(self.base.refs)))
        return out


@dataclass(frozen=True)
class AssertNoOtherRefs(TableRequirement):
    """No ref exists besides ``names``. Checked only by catalogs that validate requirements in
    this process (the REST protocol has no such requirement): a tag or branch created on a
    snapshot while it is being expired makes the expiry re-plan instead of dropping the ref."""

    names: frozenset[str]
    type: ClassVar[str] = "icefloe-assert-no-other-refs"

    def _check(self, metadata: TableMetadata) -> None:
        added = sorted(set(metadata.refs) - self.names)
        if added:
            raise CommitFailedError(
                f"refs {added} were created concurrently",
                hint="the expiry is planned again on the refreshed table",
            )

    def _body(self) -> dict[str, Any]:
        return {"names": sorted(self.names)}


def _ancestors(by_id: Mapping[int, Snapshot], snapshot_id: int) -> Iterable[Snapshot]:
    current: int | None = snapshot_id
    while current is not None:
        snap = by_id.get(current)
        if snap is None:
            return
        yield snap
        current = snap.parent_snapshot_id


def plan_expiry(
    metadata: TableMetadata,
    *,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Sequence[int] = (),
) -> ExpirePlan:
    """Which refs and snapshots to remove, by Java's ``RemoveSnapshots`` rules (module doc).
    ``snapshot_ids`` no longer in the table are skipped (a concurrent expiry removed them)."""
    props = metadata.properties
    by_id = metadata.snapshots_by_id
    if not metadata.snapshots:
        return ExpirePlan(metadata, (), ())
    max_age = int_property(props, MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT)
    default_older_than = older_than_ms if older_than_ms is not None else now_ms - max_age
    default_min = (
        retain_last
        if retain_last is not None
        else int_property(props, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    )
    default_max_ref_age = int_property(props, MAX_REF_AGE_MS, MAX_REF_AGE_MS_DEFAULT)

    retained_refs: dict[str, SnapshotRef] = {}
    for name, ref in metadata.refs.items():
        if name == MAIN_BRANCH:
            retained_refs[name] = ref
            continue
        head = by_id.get(ref.snapshot_id)
        max_ref_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_max_ref_age
        if head is not None and now_ms - head.timestamp_ms <= max_ref_age:
            retained_refs[name] = ref

    keep: set[int] = set()
    heads: dict[int, list[str]] = {}
    for name, ref in retained_refs.items():
        heads.setdefault(ref.snapshot_id, []).append(name)
        keep.add(ref.snapshot_id)
    explicit = [sid for sid in dict.fromkeys(snapshot_ids) if sid in by_id]
    for sid in explicit:
        if sid in heads:
            raise ValidationError(
                f"cannot expire snapshot {sid}: it is the head of {', '.join(sorted(heads[sid]))}",
                hint="remove or move the ref first, or let it expire (max-ref-age-ms)",
                snapshot_id=sid,
                refs=sorted(heads[sid]),
            )

    referenced: set[int] = set()
    for ref in retained_refs.values():
        if not ref.is_branch:
            referenced.add(ref.snapshot_id)
            continue
        older_than = (
            now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else default_older_than
        )
        min_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_min
        kept = 0
        still_keeping = True
        for ancestor in _ancestors(by_id, ref.snapshot_id):
            referenced.add(ancestor.snapshot_id)
            if still_keeping and (kept < min_keep or ancestor.timestamp_ms >= older_than):
                keep.add(ancestor.snapshot_id)
                kept += 1
            else:
                still_keeping = False
    for snap in metadata.snapshots:
        if snap.snapshot_id not in referenced and snap.timestamp_ms >= default_older_than:
            keep.add(snap.snapshot_id)

    remove = set(explicit) | {s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in keep}
    ordered = tuple(s.snapshot_id for s in metadata.snapshots if s.snapshot_id in remove)
    refs = tuple(name for name in metadata.refs if name not in retained_refs)
    return ExpirePlan(metadata, ordered, refs)


# ------------------------------------------------------------------ result


@dataclass(frozen=True)
class ExpireSnapshotsResult:
    """What an expiry did (or, with ``dry_run``, would do).

    ``files`` maps each kind (``data``, ``position_deletes``, ``equality_deletes``, ``manifest``,
    ``manifest_list``, ``statistics``) to the paths deleted (dry run: to be deleted); the
    ``deleted_*_count`` properties count them, as Java's result does. ``already_missing`` were
    unreachable but gone before; ``not_deleted`` could not be deleted and ``unreadable`` manifest
    lists or manifests could not be read (what only they reference is left in place: remove it
    later with ``remove_orphan_files``). ``metadata`` is the table after the commit."""

    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    files: Mapping[str, tuple[str, ...]]
    dry_run: bool = False
    cleaned: bool = True
    """False with ``clean_expired_files=False``: no file was looked for or deleted."""
    already_missing: tuple[str, ...] = ()
    not_deleted: tuple[DeleteFailure, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()
    metadata: TableMetadata | None = field(default=None, repr=False, compare=False)

    def _count(self, kind: str) -> int:
        return len(self.files.get(kind, ()))

    @property
    def deleted_data_files_count(self) -> int:
        return self._count(DATA)

    @property
    def deleted_position_delete_files_count(self) -> int:
        return self._count(POSITION_DELETES)

    @property
    def deleted_equality_delete_files_count(self) -> int:
        return self._count(EQUALITY_DELETES)

    @property
    def deleted_manifests_count(self) -> int:
        return self._count(MANIFEST_KIND)

    @property
    def deleted_manifest_lists_count(self) -> int:
        return self._count(MANIFEST_LIST_KIND)

    @property
    def deleted_statistics_files_count(self) -> int:
        return self._count(STATISTICS_KIND)

    @property
    def deleted_files(self) -> set[str]:
        """Every path in ``files``."""
        return {p for paths in self.files.values() for p in paths}


# ------------------------------------------------------------------ commit


def _validates_locally(catalog: Catalog) -> bool:
    from icefloe.catalog.rest import RestCatalog

    return not isinstance(catalog, RestCatalog)


def _commit(table: Table, plan_on: Any, loaded: Table) -> tuple[ExpirePlan, TableMetadata, str]:
    """Plan on ``loaded`` (the table just loaded from the catalog) and commit; on a lost race
    plan again on the refreshed table and retry."""
    from icefloe.transaction._commit import RetryPolicy

    catalog = table.catalog
    base, base_location = loaded.metadata, loaded.metadata_location
    policy = RetryPolicy.from_properties(dict(base.properties))
    started = time.monotonic()
    retries = 0
    local = _validates_locally(catalog)
    while True:
        plan: ExpirePlan = plan_on(base)
        if plan.empty:
            return plan, base, base_location
        try:
            metadata, location = catalog.commit_table(
                table.identifier, plan.requirements(local=local), plan.updates()
            )
        except CommitFailedError:
            elapsed_ms = (time.monotonic() - started) * 1000
            if retries >= policy.num_retries or elapsed_ms >= policy.total_timeout_ms:
                raise
            retries += 1
            time.sleep(policy.wait_ms(retries) / 1000)
            loaded = catalog.load_table(table.identifier)
            base, base_location = loaded.metadata, loaded.metadata_location
            continue
        return plan, metadata, location


# ------------------------------------------------------------------ the action


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def epoch_ms(ts: Any) -> int:
    """A timestamp argument as epoch milliseconds: an int (epoch ms), a datetime (naive = UTC)
    or ISO-8601 text."""
    if isinstance(ts, bool):
        raise ValidationError(f"a timestamp must be epoch milliseconds, a datetime or ISO text, got {ts!r}")
    if isinstance(ts, int):
        return ts
    if isinstance(ts, str):
        try:
            ts = dt.datetime.fromisoformat(ts)
        except ValueError:
            raise ValidationError(f"{ts!r} is not an ISO-8601 timestamp") from None
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return int(ts.timestamp() * 1000)
    raise ValidationError(f"a timestamp must be epoch milliseconds, a datetime or ISO text, got {ts!r}")


def _check_retain_last(retain_last: object) -> int | None:
    if retain_last is None:
        return None
    if isinstance(retain_last, bool) or not isinstance(retain_last, int):
        raise ValidationError(f"retain_last must be an integer, got {retain_last!r}")
    if retain_last < 1:
        raise ValidationError(
            f"retain_last must be at least 1, got {retain_last}",
            hint="every branch keeps at least its head snapshot",
        )
    return retain_last


def _check_ids(metadata: TableMetadata, snapshot_ids: Iterable[int] | None) -> tuple[int, ...]:
    if snapshot_ids is None:
        return ()
    if isinstance(snapshot_ids, int):
        snapshot_ids = (snapshot_ids,)
    ids = tuple(snapshot_ids)
    for sid in ids:
        if isinstance(sid, bool) or not isinstance(sid, int):
            raise ValidationError(f"snapshot ids must be integers, got {sid!r}")
        if sid not in metadata.snapshots_by_id:
            raise NoSuchSnapshotError(
                f"cannot expire snapshot {sid}: the table has no such snapshot",
                hint="it may have been expired already; list the table's snapshots to see which exist",
                snapshot_id=sid,
            )
    return ids


def expire_snapshots(
    table: Table,
    *,
    older_than: Any = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] | None = None,
    clean_expired_files: bool = True,
    dry_run: bool = False,
    spark: Any = None,
    runner: ReachabilityRunner | None = None,
) -> ExpireSnapshotsResult:
    """``table.maintenance.expire_snapshots(...)``: see the module doc and docs/maintenance.md."""
    older_than_ms = None if older_than is None else epoch_ms(older_than)
    keep_last = _check_retain_last(retain_last)
    now_ms = _now_ms()
    current = table.catalog.load_table(table.identifier)
    check_gc_enabled(current.metadata, "expire snapshots")
    ids = _check_ids(current.metadata, snapshot_ids)

    def plan_on(metadata: TableMetadata) -> ExpirePlan:
        return plan_expiry(
            metadata, now_ms=now_ms, older_than_ms=older_than_ms, retain_last=keep_last, snapshot_ids=ids
        )

    if runner is None:
        runner = _runner(table, spark)
    io_spec = IOSpec(dict(table.io.properties), current.metadata_location)
    if dry_run:
        plan = plan_on(current.metadata)
        after = apply_updates(plan.base, plan.updates(), None) if not plan.empty else plan.base
        files: dict[str, tuple[str, ...]] = {}
        unreadable: tuple[Unreadable, ...] = ()
        if clean_expired_files:
            files, unreadable = _unreachable_files(runner, io_spec, plan, [after])
        return ExpireSnapshotsResult(
            plan.snapshot_ids,
            plan.refs,
            files,
            dry_run=True,
            cleaned=clean_expired_files,
            unreadable=unreadable,
        )

    plan, committed, location = _commit(table, plan_on, current)
    table.metadata, table.metadata_location = committed, location
    if not clean_expired_files or not plan.snapshot_ids:
        return ExpireSnapshotsResult(
            plan.snapshot_ids, plan.refs, {}, cleaned=clean_expired_files, metadata=committed
        )
    # What the table holds now: the committed metadata and whatever committed since (a snapshot
    # in either is protected).
    retained = [committed]
    try:
        retained.append(table.catalog.load_table(table.identifier).metadata)
    except Exception:
        _log.warning("expire_snapshots: could not refresh %s after the commit", table.name)
    files, unreadable = _unreachable_files(
        runner, IOSpec(dict(table.io.properties), location), plan, retained
    )
    missing: list[str] = []
    failed: list[DeleteFailure] = []
    deleted: dict[str, tuple[str, ...]] = {}
    for kind in FILE_KINDS:  # content first, then manifests, lists, statistics (as Java)
        paths = files.get(kind, ())
        if not paths:
            continue
        outcome = delete_paths(table.io, paths, kind)
        deleted[kind] = tuple(outcome.deleted)
        missing += outcome.already_missing
        failed += outcome.failed
    return ExpireSnapshotsResult(
        plan.snapshot_ids,
        plan.refs,
        deleted,
        already_missing=tuple(missing),
        not_deleted=tuple(failed),
        unreadable=unreadable,
        metadata=committed,
    )


def _runner(table: Table, spark: Any) -> ReachabilityRunner:
    if spark is None:
        return LocalReachability(table.io)
    from icefloe.spark.reachability import SparkReachability

    return SparkReachability(spark)


def _unreachable_files(
    runner: ReachabilityRunner, io: IOSpec, plan: ExpirePlan, retained: Sequence[TableMetadata]
) -> tuple[dict[str, tuple[str, ...]], tuple[Unreadable, ...]]:
    """The files of the expired snapshots that no snapshot of ``retained`` reaches, by kind."""
    if not plan.snapshot_ids:
        return {}, ()
    gone = set(plan.snapshot_ids)
    kept_ids: set[int] = set()
    kept_lists: dict[str, None] = {}
    kept_stats: set[str] = set()
    for md in retained:
        kept_ids |= set(md.snapshots_by_id)
        kept_lists.update(dict.fromkeys(manifest_list_paths(md)))
        kept_stats |= set(statistics_paths(md))
    expired_ids = gone - kept_ids
    expired_lists = [p for p in manifest_list_paths(plan.base, expired_ids) if p not in kept_lists]
    found = runner.unreachable(io, expired_lists, list(kept_lists))
    log_unreadable("expire_snapshots", found.unreadable)
    files: dict[str, list[str]] = {kind: [] for kind in FILE_KINDS}
    for path, kind in found.content.items():
        files[kind].append(path)
    files[MANIFEST_KIND] = list(found.manifests)
    files[MANIFEST_LIST_KIND] = expired_lists
    files[STATISTICS_KIND] = [p for p in statistics_paths(plan.base, expired_ids) if p not in kept_stats]
    for kind in CONTENT_KINDS:
        files[kind].sort()
    return {k: tuple(v) for k, v in files.items() if v}, tuple(found.unreadable)
