"""Keeping row lineage (format v3) through the Arrow rewrites of rows.

A rewrite of rows that already exist (copy-on-write, compaction, a merge-on-read update) reads
them with ``_row_id`` and ``_last_updated_sequence_number`` (inherited values filled in by
:func:`icefloe.arrow.reader.inherit_lineage`) and writes both into the new data files, with the
reserved field ids, as the spec asks::

    carried over unchanged    _row_id kept,  _last_updated_sequence_number kept
    updated                   _row_id kept,  _last_updated_sequence_number null
                                             (inherits the new file's data sequence number)
    inserted                  both null      (_row_id = the new file's first_row_id + position)

Tables below v3 have no lineage: the helpers then leave schemas and batches as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.scan.row_lineage import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    with_lineage,
)

if TYPE_CHECKING:
    from icefloe.spec.schema import Schema
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["keeps_lineage", "lineage_schema", "mark_updated", "strip_lineage"]

_BOTH = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)


def keeps_lineage(metadata: TableMetadata) -> bool:
    """Whether rewrites of this table carry the lineage columns (format v3 and later)."""
    return metadata.format_version >= 3


def lineage_schema(metadata: TableMetadata, schema: Schema | None = None) -> Schema:
    """The schema rows are read and rewritten with: ``schema`` (the table's current one by
    default) plus both lineage columns on v3 tables."""
    base = schema if schema is not None else metadata.schema()
    return with_lineage(base, _BOTH) if keeps_lineage(metadata) else base


def mark_updated(
    batch: pa.RecordBatch, mask: np.ndarray[Any, np.dtype[np.bool_]] | None = None
) -> pa.RecordBatch:
    """``batch`` with ``_last_updated_sequence_number`` null where ``mask`` is true (every row
    without a mask): those rows change in this commit and inherit its sequence number."""
    i = batch.schema.get_field_index(LAST_UPDATED_SEQUENCE_NUMBER)
    if i < 0:
        return batch
    column = batch.column(i)
    if mask is None:
        new = pa.nulls(batch.num_rows, pa.int64())
    else:
        new = pc.if_else(pa.array(mask), pa.scalar(None, pa.int64()), column)
    return batch.set_column(i, batch.schema.field(i), new)


def strip_lineage(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` without the lineage columns (for code that expects only the table's columns)."""
    drop = [n for n in _BOTH if batch.schema.get_field_index(n) >= 0]
    return batch.drop_columns(drop) if drop else batch
