"""Reading changelog tasks, and the changelog's post-processing (carry-overs, update images, net
changes) the way Spark's ``create_changelog_view`` procedure does it.

A task's data file is read once, in file order, without deletes; each batch is masked twice (the
rows live before the snapshot and the rows live after it), which gives its DELETEs and INSERTs::

    file rows ─▶ keep_before = deletes_before.keep_mask   (all False when the file is new)
              ─▶ keep_after  = deletes_after.keep_mask    (all False when the file was removed)
              ─▶ DELETE: keep_before & ~keep_after     INSERT: keep_after & ~keep_before
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from icefloe.arrow.apply_deletes import DeleteFilter
from icefloe.arrow.expression import arrow_mask
from icefloe.arrow.reader import read_task, to_table_layout
from icefloe.arrow.schema import schema_to_arrow
from icefloe.errors import ValidationError
from icefloe.expressions import AlwaysTrue, bind
from icefloe.expressions.visitors.referenced_fields import referenced_field_ids
from icefloe.scan.incremental import CHANGE_DELETE, CHANGE_INSERT
from icefloe.scan.task import FileScanTask

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.scan.incremental import ChangelogTask
    from icefloe.spec.schema import Schema

__all__ = [
    "CHANGE_ORDINAL",
    "CHANGE_TYPE",
    "COMMIT_SNAPSHOT_ID",
    "UPDATE_AFTER",
    "UPDATE_BEFORE",
    "changelog_arrow_schema",
    "finish_changelog",
    "read_changelog_task",
]

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
UPDATE_BEFORE = "UPDATE_BEFORE"
UPDATE_AFTER = "UPDATE_AFTER"

_BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def changelog_arrow_schema(projected: Schema) -> pa.Schema:
    base = schema_to_arrow(projected)
    return pa.schema(
        [
            *base,
            pa.field(CHANGE_TYPE, pa.string(), nullable=False),
            pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
            pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
        ]
    )


def _filter(io: FileIO, task: ChangelogTask, deletes: Sequence[Any] | None, schema: Schema) -> Any:
    if deletes is None:
        return None
    f = DeleteFilter(io, task.file, list(deletes), schema)
    return None if f.is_noop() else f


def read_changelog_task(
    io: FileIO,
    task: ChangelogTask,
    projected: Schema,
    table_schema: Schema,
    case_sensitive: bool = True,
    *,
    name_mapping: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """The changed rows of ``task`` as batches of ``projected`` plus the changelog columns."""
    before = _filter(io, task, task.deletes_before, table_schema)
    after = _filter(io, task, task.deletes_after, table_schema)
    residual = (
        None if isinstance(task.residual, AlwaysTrue) else bind(table_schema, task.residual, case_sensitive)
    )
    ids = set(projected.field_ids())
    source = table_schema  # plus equality columns dropped since their deletes were written
    for flt in (before, after):
        if flt is not None:
            ids |= flt.equality_field_ids
            source = flt.extend(source)
    if residual is not None:
        ids |= referenced_field_ids(residual)
    read_schema = source.select_ids(ids) if ids != projected.field_ids() else projected
    mask_fn = arrow_mask(residual, read_schema) if residual is not None else None
    out_schema = changelog_arrow_schema(projected)
    projected_arrow = schema_to_arrow(projected)
    first_row = 0
    plain = FileScanTask(task.file, AlwaysTrue())
    for batch in read_task(io, plain, read_schema, source, case_sensitive, name_mapping=name_mapping):
        n = batch.num_rows
        keep_before = _keep(before, task.deletes_before is not None, batch, read_schema, first_row)
        keep_after = _keep(after, task.deletes_after is not None, batch, read_schema, first_row)
        first_row += n
        selected: _BoolArray = np.ones(n, dtype=np.bool_)
        if mask_fn is not None:
            selected = np.asarray(mask_fn(batch).to_numpy(zero_copy_only=False), dtype=np.bool_)
        if read_schema is not projected:
            batch = to_table_layout(batch, projected, projected_arrow)
        for change, mask in (
            (CHANGE_DELETE, keep_before & ~keep_after & selected),
            (CHANGE_INSERT, keep_after & ~keep_before & selected),
        ):
            if not mask.any():
                continue
            rows = batch.filter(pa.array(mask))
            m = rows.num_rows
            yield pa.RecordBatch.from_arrays(
                [
                    *rows.columns,
                    pa.array([change] * m, pa.string()),
                    pa.array(np.full(m, task.change_ordinal, dtype=np.int32)),
                    pa.array(np.full(m, task.commit_snapshot_id, dtype=np.int64)),
                ],
                schema=out_schema,
            )


def _keep(
    flt: DeleteFilter | None, live: bool, batch: pa.RecordBatch, schema: Schema, first_row: int
) -> _BoolArray:
    n = batch.num_rows
    out: _BoolArray
    if not live:
        out = np.zeros(n, dtype=np.bool_)
        return out
    mask = flt.keep_mask(batch, schema, first_row) if flt is not None else None
    out = np.ones(n, dtype=np.bool_) if mask is None else mask
    return out


# --------------------------------------------------------------------------- post-processing


def _key(values: Sequence[Any]) -> str:
    return repr(values)


def finish_changelog(
    table: pa.Table,
    data_columns: Sequence[str],
    *,
    identifier_columns: Sequence[str] | None,
    remove_carryovers: bool = True,
    net_changes: bool = False,
) -> pa.Table:
    """Spark's changelog view over the raw changed rows.

    - carry-overs (a row deleted and inserted unchanged by one snapshot, as copy-on-write rewrites
      do) are dropped;
    - with ``identifier_columns``, a DELETE and an INSERT of one key in one snapshot become
      UPDATE_BEFORE and UPDATE_AFTER;
    - ``net_changes`` keeps only the net effect over the whole range (changes that cancel across
      snapshots are dropped; no update images)."""
    if net_changes and identifier_columns:
        raise ValidationError(
            "net changes cannot be combined with update images (identifier columns)",
            hint="ask for net_changes=True without identifier_columns / compute_updates",
        )
    if table.num_rows == 0 or not (remove_carryovers or identifier_columns or net_changes):
        return table
    rows = table.to_pylist()
    data_idx = list(data_columns)

    def data_key(r: dict[str, Any]) -> str:
        return _key([r[c] for c in data_idx])

    keep = [True] * len(rows)
    if net_changes:
        # Per identical row over the whole range: inserts and deletes cancel pairwise.
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(data_key(r), []).append(i)
        for members in groups.values():
            _cancel(rows, members, keep)
        return _take(table, keep)
    if remove_carryovers:
        groups = {}
        for i, r in enumerate(rows):
            groups.setdefault(f"{r[CHANGE_ORDINAL]}|{data_key(r)}", []).append(i)
        for members in groups.values():
            _cancel(rows, members, keep)
    if not identifier_columns:
        return _take(table, keep)
    types = [r[CHANGE_TYPE] for r in rows]
    by_id: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if keep[i]:
            by_id.setdefault(f"{r[CHANGE_ORDINAL]}|{_key([r[c] for c in identifier_columns])}", []).append(i)
    for members in by_id.values():
        deletes = [i for i in members if types[i] == CHANGE_DELETE]
        inserts = [i for i in members if types[i] == CHANGE_INSERT]
        if len(deletes) > 1 or len(inserts) > 1:
            r = rows[members[0]]
            raise ValidationError(
                f"cannot compute update images: several rows with identifier "
                f"{ {c: r[c] for c in identifier_columns} } changed in snapshot {r[COMMIT_SNAPSHOT_ID]}",
                hint="the identifier columns must identify one row; choose others or read without updates",
            )
        if deletes and inserts:
            types[deletes[0]] = UPDATE_BEFORE
            types[inserts[0]] = UPDATE_AFTER
    out = table.set_column(
        table.schema.get_field_index(CHANGE_TYPE),
        table.schema.field(CHANGE_TYPE),
        pa.array(types, pa.string()),
    )
    return _take(out, keep)


def _cancel(rows: list[dict[str, Any]], members: list[int], keep: list[bool]) -> None:
    deletes = [i for i in members if rows[i][CHANGE_TYPE] == CHANGE_DELETE]
    inserts = [i for i in members if rows[i][CHANGE_TYPE] == CHANGE_INSERT]
    for d, ins in zip(deletes, inserts, strict=False):
        keep[d] = False
        keep[ins] = False


def _take(table: pa.Table, keep: list[bool]) -> pa.Table:
    return table if all(keep) else table.filter(pa.array(keep))
