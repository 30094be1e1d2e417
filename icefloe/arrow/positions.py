"""Reading a scan task's live rows together with their positions in the data file.

Row-level changes (an update, Spark's DELETE / UPDATE / MERGE, the ``_pos`` metadata column) need
to know *where* each row they read sits in its data file, after the file's delete files have been
applied::

    task (whole file or a row-group range)
      -> first row of the range (the footer's row-group row counts; 0 for a whole file)
      -> every row of the range, deletes NOT applied (so the running offset is the position)
      -> keep = the delete files' mask (positions and equality deletes) & the task's residual
      -> (rows kept, their positions)

Memory stays at one batch, as in :func:`icefloe.arrow.reader.read_task`.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.arrow.apply_deletes import DeleteFilter
from icefloe.arrow.expression import arrow_mask
from icefloe.arrow.metrics import row_group_start
from icefloe.arrow.reader import read_task, to_table_layout
from icefloe.arrow.schema import schema_to_arrow
from icefloe.expressions import AlwaysFalse, AlwaysTrue, bind
from icefloe.expressions.visitors.referenced_fields import referenced_field_ids
from icefloe.io._decode import DATA_FILE, decoding
from icefloe.scan.row_lineage import LINEAGE_FIELD_IDS
from icefloe.scan.task import FileScanTask
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    from collections.abc import Sequence

    from icefloe.io import FileIO

__all__ = ["first_row_of_task", "read_with_positions"]


def first_row_of_task(io: FileIO, task: FileScanTask) -> int:
    """The position of the first row a (possibly split) task reads."""
    if task.start == 0:
        return 0
    path = task.file.file_path
    with decoding(path, DATA_FILE):
        stream = io.new_input(path).open()
    try:
        with decoding(path, DATA_FILE):
            meta = pq.ParquetFile(stream).metadata
        end = None if task.length is None else task.start + task.length
        row = 0
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            start = row_group_start(rg)
            if task.start <= start and (end is None or start < end):
                return row
            row += rg.num_rows
        return row
    finally:
        stream.close()


def read_with_positions(
    io: FileIO,
    task: FileScanTask,
    projected_schema: Schema,
    table_schema: Schema,
    *,
    name_mapping: str | Sequence[Any] | None = None,
    apply_deletes: bool = True,
    apply_residual: bool = True,
) -> Generator[tuple[pa.RecordBatch, np.ndarray[Any, np.dtype[np.int64]]], None, None]:
    """Batches of ``task``'s rows (as ``projected_schema``) that its delete files keep and its
    residual selects, each with the int64 positions of its rows in the data file."""
    residual = task.residual if apply_residual else AlwaysTrue()
    if isinstance(residual, AlwaysFalse):
        return
    bound = None if isinstance(residual, AlwaysTrue) or residual is None else bind(table_schema, residual)
    deletes = None
    if apply_deletes and task.delete_files:
        deletes = DeleteFilter(io, task.file, task.delete_files, table_schema)
        if deletes.is_noop():
            deletes = None
    extra: set[int] = set()
    if bound is not None:
        extra |= referenced_field_ids(bound)
    if deletes is not None:
        extra |= deletes.equality_field_ids
    extra -= projected_schema.field_ids()
    read_schema = projected_schema
    if extra:
        source = table_schema if deletes is None else deletes.schema
        read_schema = source.select_ids(projected_schema.field_ids() | extra)
        lineage = [f for f in projected_schema.fields if f.field_id in LINEAGE_FIELD_IDS]
        if lineage:  # metadata columns, not columns of the table schema
            read_schema = Schema(*read_schema.fields, *lineage)
    mask = None if bound is None else arrow_mask(bound, read_schema)
    projected_arrow = schema_to_arrow(projected_schema)
    bare = replace(task, residual=AlwaysTrue(), delete_files=())  # keeps the data sequence number
    position = first_row_of_task(io, task)
    for batch in read_task(io, bare, read_schema, table_schema, name_mapping=name_mapping):
        n = batch.num_rows
        positions = np.arange(position, position + n, dtype=np.int64)
        keep = None if deletes is None else deletes.keep_mask(batch, read_schema, position)
        position += n
        if mask is not None:
            selected = mask(batch).to_numpy(zero_copy_only=False)
            keep = selected if keep is None else keep & selected
        if keep is not None:
            if not keep.any():
                continue
            if not keep.all():
                batch = batch.filter(pa.array(keep))
                positions = positions[keep]
        if read_schema is not projected_schema:
            batch = to_table_layout(batch, projected_schema, projected_arrow)
        yield batch, positions
