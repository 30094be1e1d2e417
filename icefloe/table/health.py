"""Table health: what a table's metadata says about its layout, and which maintenance fixes it.

``table.health()`` (``icefloe health ns.t`` on the command line) reads the current snapshot's
manifests (never a data file) and reports:

- the data-file size distribution against the table's ``write.target-file-size-bytes``, and the
  small files compaction would pick up (Iceberg Java's rules: files under 75% of the target, in
  partitions with at least ``min-input-files`` of them or more than a target's worth);
- per partition: files, small files, rows, bytes, delete files and the share of deleted rows;
- manifests: how many, how big, and how many a manifest rewrite would leave;
- snapshots and metadata files: how many, how fast they grow, how many an expiry would remove;
- partition skew: the largest partition against the median one.

Each :class:`Finding` carries the command and the Python call that fixes it
(``icefloe compact ns.t`` / ``table.maintenance.rewrite_data_files()``).
:meth:`TableHealth.to_dict` is the JSON form; :meth:`TableHealth.to_html` a self-contained page
with plots (inline SVG, no network).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.errors import ValidationError
from icefloe.table._repr import format_bytes, format_millis

if TYPE_CHECKING:
    from icefloe.manifest import DataFile, ManifestFile
    from icefloe.table._table import Table

__all__ = [
    "Finding",
    "ManifestStats",
    "MetadataStats",
    "PartitionHealth",
    "SnapshotPoint",
    "TableHealth",
    "Thresholds",
    "check_health",
]

TARGET_FILE_SIZE_PROP = "write.target-file-size-bytes"
TARGET_FILE_SIZE_DEFAULT = 512 * 1024 * 1024
MANIFEST_TARGET_PROP = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_DEFAULT = 8 * 1024 * 1024
PREVIOUS_VERSIONS_PROP = "write.metadata.previous-versions-max"
PREVIOUS_VERSIONS_DEFAULT = 100
DELETE_AFTER_COMMIT_PROP = "write.metadata.delete-after-commit.enabled"

SEVERITIES = ("info", "warning", "critical")

# compaction that applies every delete file and drops the ones left with nothing to delete
_COMPACT_DELETES = "icefloe compact {name} -o delete-file-threshold=1 -o remove-dangling-deletes=true"
_COMPACT_DELETES_PY = (
    "table.maintenance.rewrite_data_files("
    'options={"delete-file-threshold": 1, "remove-dangling-deletes": True})'
)


@dataclass(frozen=True)
class Thresholds:
    """When a measurement becomes a finding. Pass any of these to ``table.health(...)``."""

    #: a data file is small below this share of the target file size (Java's min-file-size 0.75)
    small_file_ratio: float = 0.75
    #: a partition is worth compacting with at least this many small files (Java's min-input-files)
    min_input_files: int = 5
    #: deleted rows (position and equality deletes) per data row that make a partition a finding
    #: (Java's delete-ratio-threshold)
    delete_ratio: float = 0.3
    #: delete files per data file that make a finding, even when few rows are deleted
    delete_files_per_data_file: float = 1.0
    #: manifests of one kind before their count is a finding (when a rewrite would halve them)
    max_manifests: int = 20
    #: snapshots an expiry would remove before that is a warning (any is reported as info)
    expirable_snapshots_warning: int = 100
    #: a current metadata file larger than this is a warning (every commit rewrites it)
    metadata_file_bytes: int = 10 * 1024 * 1024
    #: largest partition (bytes) over the median partition that counts as skew
    skew_factor: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.small_file_ratio < 1:
            raise ValidationError(f"small_file_ratio must be in (0, 1), got {self.small_file_ratio}")
        for name in (
            "min_input_files",
            "max_manifests",
            "expirable_snapshots_warning",
            "metadata_file_bytes",
        ):
            if getattr(self, name) < 1:
                raise ValidationError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.delete_ratio <= 0 or self.delete_files_per_data_file <= 0 or self.skew_factor <= 1:
            raise ValidationError("delete_ratio and delete_files_per_data_file must be > 0, skew_factor > 1")


@dataclass(frozen=True)
class Finding:
    """One thing worth fixing: ``code`` (stable, for scripts), ``severity`` (``info``,
    ``warning``, ``critical``), a one-line ``title``, the ``detail``, and the fix as a
    ``command`` line and a ``python`` call (either may be None)."""

    code: str
    severity: str
    title: str
    detail: str
    command: str | None = None
    python: str | None = None
    partitions: tuple[str, ...] = ()


@dataclass(frozen=True)
class PartitionHealth:
    """One partition of the current snapshot (``partition`` is its path, ``ts_day=2024-01-01``;
    ``""`` for an unpartitioned table)."""

    partition: str
    spec_id: int
    data_files: int
    small_files: int
    records: int
    data_bytes: int
    delete_files: int
    position_deletes: int
    equality_deletes: int

    @property
    def delete_ratio(self) -> float:
        """Deleted rows per data row (can exceed 1 with equality deletes of absent keys)."""
        deleted = self.position_deletes + self.equality_deletes
        return deleted / self.records if self.records else (1.0 if deleted else 0.0)

    @property
    def compactable(self) -> bool:
        """Whether compaction would rewrite files here: several small files, or deletes."""
        return self.small_files >= 2 or self.delete_files > 0


@dataclass(frozen=True)
class ManifestStats:
    data_manifests: int
    delete_manifests: int
    total_bytes: int
    smallest_bytes: int
    largest_bytes: int
    #: what a manifest rewrite at ``commit.manifest.target-size-bytes`` would leave
    after_rewrite: int

    @property
    def count(self) -> int:
        return self.data_manifests + self.delete_manifests


@dataclass(frozen=True)
class SnapshotPoint:
    """One snapshot in the timeline (oldest first)."""

    timestamp_ms: int
    snapshot_id: int
    operation: str
    total_records: int | None
    total_data_files: int | None
    total_delete_files: int | None


@dataclass(frozen=True)
class MetadataStats:
    current_file_bytes: int | None
    #: entries of the metadata log (previous metadata files the current one remembers)
    log_entries: int
    #: ``*.metadata.json`` files under the table's metadata directory (None: storage not listable)
    files_on_storage: int | None
    previous_versions_max: int
    delete_after_commit: bool
    #: (timestamp_ms) of each metadata version in the log, then the current one
    versions_ms: tuple[int, ...] = ()


@dataclass(frozen=True)
class TableHealth:
    """The result of ``table.health()``: measurements, per-partition figures and findings.

    ``healthy`` is true when no finding is a warning or worse. ``to_dict()`` gives plain JSON
    types; ``to_html()`` a self-contained report page."""

    table: str
    snapshot_id: int | None
    checked_at_ms: int
    target_file_size: int
    small_file_size: int
    data_files: int
    data_bytes: int
    records: int
    small_files: int
    delete_files: int
    position_delete_files: int
    equality_delete_files: int
    #: file-scoped delete files whose data file is gone (they delete nothing; not in the counts above)
    dangling_delete_files: int
    #: (lower bound, upper bound, count) of data file sizes, in bytes, on a log-2 scale
    file_size_histogram: tuple[tuple[int, int, int], ...]
    #: min, median, mean, max data file size (zeros without data files)
    file_size_summary: Mapping[str, int]
    partitions: tuple[PartitionHealth, ...]
    manifests: ManifestStats
    snapshots: tuple[SnapshotPoint, ...]
    expirable_snapshots: int
    metadata: MetadataStats
    findings: tuple[Finding, ...]
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def healthy(self) -> bool:
        return not any(f.severity in ("warning", "critical") for f in self.findings)

    def finding(self, code: str) -> Finding | None:
        return next((f for f in self.findings if f.code == code), None)

    def __repr__(self) -> str:
        if not self.findings:
            verdict = "healthy, no findings"
        else:
            codes = ", ".join(f"{f.code} ({f.severity})" for f in self.findings)
            verdict = ("healthy" if self.healthy else "needs maintenance") + f": {codes}"
        return (
            f"TableHealth({self.table!r}, {verdict}; {self.data_files} data files "
            f"({format_bytes(self.data_bytes)}), {self.small_files} small, {self.delete_files} delete files, "
            f"{self.manifests.count} manifests, {len(self.snapshots)} snapshots)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types: the measurements, partitions (with ``delete_ratio``) and findings."""
        out = dataclasses.asdict(self)
        out["healthy"] = self.healthy
        out["file_size_histogram"] = [
            {"lower_bytes": lo, "upper_bytes": hi, "files": n} for lo, hi, n in self.file_size_histogram
        ]
        out["file_size_summary"] = dict(self.file_size_summary)
        out["partitions"] = [
            {**dataclasses.asdict(p), "delete_ratio": round(p.delete_ratio, 6)} for p in self.partitions
        ]
        out["manifests"]["count"] = self.manifests.count
        for f in out["findings"]:
            f["partitions"] = list(f["partitions"])
        out["metadata"]["versions_ms"] = list(self.metadata.versions_ms)
        return out

    def to_html(self) -> str:
        """A self-contained HTML page (inline CSS and SVG plots; nothing loaded from elsewhere)."""
        from icefloe.table._health_html import render_html

        return render_html(self)


# --------------------------------------------------------------------------- measuring


def _partition_label(table: Table, f: DataFile) -> str:
    spec = table.metadata.specs_by_id.get(f.spec_id)
    if spec is None or not spec.fields:
        return ""
    try:
        return spec.partition_path(f.partition, table.metadata.schema())
    except Exception:  # a source column dropped since: the raw values still tell partitions apart
        return "/".join(f"{pf.name}={v}" for pf, v in zip(spec.fields, f.partition, strict=False))


def _histogram(sizes: list[int]) -> tuple[tuple[int, int, int], ...]:
    """Counts of ``sizes`` in bins of equal width on a log-2 scale: whole powers of two, or
    halves or quarters of one when the sizes span only a few, at most 16 bins."""
    if not sizes:
        return ()
    smallest, high = math.log2(max(1, min(sizes))), math.log2(max(1, max(sizes)))
    for width in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0):
        low = math.floor(smallest / width) * width
        if (high - low) / width <= 16:
            break
    n_bins = max(1, math.ceil((high - low) / width + 1e-9))
    if high >= low + n_bins * width:  # the largest size sits exactly on the upper edge
        n_bins += 1
    counts = [0] * n_bins
    for s in sizes:
        i = int((math.log2(max(1, s)) - low) / width)
        counts[min(n_bins - 1, max(0, i))] += 1
    edges = [round(2 ** (low + i * width)) for i in range(n_bins + 1)]
    return tuple((edges[i], edges[i + 1], counts[i]) for i in range(n_bins))


def _manifests(table: Table) -> list[ManifestFile]:
    from icefloe.manifest import read_manifest_list

    snap = table.metadata.current_snapshot()
    return [] if snap is None else read_manifest_list(table.io, snap.manifest_list)


def _metadata_stats(table: Table) -> MetadataStats:
    from icefloe.io import SupportsPrefixListing

    md = table.metadata
    props = md.properties
    try:
        size: int | None = len(table.io.new_input(table.metadata_location))
    except Exception:
        size = None
    on_storage: int | None = None
    if isinstance(table.io, SupportsPrefixListing):
        try:
            listed = table.io.list_prefix(f"{md.location.rstrip('/')}/metadata", recursive=False)
            on_storage = sum(1 for info in listed if info.location.endswith(".metadata.json"))
        except Exception:
            on_storage = None
    versions = (*(e.timestamp_ms for e in md.metadata_log), md.last_updated_ms)
    return MetadataStats(
        current_file_bytes=size,
        log_entries=len(md.metadata_log),
        files_on_storage=on_storage,
        previous_versions_max=int(props.get(PREVIOUS_VERSIONS_PROP, PREVIOUS_VERSIONS_DEFAULT)),
        delete_after_commit=props.get(DELETE_AFTER_COMMIT_PROP, "false").lower() == "true",
        versions_ms=versions,
    )


def _summary_int(snap: Any, key: str) -> int | None:
    value = snap.summary.get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def check_health(table: Table, **thresholds: Any) -> TableHealth:
    """Measure ``table`` (its current snapshot) and derive the findings; see the module doc."""
    from icefloe.manifest import DataFileContent, ManifestContent, read_manifest

    try:
        limits = Thresholds(**thresholds)
    except TypeError as e:
        names = ", ".join(f.name for f in dataclasses.fields(Thresholds))
        raise ValidationError(f"unknown health threshold: {e}", hint=f"thresholds are: {names}") from None
    md = table.metadata
    now_ms = int(time.time() * 1000)
    target = int(md.properties.get(TARGET_FILE_SIZE_PROP, TARGET_FILE_SIZE_DEFAULT))
    small_size = int(target * limits.small_file_ratio)

    manifests = _manifests(table)
    sizes: list[int] = []
    parts: dict[tuple[int, str], dict[str, int]] = {}
    pos_files = eq_files = dangling = 0
    live: set[str] = set()
    deletes: list[DataFile] = []

    def part(f: DataFile) -> dict[str, int]:
        key = (f.spec_id, _partition_label(table, f))
        return parts.setdefault(
            key, dict.fromkeys(("files", "small", "records", "bytes", "deletes", "pos", "eq"), 0)
        )

    for m in manifests:
        for entry in read_manifest(table.io, m, discard_deleted=True):
            f = entry.data_file
            if f.content != DataFileContent.DATA:
                deletes.append(f)
                continue
            p = part(f)
            live.add(f.file_path)
            sizes.append(f.file_size_in_bytes)
            p["files"] += 1
            p["small"] += f.file_size_in_bytes < small_size
            p["records"] += max(0, f.record_count)
            p["bytes"] += f.file_size_in_bytes
    for f in deletes:
        if f.referenced_data_file is not None and f.referenced_data_file not in live:
            dangling += 1  # its data file was rewritten or deleted: it deletes nothing any more
            continue
        p = part(f)
        p["deletes"] += 1
        if f.content == DataFileContent.POSITION_DELETES:
            pos_files += 1
            p["pos"] += max(0, f.record_count)
        else:
            eq_files += 1
            p["eq"] += max(0, f.record_count)
    partitions = tuple(
        PartitionHealth(
            label, spec_id, v["files"], v["small"], v["records"], v["bytes"], v["deletes"], v["pos"], v["eq"]
        )
        for (spec_id, label), v in sorted(parts.items())
    )

    data_manifests = [m for m in manifests if m.content == ManifestContent.DATA]
    delete_manifests = [m for m in manifests if m.content == ManifestContent.DELETES]
    manifest_target = max(1, int(md.properties.get(MANIFEST_TARGET_PROP, MANIFEST_TARGET_DEFAULT)))

    def after(ms: list[ManifestFile]) -> int:
        return 0 if not ms else max(1, -(-sum(m.manifest_length for m in ms) // manifest_target))

    lengths = [m.manifest_length for m in manifests]
    manifest_stats = ManifestStats(
        len(data_manifests),
        len(delete_manifests),
        sum(lengths),
        min(lengths, default=0),
        max(lengths, default=0),
        after(data_manifests) + after(delete_manifests),
    )

    timeline = tuple(
        SnapshotPoint(
            s.timestamp_ms,
            s.snapshot_id,
            s.operation.value,
            _summary_int(s, "total-records"),
            _summary_int(s, "total-data-files"),
            _summary_int(s, "total-delete-files"),
        )
        for s in sorted(md.snapshots, key=lambda s: s.timestamp_ms)
    )
    from icefloe.maintenance.expire_snapshots import plan_expiry

    expirable = len(plan_expiry(md, now_ms=now_ms).snapshot_ids) if md.snapshots else 0

    ordered = sorted(sizes)
    summary = {
        "min": ordered[0] if ordered else 0,
        "median": int(statistics.median(ordered)) if ordered else 0,
        "mean": int(statistics.fmean(ordered)) if ordered else 0,
        "max": ordered[-1] if ordered else 0,
    }
    health = TableHealth(
        table=table.name,
        snapshot_id=md.current_snapshot_id,
        checked_at_ms=now_ms,
        target_file_size=target,
        small_file_size=small_size,
        data_files=len(sizes),
        data_bytes=sum(sizes),
        records=sum(p.records for p in partitions),
        small_files=sum(p.small_files for p in partitions),
        delete_files=pos_files + eq_files,
        position_delete_files=pos_files,
        equality_delete_files=eq_files,
        dangling_delete_files=dangling,
        file_size_histogram=_histogram(sizes),
        file_size_summary=summary,
        partitions=partitions,
        manifests=manifest_stats,
        snapshots=timeline,
        expirable_snapshots=expirable,
        metadata=_metadata_stats(table),
        findings=(),
        thresholds=limits,
    )
    return dataclasses.replace(health, findings=tuple(_findings(health, limits)))


# --------------------------------------------------------------------------- findings


def _names(parts: list[PartitionHealth], limit: int = 5) -> str:
    shown = ", ".join(p.partition or "(unpartitioned)" for p in parts[:limit])
    return shown + (f" and {len(parts) - limit} more" if len(parts) > limit else "")


def _findings(h: TableHealth, t: Thresholds) -> list[Finding]:
    name = h.table
    out: list[Finding] = []

    # small files, counted where compaction would pick them up (Java's planner rules)
    compactable = [
        p
        for p in h.partitions
        if p.small_files >= 2 and (p.small_files >= t.min_input_files or p.data_bytes > h.target_file_size)
    ]
    n_small = sum(p.small_files for p in compactable)
    if compactable:
        share = n_small / h.data_files if h.data_files else 0.0
        out.append(
            Finding(
                "small_files",
                "warning" if share >= 0.5 else "info",
                f"{n_small} of {h.data_files} data files are small, in {len(compactable)} partition(s)",
                f"files under {format_bytes(h.small_file_size)} ({t.small_file_ratio:.0%} of the "
                f"{format_bytes(h.target_file_size)} target) make reads open and plan more files; "
                f"compaction merges them: {_names(compactable)}",
                f"icefloe compact {name}",
                "table.maintenance.rewrite_data_files()",
                tuple(p.partition for p in compactable),
            )
        )

    high = [p for p in h.partitions if p.delete_files and p.delete_ratio >= t.delete_ratio]
    if high:
        worst = max(high, key=lambda p: p.delete_ratio)
        out.append(
            Finding(
                "delete_ratio",
                "warning",
                f"{len(high)} partition(s) have {t.delete_ratio:.0%} or more of their rows deleted "
                f"(worst {worst.delete_ratio:.0%})",
                "every read merges these deletes into the data; compaction applies them and drops "
                f"the delete files: {_names(high)}",
                _COMPACT_DELETES.format(name=name),
                _COMPACT_DELETES_PY,
                tuple(p.partition for p in high),
            )
        )
    if h.equality_delete_files:
        out.append(
            Finding(
                "equality_deletes",
                "warning",
                f"{h.equality_delete_files} equality delete file(s) are live",
                "readers must compare every data row against them; compaction applies them",
                _COMPACT_DELETES.format(name=name),
                _COMPACT_DELETES_PY,
            )
        )
    many = [
        p
        for p in h.partitions
        if p.delete_files
        and p not in high
        and p.delete_files >= t.delete_files_per_data_file * max(1, p.data_files)
    ]
    if many:
        out.append(
            Finding(
                "delete_files",
                "info",
                f"{sum(p.delete_files for p in many)} delete files in {len(many)} partition(s) "
                "with few deleted rows",
                f"each is opened by every read of its partition: {_names(many)}",
                _COMPACT_DELETES.format(name=name),
                "table.maintenance.rewrite_position_delete_files()",
                tuple(p.partition for p in many),
            )
        )

    if h.dangling_delete_files:
        out.append(
            Finding(
                "dangling_deletes",
                "info",
                f"{h.dangling_delete_files} delete file(s) refer to data files that are gone",
                "compaction or a delete rewrote their data files; they delete nothing, but planning "
                "still reads them and they keep their files on storage",
                f"icefloe compact {name} --option remove-dangling-deletes=true",
                'table.maintenance.rewrite_data_files(options={"remove-dangling-deletes": True})',
            )
        )

    m = h.manifests
    if m.count >= t.max_manifests and m.after_rewrite * 2 <= m.count:
        out.append(
            Finding(
                "manifests",
                "warning" if m.count >= 5 * t.max_manifests else "info",
                f"{m.count} manifests ({format_bytes(m.total_bytes)}); "
                f"a rewrite would leave {m.after_rewrite}",
                "planning reads every manifest the partition filter cannot skip; clustered manifests "
                "prune better and open fewer files",
                f"icefloe rewrite-manifests {name}",
                "table.maintenance.rewrite_manifests()",
            )
        )

    if h.expirable_snapshots:
        out.append(
            Finding(
                "expirable_snapshots",
                "warning" if h.expirable_snapshots >= t.expirable_snapshots_warning else "info",
                f"{h.expirable_snapshots} of {len(h.snapshots)} snapshots are past the table's retention",
                "they keep their data files and manifests on storage and grow the metadata file; expiry "
                "removes them (history.expire.max-snapshot-age-ms, min-snapshots-to-keep)",
                f"icefloe expire {name}",
                "table.maintenance.expire_snapshots()",
            )
        )
    md = h.metadata
    if md.current_file_bytes is not None and md.current_file_bytes >= t.metadata_file_bytes:
        out.append(
            Finding(
                "metadata_size",
                "warning",
                f"the metadata file is {format_bytes(md.current_file_bytes)}",
                f"every commit writes it anew; it holds {len(h.snapshots)} snapshots: expire old ones",
                f"icefloe expire {name} --older-than 7d",
                "table.maintenance.expire_snapshots(older_than=...)",
            )
        )
    if (
        md.files_on_storage is not None
        and not md.delete_after_commit
        and md.files_on_storage > md.previous_versions_max + 1
    ):
        out.append(
            Finding(
                "metadata_files",
                "info",
                f"{md.files_on_storage} metadata files are on storage; "
                f"the log keeps {md.previous_versions_max}",
                f"old metadata files stay unless {DELETE_AFTER_COMMIT_PROP} is true; the ones no log "
                "lists are orphans",
                f"icefloe set-properties {name} {DELETE_AFTER_COMMIT_PROP}=true "
                f"&& icefloe remove-orphans {name}",
                "with table.transaction() as tx: "
                f'tx.set_properties(**{{"{DELETE_AFTER_COMMIT_PROP}": "true"}})',
            )
        )

    sized = [p for p in h.partitions if p.data_bytes > 0]
    if len(sized) >= 3:
        median = statistics.median(p.data_bytes for p in sized)
        biggest = max(sized, key=lambda p: p.data_bytes)
        if median > 0 and biggest.data_bytes >= t.skew_factor * median:
            out.append(
                Finding(
                    "partition_skew",
                    "info",
                    f"partition {biggest.partition} holds {format_bytes(biggest.data_bytes)}, "
                    f"{biggest.data_bytes / median:.0f}x the median partition",
                    "work on it cannot spread over more tasks than its files; a finer partitioning "
                    "(for example a bucket of a high-cardinality column) splits it, and compaction "
                    "rewrites the old files into the new spec",
                    f"icefloe compact {name}  # after the spec change",
                    'with table.update_spec() as u: u.add_field("bucket(16, <column>)")',
                    (biggest.partition,),
                )
            )
    order = {s: i for i, s in enumerate(reversed(SEVERITIES))}
    out.sort(key=lambda f: order.get(f.severity, len(order)))
    return out


def describe(h: TableHealth) -> list[str]:
    """A few lines of text about ``h`` (the CLI's summary and the HTML page's header)."""
    last = h.snapshots[-1].timestamp_ms if h.snapshots else None
    return [
        f"{h.data_files} data files, {format_bytes(h.data_bytes)}, {h.records} rows; "
        f"{h.small_files} under {format_bytes(h.small_file_size)} "
        f"(target {format_bytes(h.target_file_size)})",
        f"{h.delete_files} delete files ({h.position_delete_files} position, "
        f"{h.equality_delete_files} equality)",
        f"{h.manifests.count} manifests ({format_bytes(h.manifests.total_bytes)}), "
        f"{len(h.partitions)} partitions",
        f"{len(h.snapshots)} snapshots ({h.expirable_snapshots} past retention), last {format_millis(last)}",
    ]
