"""Manifest maintenance: ``table.maintenance.rewrite_manifests(...)`` (Iceberg Java's
``RewriteManifestsSparkAction``).

::

    plan      the current snapshot's manifests of one partition spec (the current one, or
              option ``spec-id``), data and delete manifests each on their own: as many new
              manifests as their total size needs at commit.manifest.target-size-bytes (8 MiB);
              nothing to do for a kind with one manifest that fits
    execute   read their live entries, sort them by partition, cut them into that many
              manifests of consecutive partitions (EXISTING entries: snapshot ids and sequence
              numbers kept): locally, or on Spark (manifests read by tasks, range-partitioned by
              partition, each Spark partition written as one manifest)
    commit    RewriteManifests (operation ``replace``, Java's summary keys), validated: every
              manifest it replaces must still be in the current snapshot (MissingFilesError
              otherwise); concurrent appends commit beside it (their manifests are kept)

Planning reads only the manifest list; the plan pickles.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.errors import ValidationError
from icefloe.maintenance import _execution
from icefloe.maintenance._options import ActionOptions
from icefloe.maintenance._runner import delete_quietly
from icefloe.maintenance.rewrite_data_files import check_writable
from icefloe.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestWriter,
    read_manifest,
    read_manifest_list,
)
from icefloe.transaction._commit import commit_actions
from icefloe.transaction._producer import metadata_dir
from icefloe.transaction.rewrite_manifests import RewriteManifests

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = [
    "ManifestRewriteSet",
    "RewriteManifestsAction",
    "RewriteManifestsPlan",
    "RewriteManifestsResult",
    "partition_sort_key",
    "plan_rewrite_manifests",
    "write_clustered_manifests",
]

TARGET_SIZE_PROP = "commit.manifest.target-size-bytes"
TARGET_SIZE_DEFAULT = 8 * 1024 * 1024
USE_CACHING = "use-caching"
SPEC_ID = "spec-id"
VALID_OPTIONS = (USE_CACHING, SPEC_ID)


@dataclass(frozen=True)
class ManifestRewriteSet:
    """The manifests of one content kind that are rewritten together into ``target_manifests``."""

    content: ManifestContent
    manifests: tuple[ManifestFile, ...]
    target_manifests: int


@dataclass(frozen=True)
class RewriteManifestsPlan:
    metadata: TableMetadata
    snapshot_id: int | None
    spec_id: int
    sets: tuple[ManifestRewriteSet, ...]
    target_size_bytes: int
    use_caching: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def replaced(self) -> list[ManifestFile]:
        return [m for s in self.sets for m in s.manifests]


@dataclass(frozen=True)
class RewriteManifestsResult:
    """Java's ``RewriteManifests.Result``, plus the snapshot committed."""

    rewritten_manifests: tuple[ManifestFile, ...] = ()
    added_manifests: tuple[ManifestFile, ...] = ()
    snapshot_id: int | None = None


def plan_rewrite_manifests(
    io: FileIO, metadata: TableMetadata, options: ActionOptions
) -> RewriteManifestsPlan:
    spec_id = options.integer(SPEC_ID, metadata.default_spec_id)
    if spec_id not in metadata.specs_by_id:
        raise ValidationError(
            f"invalid spec id {spec_id}: the table has no such partition spec",
            hint=f"use one of {sorted(metadata.specs_by_id)}",
            option=SPEC_ID,
        )
    target = max(1, int(metadata.properties.get(TARGET_SIZE_PROP, TARGET_SIZE_DEFAULT)))
    caching = options.boolean(USE_CACHING, False)
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return RewriteManifestsPlan(metadata, None, spec_id, (), target, caching, dict(options.values))
    manifests = read_manifest_list(io, snapshot.manifest_list)
    sets = []
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        matching = [m for m in manifests if m.content == content and m.partition_spec_id == spec_id]
        if not matching:
            continue
        for m in matching:
            if m.added_files_count is None or m.existing_files_count is None or m.deleted_files_count is None:
                raise ValidationError(
                    f"no file counts in manifest {m.manifest_path}",
                    hint="manifests without file counts (old v1 writers) cannot be rewritten",
                )
        count = math.ceil(sum(m.manifest_length for m in matching) / target)
        if count <= 1 and len(matching) == 1:
            continue
        sets.append(ManifestRewriteSet(content, tuple(matching), max(1, count)))
    return RewriteManifestsPlan(
        metadata, snapshot.snapshot_id, spec_id, tuple(sets), target, caching, dict(options.values)
    )


def partition_sort_key(partition: Iterable[Any]) -> tuple[Any, ...]:
    """A total order on partition tuples: nulls first, then values (NaN after numbers)."""
    out: list[Any] = []
    for v in partition:
        if v is None:
            out.append((0,))
        elif isinstance(v, float) and v != v:
            out.append((2,))
        else:
            out.append((1, v))
    return tuple(out)


def new_manifest_path(metadata: TableMetadata) -> str:
    """Java's name for rewritten manifests: ``<metadata dir>/optimized-m-<uuid>.avro``."""
    return f"{metadata_dir(metadata)}/optimized-m-{uuid.uuid4()}.avro"


def write_manifest(
    io: FileIO,
    metadata: TableMetadata,
    spec_id: int,
    content: ManifestContent,
    entries: Iterable[ManifestEntry],
    snapshot_id: int,
) -> ManifestFile | None:
    """One manifest of EXISTING ``entries`` (None when there are none)."""
    writer: ManifestWriter | None = None
    try:
        for e in entries:
            if writer is None:
                writer = ManifestWriter(
                    io,
                    new_manifest_path(metadata),
                    metadata.spec_by_id(spec_id),
                    metadata.schema(),
                    snapshot_id,
                    content,
                    format_version=metadata.format_version,
                )
            writer.existing(e)
        return writer.close() if writer is not None else None
    except BaseException:
        if writer is not None:
            writer.abort()
            delete_quietly(io, [writer.path])
        raise


def write_clustered_manifests(io: FileIO, plan: RewriteManifestsPlan) -> list[ManifestFile]:
    """The local runner: read each set's live entries, sort by partition, write
    ``target_manifests`` manifests of consecutive entries."""
    written: list[ManifestFile] = []
    snapshot_id = plan.snapshot_id or 0
    try:
        for s in plan.sets:
            entries = [e for m in s.manifests for e in read_manifest(io, m, discard_deleted=True)]
            entries.sort(key=lambda e: partition_sort_key(e.data_file.partition))
            n = len(entries)
            chunks = max(1, min(s.target_manifests, n))
            bounds = [n * i // chunks for i in range(chunks + 1)]
            for i in range(chunks):
                m = write_manifest(
                    io,
                    plan.metadata,
                    plan.spec_id,
                    s.content,
                    entries[bounds[i] : bounds[i + 1]],
                    snapshot_id,
                )
                if m is not None:
                    written.append(m)
    except BaseException:
        delete_quietly(io, [m.manifest_path for m in written])
        raise
    return written


class RewriteManifestsAction:
    """The action behind ``table.maintenance.rewrite_manifests``."""

    def __init__(self, table: Table, spark: Any = None, options: Mapping[str, Any] | None = None) -> None:
        check_writable(table.name, table.format_version, "rewrite_manifests")
        self.table = table
        self.spark = spark
        self.options = ActionOptions(options, VALID_OPTIONS, "rewrite_manifests")
        self.options.boolean(USE_CACHING, False)
        spec_id = self.options.integer(SPEC_ID, table.metadata.default_spec_id)
        if spec_id not in table.metadata.specs_by_id:
            raise ValidationError(
                f"invalid spec id {spec_id}: the table has no such partition spec",
                hint=f"use one of {sorted(table.metadata.specs_by_id)}",
                option=SPEC_ID,
            )

    def plan(self) -> RewriteManifestsPlan:
        self.table.refresh()
        check_writable(self.table.name, self.table.format_version, "rewrite_manifests")
        return plan_rewrite_manifests(self.table.io, self.table.metadata, self.options)

    def write(self, plan: RewriteManifestsPlan) -> list[ManifestFile]:
        runner = _execution.make_runner(self.spark, self.table.io, 1)
        return runner.write_manifests(plan)

    def commit(self, plan: RewriteManifestsPlan, added: Sequence[ManifestFile]) -> RewriteManifestsResult:
        entries = sum((m.existing_files_count or 0) + (m.added_files_count or 0) for m in added)
        try:
            producer = RewriteManifests(
                self.table.io, replaced=plan.replaced, added=added, entries_processed=entries
            )
            base = self.table.catalog.load_table(self.table.identifier).metadata
        except BaseException:
            delete_quietly(self.table.io, [m.manifest_path for m in added])
            raise
        metadata, location = commit_actions(self.table.catalog, self.table.identifier, base, [producer])
        self.table.metadata = metadata
        self.table.metadata_location = location
        assert producer.committed_snapshot is not None
        return RewriteManifestsResult(
            tuple(plan.replaced),
            tuple(replace_snapshot(m, producer.committed_snapshot.snapshot_id) for m in added),
            producer.committed_snapshot.snapshot_id,
        )

    def execute(self, plan: RewriteManifestsPlan | None = None) -> RewriteManifestsResult:
        plan = plan if plan is not None else self.plan()
        if not plan.sets:
            return RewriteManifestsResult()
        return self.commit(plan, self.write(plan))


def replace_snapshot(m: ManifestFile, snapshot_id: int) -> ManifestFile:
    from dataclasses import replace

    return replace(m, added_snapshot_id=snapshot_id)
