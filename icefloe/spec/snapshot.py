"""Snapshots, snapshot references (branches and tags) and the snapshot/metadata logs.

The JSON forms here are the ones table metadata embeds; v1-only differences (no sequence number)
are handled by the callers in :mod:`icefloe.spec._wire` through ``format_version``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icefloe.errors import InvalidMetadataError, UnsupportedFeatureError, ValidationError

__all__ = [
    "MAIN_BRANCH",
    "MetadataLogEntry",
    "Operation",
    "Snapshot",
    "SnapshotLogEntry",
    "SnapshotRef",
    "SnapshotRefType",
    "Summary",
]

MAIN_BRANCH = "main"


def _req(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in obj or obj[key] is None:
        raise InvalidMetadataError(f"{what} is missing required field {key!r}: {dict(obj)}")
    return obj[key]


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    v = _req(obj, key, what)
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidMetadataError(f"{what} field {key!r} must be an integer, got {v!r}")
    return v


def _opt_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    return _int(obj, key, what) if obj.get(key) is not None else None


class Operation(enum.Enum):
    """What a snapshot did, as written in its summary's ``operation``."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"


@dataclass(frozen=True)
class Summary:
    """A snapshot summary: the operation plus free-form string properties (counts, engine info)."""

    operation: Operation
    props: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def properties(self) -> Mapping[str, str]:
        return self.props

    def __getitem__(self, key: str) -> str:
        return self.props[key]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    def to_json(self) -> dict[str, str]:
        return {"operation": self.operation.value, **self.props}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Summary:
        props = {str(k): str(v) for k, v in obj.items() if k != "operation"}
        op = obj.get("operation")
        try:
            return cls(Operation(op), props)
        except ValueError:
            raise InvalidMetadataError(
                f"snapshot summary has unknown operation {op!r}",
                hint="operations are append, replace, overwrite and delete",
            ) from None


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    summary: Summary
    schema_id: int | None = None
    # v3 row lineage
    first_row_id: int | None = None
    added_rows: int | None = None

    @property
    def operation(self) -> Operation:
        return self.summary.operation

    def __repr__(self) -> str:
        import datetime as dt

        when = dt.datetime.fromtimestamp(self.timestamp_ms / 1000, tz=dt.UTC)
        when_text = when.strftime("%Y-%m-%d %H:%M:%S UTC")
        parts = [
            f"snapshot_id={self.snapshot_id}",
            f"operation={self.operation.value!r}",
            f"committed={when_text!r}",
            f"parent_snapshot_id={self.parent_snapshot_id}",
            f"sequence_number={self.sequence_number}",
        ]
        for key in ("added-records", "deleted-records", "total-records", "total-data-files"):
            value = self.summary.get(key)
            if value is not None:
                parts.append(f"{key.replace('-', '_')}={value}")
        return f"Snapshot({', '.join(parts)})"

    def to_json(self, format_version: int = 2) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if format_version >= 2:
            out["sequence-number"] = self.sequence_number
        out["snapshot-id"] = self.snapshot_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["timestamp-ms"] = self.timestamp_ms
        out["summary"] = self.summary.to_json()
        out["manifest-list"] = self.manifest_list
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if format_version >= 3:
            if self.first_row_id is not None:
                out["first-row-id"] = self.first_row_id
            if self.added_rows is not None:
                out["added-rows"] = self.added_rows
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], format_version: int = 2) -> Snapshot:
        what = "snapshot"
        if not isinstance(obj, Mapping):
            raise InvalidMetadataError(f"snapshot must be a JSON object, got {obj!r}")
        if format_version >= 2:
            sequence_number = _int(obj, "sequence-number", what)
            summary_obj = _req(obj, "summary", what)
        else:
            sequence_number = _opt_int(obj, "sequence-number", what) or 0
            # A v1 snapshot may lack a summary; Java reads it as an append.
            summary_obj = obj.get("summary") or {"operation": "append"}
            if obj.get("manifest-list") is None and obj.get("manifests") is not None:
                raise UnsupportedFeatureError(
                    f"snapshot {obj.get('snapshot-id')} lists its manifests inline (written by Iceberg "
                    "before 0.8); icefloe reads only snapshots with a manifest list",
                    hint="rewrite the table's manifests with a current Iceberg version",
                )
        manifest_list = str(_req(obj, "manifest-list", what))
        if not isinstance(summary_obj, Mapping):
            raise InvalidMetadataError(f"snapshot summary must be an object, got {summary_obj!r}")
        return cls(
            snapshot_id=_int(obj, "snapshot-id", what),
            parent_snapshot_id=_opt_int(obj, "parent-snapshot-id", what),
            sequence_number=sequence_number,
            timestamp_ms=_int(obj, "timestamp-ms", what),
            manifest_list=manifest_list,
            summary=Summary.from_json(summary_obj),
            schema_id=_opt_int(obj, "schema-id", what),
            first_row_id=_opt_int(obj, "first-row-id", what),
            added_rows=_opt_int(obj, "added-rows", what),
        )


class SnapshotRefType(enum.Enum):
    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True)
class SnapshotRef:
    snapshot_id: int
    ref_type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        if self.ref_type is SnapshotRefType.TAG and (
            self.min_snapshots_to_keep is not None or self.max_snapshot_age_ms is not None
        ):
            raise ValidationError("tags cannot have min-snapshots-to-keep or max-snapshot-age-ms")
        for name in ("min_snapshots_to_keep", "max_snapshot_age_ms", "max_ref_age_ms"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ValidationError(f"{name.replace('_', '-')} must be positive, got {v}")

    @property
    def is_branch(self) -> bool:
        return self.ref_type is SnapshotRefType.BRANCH

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.ref_type.value}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SnapshotRef:
        what = "snapshot ref"
        try:
            ref_type = SnapshotRefType(str(_req(obj, "type", what)).lower())
        except ValueError:
            raise InvalidMetadataError(f"snapshot ref has unknown type {obj.get('type')!r}") from None
        try:
            return cls(
                snapshot_id=_int(obj, "snapshot-id", what),
                ref_type=ref_type,
                min_snapshots_to_keep=_opt_int(obj, "min-snapshots-to-keep", what),
                max_snapshot_age_ms=_opt_int(obj, "max-snapshot-age-ms", what),
                max_ref_age_ms=_opt_int(obj, "max-ref-age-ms", what),
            )
        except ValidationError as e:
            raise InvalidMetadataError(f"invalid snapshot ref {dict(obj)}: {e.message}") from None


@dataclass(frozen=True)
class SnapshotLogEntry:
    """``main`` became ``snapshot_id`` at ``timestamp_ms``."""

    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SnapshotLogEntry:
        what = "snapshot-log entry"
        return cls(_int(obj, "timestamp-ms", what), _int(obj, "snapshot-id", what))


@dataclass(frozen=True)
class MetadataLogEntry:
    """``metadata_file`` was the table's metadata until ``timestamp_ms`` (its last-updated-ms)."""

    timestamp_ms: int
    metadata_file: str

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> MetadataLogEntry:
        what = "metadata-log entry"
        return cls(_int(obj, "timestamp-ms", what), str(_req(obj, "metadata-file", what)))
