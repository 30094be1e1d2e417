"""Arrow-level row operations: find the rows to remove and turn them into files for a producer.

::

    row filter / key set ─▶ plan the files that may hold such rows (partition + metrics pruning)
        ─▶ per file, metadata first: every row matches (strict projection / metrics) ─▶ remove it
        ─▶ else read only the needed columns, streaming, and find the matching positions
             none                 ─▶ file untouched
             copy-on-write        ─▶ read the file again (deletes applied), keep the rows that do
                                     NOT match (a NULL filter result keeps the row), write them to
                                     the file's own partition spec, remove the old file
             merge-on-read        ─▶ one position delete file per data file (icefloe.arrow.deletes)

Everything is vectorized per batch; at most one batch of one file is in memory at a time (plus,
for an upsert, the key columns of the input). Producers in :mod:`icefloe.transaction` then commit
the result and re-validate it against concurrent commits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from icefloe.arrow.deletion_vectors import DVTarget
from icefloe.arrow.row_lineage import lineage_schema
from icefloe.arrow.row_match import Matcher
from icefloe.errors import FileIOError, SchemaError, ValidationError
from icefloe.expressions import (
    AlwaysTrue,
    BooleanExpression,
    bind,
    parse,
)
from icefloe.manifest import DataFile
from icefloe.scan.task import FileScanTask
from icefloe.spec.properties import COPY_ON_WRITE, MERGE_ON_READ, WRITE_MODES, choice_property
from icefloe.transaction._file_filter import FileFilter

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "COPY_ON_WRITE",
    "MERGE_ON_READ",
    "RowChanges",
    "remove_rows",
    "to_filter",
    "write_mode",
]


def write_mode(properties: dict[str, str], command: str) -> str:
    """``write.<command>.mode`` (delete, update, merge): copy-on-write (default) or merge-on-read."""
    return choice_property(
        properties,
        f"write.{command}.mode",
        COPY_ON_WRITE,
        WRITE_MODES,
        what="a write mode",
    )


def to_filter(where: str | BooleanExpression, schema: Schema) -> BooleanExpression:
    """Parse and bind-check a user filter (an unknown column raises ExpressionError)."""
    if isinstance(where, str):
        expr = parse(where)
    elif isinstance(where, BooleanExpression):
        expr = where
    else:
        raise ValidationError(
            f"a row filter must be text or an icefloe expression, got {type(where).__name__}",
            hint="e.g. table.delete(\"id < 10\") or table.delete(col('id') < 10)",
        )
    bind(schema, expr)
    return expr


@dataclass
class RowChanges:
    """The files a row operation produced, not committed yet."""

    removed: list[DataFile] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    referenced: set[str] = field(default_factory=set)
    rows_removed: int = 0
    #: v3: delete files the new deletion vectors replace (removed in the same commit)
    removed_deletes: list[DataFile] = field(default_factory=list)

    def written(self) -> list[str]:
        # a Puffin file holds the deletion vectors of many data files: each path once
        return list(dict.fromkeys(f.file_path for f in (*self.added, *self.added_deletes)))

    def discard(self, io: FileIO) -> None:
        for p in self.written():
            with contextlib.suppress(FileIOError):
                io.delete(p)


def _read(
    io: FileIO,
    metadata: TableMetadata,
    task: FileScanTask,
    projection: Schema,
    *,
    apply_deletes: bool,
) -> Iterator[pa.RecordBatch]:
    from icefloe.arrow.reader import read_task

    # keeps the data sequence number, which a null _last_updated_sequence_number inherits
    bare = replace(task, residual=AlwaysTrue(), delete_files=task.delete_files if apply_deletes else ())
    return read_task(
        io,
        bare,
        projection,
        metadata.schema(),
        name_mapping=metadata.properties.get("schema.name-mapping.default"),
    )


def _matching_positions(
    io: FileIO, metadata: TableMetadata, task: FileScanTask, matcher: Matcher
) -> tuple[np.ndarray, int]:
    """Positions (row ordinals in the file) of the matching rows, and the file's row count.
    Read without applying deletes: positions must count every row of the file."""
    parts: list[np.ndarray] = []
    offset = 0
    for batch in _read(io, metadata, task, matcher.read_schema, apply_deletes=False):
        mask = matcher.matches(batch)
        if mask.any():
            parts.append(np.flatnonzero(mask).astype(np.int64) + offset)
        offset += batch.num_rows
    positions = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return positions, offset


def _rewrite(
    io: FileIO, metadata: TableMetadata, task: FileScanTask, matcher: Matcher, changes: RowChanges
) -> None:
    """Copy-on-write: write the rows of ``task``'s file that do not match, in the file's spec."""
    from icefloe.arrow.writer import write_data_files

    # v3: the surviving rows keep their _row_id and _last_updated_sequence_number
    schema = lineage_schema(metadata)
    removed = [0]

    def survivors() -> Iterator[pa.RecordBatch]:
        # The matcher refers to columns by name, so the full rows serve it as they are.
        for batch in _read(io, metadata, task, schema, apply_deletes=True):
            mask = matcher.matches(batch)
            n = int(mask.sum())
            removed[0] += n
            if n == 0:
                yield batch
            elif n < batch.num_rows:
                yield batch.filter(pa.array(~mask))

    files = write_data_files(
        io, metadata, survivors(), spec=metadata.spec_by_id(task.file.spec_id), schema=schema
    )
    changes.added.extend(files)
    changes.removed.append(task.file)
    changes.rows_removed += removed[0]


def remove_rows(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    matcher: Matcher,
    prefilter: BooleanExpression,
    mode: str,
    *,
    whole_file_filter: BooleanExpression | None = None,
) -> RowChanges:
    """Find the rows ``matcher`` selects among the files ``prefilter`` may match and produce the
    files that remove them (copy-on-write or merge-on-read). On error, written files are deleted."""
    from icefloe.scan.planner import plan_files

    changes = RowChanges()
    if snapshot is None:
        return changes
    whole = FileFilter(metadata, whole_file_filter) if whole_file_filter is not None else None
    dv_targets: list[DVTarget] = []
    try:
        for task in plan_files(io, metadata, snapshot, prefilter):
            if whole is not None and whole.must_match(task.file):
                changes.removed.append(task.file)
                changes.rows_removed += task.file.record_count
                continue
            positions, n_rows = _matching_positions(io, metadata, task, matcher)
            if positions.size == 0:
                continue
            if positions.size == n_rows and not task.delete_files:
                # Every row goes: drop the file by metadata, nothing to write.
                changes.removed.append(task.file)
                changes.rows_removed += n_rows
            elif mode == MERGE_ON_READ and metadata.format_version >= 3:
                # deletion vectors, all in one Puffin file written below
                dv_targets.append(DVTarget(task.file, positions, task.delete_files))
                changes.referenced.add(task.file.file_path)
                changes.rows_removed += int(positions.size)
            elif mode == MERGE_ON_READ:
                _position_deletes(io, metadata, task.file, positions, changes)
            else:
                _rewrite(io, metadata, task, matcher, changes)
        if dv_targets:
            from icefloe.arrow.deletion_vectors import write_deletion_vectors

            dvs = write_deletion_vectors(io, metadata, dv_targets)
            changes.added_deletes.extend(dvs.added)
            changes.removed_deletes.extend(dvs.rewritten)
    except BaseException:
        changes.discard(io)
        raise
    return changes


def _position_deletes(
    io: FileIO, metadata: TableMetadata, f: DataFile, positions: np.ndarray, changes: RowChanges
) -> None:
    from icefloe.arrow.deletes import write_position_deletes

    files = write_position_deletes(
        io, metadata, {f.file_path: pa.array(positions)}, spec_id=f.spec_id, partition=f.partition
    )
    changes.added_deletes.extend(files)
    changes.referenced.add(f.file_path)
    changes.rows_removed += int(positions.size)


def check_key_columns(schema: Schema, data_schema: pa.Schema, key_columns: Any) -> list[str]:
    """Key columns must be a non-empty list of top-level primitive columns of table and data."""
    if isinstance(key_columns, str) or not key_columns:
        raise ValidationError(
            "key_columns must be a non-empty list of column names",
            hint='e.g. table.upsert(data, key_columns=["id"])',
        )
    keys = list(key_columns)
    for c in keys:
        if not isinstance(c, str):
            raise ValidationError(f"key column names must be strings, got {c!r}")
        f = next((x for x in schema.fields if x.name == c), None)
        if f is None:
            raise SchemaError(
                f"key column {c!r} is not a top-level column of the table",
                hint=f"table columns: {', '.join(x.name for x in schema.fields)}",
                column=c,
            )
        if not f.field_type.is_primitive:
            raise SchemaError(f"key column {c!r} must be a primitive column, it is {f.field_type}", column=c)
        if c not in data_schema.names:
            raise SchemaError(f"key column {c!r} is missing from the data", column=c)
    if len(set(keys)) != len(keys):
        raise ValidationError(f"duplicate key columns in {keys}")
    return keys
