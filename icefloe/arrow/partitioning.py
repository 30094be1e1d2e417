"""Splitting a batch into groups of rows that share a partition tuple, vectorized.

Each partition field's transform runs once over the whole source column
(:func:`icefloe.arrow.transforms.transform_arrow`); rows are then ordered by a combined group code
and cut into runs. Only the distinct keys become Python values (the internal representation of
the architecture notes); rows never do.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import PartitionSpecError
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import IcebergType, StructType

__all__ = ["partition_batch", "source_column"]


def source_column(batch: pa.RecordBatch, schema: Schema, field_id: int) -> tuple[pa.Array, IcebergType]:
    """The column of ``field_id`` (possibly nested in structs) with parents' nulls merged in."""
    path: list[int] = [field_id]
    pid = schema.parent_id(field_id)
    while pid is not None:
        path.append(pid)
        pid = schema.parent_id(pid)
    path.reverse()
    fields = schema.as_struct()
    arr: pa.Array | None = None
    for fid in path:
        if not isinstance(fields, StructType):
            raise PartitionSpecError(
                f"partition source column {schema.column_name(field_id)!r} is inside a list or map"
            )
        index = next(i for i, f in enumerate(fields.fields) if f.field_id == fid)
        arr = batch.column(index) if arr is None else arr.flatten()[index]
        fields = fields.fields[index].field_type  # type: ignore[assignment]
    assert arr is not None
    return arr, schema.find_type(field_id)


def _to_python(arr: pa.Array) -> list[object]:
    """Distinct transformed keys as internal Python values (dates/times/timestamps as ints)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        import uuid

        return [None if b is None else uuid.UUID(bytes=b) for b in arr.storage.to_pylist()]
    if pa.types.is_date32(arr.type):
        return arr.cast(pa.int32()).to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_temporal(arr.type):
        return arr.cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]
    return arr.to_pylist()  # type: ignore[no-any-return]


def partition_batch(
    batch: pa.RecordBatch, schema: Schema, spec: PartitionSpec
) -> Iterator[tuple[tuple[object, ...], pa.RecordBatch]]:
    """Yield ``(partition tuple, rows)`` for each distinct partition tuple in ``batch``."""
    if not spec.fields:
        yield (), batch
        return
    from icefloe.arrow.transforms import transform_arrow

    n = batch.num_rows
    keys: list[pa.Array] = []
    codes = np.zeros(n, dtype=np.int64)
    for pf in spec.fields:
        source, source_type = source_column(batch, schema, pf.source_id)
        transformed = transform_arrow(pf.transform, source_type, source)
        if isinstance(transformed, pa.ChunkedArray):
            transformed = transformed.combine_chunks()
        keys.append(transformed)
        enc_input = transformed.storage if isinstance(transformed.type, pa.BaseExtensionType) else transformed
        encoded = pc.dictionary_encode(enc_input, null_encoding="encode")
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        radix = len(encoded.dictionary)
        # Re-number the combined codes densely when they could overflow.
        if radix and codes.max(initial=0) > (2**62) // max(radix, 1):
            _, codes = np.unique(codes, return_inverse=True)
        codes = codes * max(radix, 1) + indices
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else np.array([], int)
    bounds = np.r_[starts, n]
    first_rows = pa.array(order[starts])
    key_values = [_to_python(k.take(first_rows)) for k in keys]
    ordered = batch.take(pa.array(order)) if len(starts) > 1 else batch
    for g in range(len(starts)):
        tup = tuple(kv[g] for kv in key_values)
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        yield tup, ordered.slice(lo, hi - lo)
