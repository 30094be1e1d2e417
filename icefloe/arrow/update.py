"""UPDATE on the Arrow engine: new values for the rows matching a filter, in copy-on-write or
merge-on-read (``write.update.mode``).

::

    where ─▶ plan the files that may hold matching rows (partition + metrics pruning)
          ─▶ per file: read the live rows with their positions (deletes applied, one batch at a time)
               no row matches          ─▶ file untouched
               copy-on-write           ─▶ every live row, the matching ones with the new values,
                                          written to the file's partition spec; the old file goes
               merge-on-read           ─▶ a position delete file for the matching positions, and
                                          the updated rows as new data files

``set`` maps a top-level column to its new value: a Python value (``None`` for null), a
``pyarrow.compute`` expression over the row's current columns (``pc.field("price") * 2``), or a
function from a ``pyarrow.RecordBatch`` (the current rows) to an array or scalar. Values are cast
to the column's type (a lossy cast fails). The producers in :mod:`icefloe.transaction` commit the
result (``OverwriteFiles`` or ``RowDelta``) and validate it against concurrent commits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow.deletion_vectors import DVTarget
from icefloe.arrow.positions import read_with_positions
from icefloe.arrow.row_lineage import lineage_schema, mark_updated
from icefloe.arrow.row_match import FilterMatcher
from icefloe.errors import FileIOError, SchemaError, ValidationError
from icefloe.expressions import BooleanExpression
from icefloe.manifest import DataFile
from icefloe.spec.properties import MERGE_ON_READ

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["Assignments", "UpdateChanges", "check_assignments", "update_rows"]

Assignment = Any  # a Python value, a pyarrow.compute.Expression, or RecordBatch -> array/scalar
Assignments = Mapping[str, Assignment]


@dataclass
class UpdateChanges:
    """The files an update produced, not committed yet."""

    removed: list[DataFile] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    referenced: set[str] = field(default_factory=set)
    rows_updated: int = 0
    #: v3: delete files the new deletion vectors replace (removed in the same commit)
    removed_deletes: list[DataFile] = field(default_factory=list)
    #: v3: positions collected per data file, written as deletion vectors in one Puffin file
    dv_targets: list[DVTarget] = field(default_factory=list)

    def discard(self, io: FileIO) -> None:
        for path in dict.fromkeys(f.file_path for f in (*self.added, *self.added_deletes)):
            with contextlib.suppress(FileIOError):
                io.delete(path)


def check_assignments(schema: Schema, assignments: Assignments) -> dict[str, Assignment]:
    """``assignments`` as a dict, refused (nothing written) unless every key is a top-level
    column of ``schema`` and there is at least one."""
    if not isinstance(assignments, Mapping) or not assignments:
        raise ValidationError(
            "set must be a non-empty mapping of column name to new value",
            hint='e.g. table.update("id = 3", set={"status": "done", "n": pc.field("n") + 1})',
        )
    names = {f.name for f in schema.fields}
    for name in assignments:
        if not isinstance(name, str) or name not in names:
            raise SchemaError(
                f"cannot update {name!r}: not a top-level column of the table",
                hint=f"table columns: {', '.join(f.name for f in schema.fields)}",
                column=name,
            )
    return dict(assignments)


def _evaluate(value: Assignment, batch: pa.RecordBatch) -> pa.Array | pa.Scalar:
    if isinstance(value, pc.Expression):
        import pyarrow.dataset as pads

        out = pads.dataset(pa.Table.from_batches([batch])).to_table(columns={"v": value}).column(0)
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
    if callable(value):
        result = value(batch)
        if isinstance(result, pa.ChunkedArray):
            return result.combine_chunks()
        if isinstance(result, pa.Array | pa.Scalar):
            return result
        return pa.scalar(result)
    return value if isinstance(value, pa.Scalar) else pa.scalar(value)


def _new_column(name: str, current: pa.Array, value: pa.Array | pa.Scalar, mask: pa.Array) -> pa.Array:
    target = current.type
    try:
        if isinstance(value, pa.Scalar):
            value = value.cast(target) if value.type != target else value
            if not value.is_valid:
                value = pa.scalar(None, type=target)
        elif value.type != target:
            value = pc.cast(value, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(
            f"cannot set column {name!r} ({target}) to a value of type {value.type}: {e}",
            column=name,
        ) from None
    if isinstance(value, pa.Array) and len(value) != len(current):
        raise ValidationError(
            f"the new values of column {name!r} have {len(value)} rows for a batch of {len(current)}",
            column=name,
        )
    return pc.if_else(mask, value, current)


def apply_assignments(
    batch: pa.RecordBatch, mask: np.ndarray[Any, np.dtype[np.bool_]], assignments: Mapping[str, Assignment]
) -> pa.RecordBatch:
    """``batch`` with the assigned columns replaced where ``mask`` is true; every value is
    computed from the batch as it was (``a = b, b = a`` swaps)."""
    arrow_mask = pa.array(mask)
    columns = list(batch.columns)
    for name, value in assignments.items():
        i = batch.schema.get_field_index(name)
        columns[i] = _new_column(name, batch.column(i), _evaluate(value, batch), arrow_mask)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def update_rows(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    where: BooleanExpression,
    assignments: Mapping[str, Assignment],
    mode: str,
) -> UpdateChanges:
    """Produce (not commit) the files that give the rows matching ``where`` their new values.
    On error, the files written so far are deleted."""
    from icefloe.scan.planner import plan_files

    changes = UpdateChanges()
    if snapshot is None:
        return changes
    schema = metadata.schema()
    matcher = FilterMatcher(schema, where)
    name_mapping = metadata.properties.get("schema.name-mapping.default")
    try:
        tasks = [replace(t, residual=where) for t in plan_files(io, metadata, snapshot, where)]
        if mode == MERGE_ON_READ:

            def updated() -> Iterator[pa.RecordBatch]:
                for task in tasks:
                    yield from _merge_on_read(io, metadata, task, assignments, name_mapping, changes)

            changes.added.extend(_write(io, metadata, updated()))
            if changes.dv_targets:
                from icefloe.arrow.deletion_vectors import write_deletion_vectors

                dvs = write_deletion_vectors(io, metadata, changes.dv_targets)
                changes.added_deletes.extend(dvs.added)
                changes.removed_deletes.extend(dvs.rewritten)
        else:
            for task in tasks:
                _copy_on_write(io, metadata, task, matcher, assignments, name_mapping, changes)
    except BaseException:
        changes.discard(io)
        raise
    return changes


def _write(
    io: FileIO, metadata: TableMetadata, batches: Iterator[pa.RecordBatch], spec_id: int | None = None
) -> list[DataFile]:
    from icefloe.arrow.writer import write_data_files

    spec = None if spec_id is None else metadata.spec_by_id(spec_id)
    # v3: with _row_id and _last_updated_sequence_number (row lineage) when the rows carry them
    return write_data_files(io, metadata, batches, spec=spec, schema=lineage_schema(metadata))


def _merge_on_read(
    io: FileIO,
    metadata: TableMetadata,
    task: FileScanTask,
    assignments: Mapping[str, Assignment],
    name_mapping: str | None,
    changes: UpdateChanges,
) -> Iterator[pa.RecordBatch]:
    """The matching rows of ``task`` (its residual is the update's filter) with their new values;
    once they are all read, their positions go to a position delete file."""
    from icefloe.arrow.deletes import write_position_deletes

    schema = metadata.schema()
    # v3: the updated rows keep their _row_id; a null _last_updated_sequence_number inherits
    # this commit's sequence number
    read_schema = lineage_schema(metadata)
    parts: list[np.ndarray[Any, np.dtype[np.int64]]] = []
    for batch, positions in read_with_positions(io, task, read_schema, schema, name_mapping=name_mapping):
        parts.append(positions)
        yield mark_updated(apply_assignments(batch, np.ones(batch.num_rows, dtype=np.bool_), assignments))
    if not parts:
        return
    positions = np.concatenate(parts)
    f = task.file
    changes.referenced.add(f.file_path)
    changes.rows_updated += int(positions.size)
    if metadata.format_version >= 3:
        # deletion vectors: one Puffin file for all the data files, written after the rows
        changes.dv_targets.append(DVTarget(f, positions, task.delete_files))
        return
    changes.added_deletes.extend(
        write_position_deletes(
            io, metadata, {f.file_path: positions}, spec_id=f.spec_id, partition=f.partition
        )
    )


def _copy_on_write(
    io: FileIO,
    metadata: TableMetadata,
    task: FileScanTask,
    matcher: FilterMatcher,
    assignments: Mapping[str, Assignment],
    name_mapping: str | None,
    changes: UpdateChanges,
) -> None:
    """Rewrite ``task``'s file when one of its live rows matches: the file is read twice (first
    only the filter's columns), so that files without a match cost no write."""
    schema = metadata.schema()
    matching = read_with_positions(io, task, matcher.read_schema, schema, name_mapping=name_mapping)
    try:
        found = next(matching, None) is not None
    finally:
        matching.close()
    if not found:
        return
    count = [0]

    # v3: every row keeps its _row_id; the updated ones get a null _last_updated_sequence_number
    read_schema = lineage_schema(metadata)

    def rows() -> Iterator[pa.RecordBatch]:
        for batch, _ in read_with_positions(
            io, task, read_schema, schema, name_mapping=name_mapping, apply_residual=False
        ):
            mask = matcher.matches(batch)
            n = int(mask.sum())
            count[0] += n
            yield mark_updated(apply_assignments(batch, mask, assignments), mask) if n else batch

    changes.added.extend(_write(io, metadata, rows(), task.file.spec_id))
    changes.removed.append(task.file)
    changes.rows_updated += count[0]
