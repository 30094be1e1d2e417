"""Rows of a position delete file as the ``position_deletes`` metadata table shows them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.arrow.apply_deletes import _check_parquet, _check_position_types, _position_columns
from icefloe.arrow.schema import field_id_of
from icefloe.io._decode import PARQUET_READ, POSITION_DELETE_FILE, decoding

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.manifest import DataFile
    from icefloe.spec.schema import Schema

__all__ = ["read_position_delete_file"]

_ROW_ID = 2147483544


def read_position_delete_file(
    io: FileIO, delete_file: DataFile, table_schema: Schema, out_schema: pa.Schema, extra: Mapping[str, Any]
) -> pa.Table:
    """``file_path``, ``pos`` (and ``row`` when the file stores deleted rows) of every row of
    ``delete_file``, plus the constant columns ``extra``, laid out as ``out_schema``."""
    from icefloe.arrow.reader import to_table_layout

    _check_parquet(delete_file)
    path = delete_file.file_path
    with decoding(path, POSITION_DELETE_FILE), io.new_input(path).open() as stream:
        pf = pq.ParquetFile(stream, **PARQUET_READ)
        path_col, pos_col = _position_columns(pf, delete_file)
        row_col = next((f.name for f in pf.schema_arrow if field_id_of(f) == _ROW_ID), None)
        table = pf.read(columns=[c for c in (path_col, pos_col, row_col) if c is not None])
        _check_position_types(table, delete_file)
    n = table.num_rows
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        "file_path": table.column(path_col).cast(pa.string()),
        "pos": table.column(pos_col).cast(pa.int64()),
    }
    row_type = out_schema.field("row").type
    if row_col is not None and n:
        rows = table.column(row_col).combine_chunks()
        batch = pa.RecordBatch.from_struct_array(rows)
        laid_out = to_table_layout(batch, table_schema)
        columns["row"] = pa.StructArray.from_arrays(laid_out.columns, fields=list(row_type))
    else:
        columns["row"] = pa.nulls(n, row_type)
    for name, value in extra.items():
        columns[name] = pa.array([value] * n, out_schema.field(name).type)
    return pa.table([columns[f.name] for f in out_schema], schema=out_schema)
