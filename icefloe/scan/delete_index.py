"""Which delete files apply to a data file: the spec's scoping rules, indexed for planning.

A delete file applies to a data file when (sequence numbers are *data* sequence numbers)::

    position delete   data_seq <= delete_seq, and either its referenced data file is this one
                      (``referenced_data_file``, or file_path bounds naming one file) or it has
                      the data file's spec id and partition (pruned by its file_path bounds)
    deletion vector   data_seq <= delete_seq and its referenced data file is this one
    equality delete   data_seq <  delete_seq, and either the same spec id and partition or a
                      delete of an unpartitioned spec (global); pruned where the equality
                      columns' bounds and null counts prove no value can match

Files are grouped by referenced path and by (spec id, partition), each group sorted by sequence
number, so a lookup is a dict access plus a bisect.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.errors import IcefloeError, InvalidMetadataError
from icefloe.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import PrimitiveType
from icefloe.spec.values import from_bytes

__all__ = ["DeleteFileIndex", "referenced_data_file"]

_PATH_ID = 2147483546


def referenced_data_file(delete_file: DataFile) -> str | None:
    """The one data file a position delete file (or DV) applies to, when that is known: its
    ``referenced_data_file``, else equal lower and upper ``file_path`` bounds (Java's rule)."""
    if delete_file.content != DataFileContent.POSITION_DELETES:
        return None
    if delete_file.referenced_data_file is not None:
        return delete_file.referenced_data_file
    lower = (delete_file.lower_bounds or {}).get(_PATH_ID)
    upper = (delete_file.upper_bounds or {}).get(_PATH_ID)
    if lower is not None and lower == upper:
        try:
            return lower.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


class _Group:
    """Delete files sorted by data sequence number."""

    __slots__ = ("files", "seqs")

    def __init__(self, items: list[tuple[int, DataFile]]) -> None:
        items.sort(key=lambda x: x[0])
        self.seqs = [s for s, _ in items]
        self.files = [f for _, f in items]

    def at_or_after(self, seq: int) -> list[DataFile]:
        return self.files[bisect.bisect_left(self.seqs, seq) :]

    def after(self, seq: int) -> list[DataFile]:
        return self.files[bisect.bisect_right(self.seqs, seq) :]


def _partition_key(spec_id: int, partition: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]]:
    return spec_id, tuple(partition)


class DeleteFileIndex:
    """Built from the live entries of a snapshot's delete manifests (after sequence-number
    inheritance); ``for_data_file`` answers per data file."""

    def __init__(
        self,
        entries: Iterable[ManifestEntry],
        specs: Mapping[int, PartitionSpec],
        schema: Schema | None = None,
    ) -> None:
        self._schema = schema
        by_path: dict[str, list[tuple[int, DataFile]]] = {}
        pos_by_partition: dict[tuple[int, tuple[Any, ...]], list[tuple[int, DataFile]]] = {}
        eq_by_partition: dict[tuple[int, tuple[Any, ...]], list[tuple[int, DataFile]]] = {}
        eq_global: list[tuple[int, DataFile]] = []
        self.has_deletion_vectors = False
        count = 0
        for e in entries:
            if not e.is_live:
                continue
            f = e.data_file
            seq = e.sequence_number
            if seq is None:
                raise InvalidMetadataError(
                    f"delete file {f.file_path} has no data sequence number",
                    hint="read manifests with read_manifest, which applies sequence-number inheritance",
                )
            count += 1
            if f.content == DataFileContent.POSITION_DELETES:
                if f.file_format == FileFormat.PUFFIN:
                    self.has_deletion_vectors = True
                ref = referenced_data_file(f)
                if ref is not None:
                    by_path.setdefault(ref, []).append((seq, f))
                elif f.file_format == FileFormat.PUFFIN:
                    raise InvalidMetadataError(
                        f"deletion vector {f.file_path} has no referenced_data_file",
                        hint="deletion vectors must name the data file they apply to",
                    )
                else:
                    pos_by_partition.setdefault(_partition_key(f.spec_id, f.partition), []).append((seq, f))
            elif f.content == DataFileContent.EQUALITY_DELETES:
                spec = specs.get(f.spec_id)
                if spec is None:
                    raise InvalidMetadataError(
                        f"equality delete file {f.file_path} has unknown partition spec {f.spec_id}"
                    )
                if not f.equality_ids:
                    raise InvalidMetadataError(
                        f"equality delete file {f.file_path} has no equality_ids",
                        hint="equality delete files must list the field ids they compare",
                    )
                if spec.is_unpartitioned():
                    eq_global.append((seq, f))
                else:
                    eq_by_partition.setdefault(_partition_key(f.spec_id, f.partition), []).append((seq, f))
            else:
                raise InvalidMetadataError(f"{f.file_path} in a delete manifest is a data file")
        self._by_path = {k: _Group(v) for k, v in by_path.items()}
        self._pos_by_partition = {k: _Group(v) for k, v in pos_by_partition.items()}
        self._eq_by_partition = {k: _Group(v) for k, v in eq_by_partition.items()}
        self._eq_global = _Group(eq_global)
        self._count = count

    def __len__(self) -> int:
        return self._count

    def is_empty(self) -> bool:
        return self._count == 0

    def for_data_file(self, data_sequence_number: int, data_file: DataFile) -> tuple[DataFile, ...]:
        """The delete files that apply to ``data_file`` committed with ``data_sequence_number``:
        position deletes (and deletion vectors) first, then equality deletes."""
        if self._count == 0:
            return ()
        seq = data_sequence_number
        path = data_file.file_path
        out: list[DataFile] = []
        group = self._by_path.get(path)
        if group is not None:
            out.extend(group.at_or_after(seq))
        key = _partition_key(data_file.spec_id, data_file.partition)
        group = self._pos_by_partition.get(key)
        if group is not None:
            out.extend(d for d in group.at_or_after(seq) if _path_in_bounds(d, path))
        eq: list[DataFile] = []
        group = self._eq_by_partition.get(key)
        if group is not None:
            eq.extend(group.after(seq))
        eq.extend(self._eq_global.after(seq))
        out.extend(d for d in eq if self._equality_may_match(d, data_file))
        return tuple(out)

    def _equality_may_match(self, delete: DataFile, data: DataFile) -> bool:
        """False only when the metrics prove no delete row can equal a data row."""
        schema = self._schema
        if schema is None:
            return True
        for fid in delete.equality_ids or ():
            field = schema.find_field_or_none(fid)
            if field is None or not isinstance(field.field_type, PrimitiveType):
                continue
            data_nulls = _count(data.null_value_counts, fid)
            delete_nulls = _count(delete.null_value_counts, fid)
            if (data_nulls is None or data_nulls > 0) and (delete_nulls is None or delete_nulls > 0):
                continue  # null = null may match
            # Any match needs a non-null value on both sides.
            if _all_null(data, fid) or _all_null(delete, fid):
                return False
            try:
                if not _ranges_overlap(field.field_type, data, delete, fid):
                    return False
            except (IcefloeError, ValueError, TypeError):
                continue  # bounds written for an older type of the column: no pruning
        return True


def _count(counts: dict[int, int] | None, fid: int) -> int | None:
    return None if counts is None else counts.get(fid)


def _all_null(f: DataFile, fid: int) -> bool:
    nulls = _count(f.null_value_counts, fid)
    values = _count(f.value_counts, fid)
    return nulls is not None and values is not None and nulls == values


def _ranges_overlap(t: PrimitiveType, a: DataFile, b: DataFile, fid: int) -> bool:
    a_lo = (a.lower_bounds or {}).get(fid)
    a_hi = (a.upper_bounds or {}).get(fid)
    b_lo = (b.lower_bounds or {}).get(fid)
    b_hi = (b.upper_bounds or {}).get(fid)
    if a_hi is not None and b_lo is not None and from_bytes(t, a_hi) < from_bytes(t, b_lo):
        return False
    return not (b_hi is not None and a_lo is not None and from_bytes(t, b_hi) < from_bytes(t, a_lo))


def _path_in_bounds(delete: DataFile, path: str) -> bool:
    """File-path bounds are UTF-8 bytes; byte order equals code-point order, as Java compares."""
    lower = (delete.lower_bounds or {}).get(_PATH_ID)
    upper = (delete.upper_bounds or {}).get(_PATH_ID)
    if lower is None and upper is None:
        return True
    raw = path.encode("utf-8")
    if lower is not None and raw < lower:
        return False
    return not (upper is not None and raw > upper)
