"""Writing deletion vectors (format v3 merge-on-read deletes).

::

    {data file -> new positions, the delete files that applied to it when it was read}
      -> previous positions: its deletion vector and every position delete file (Parquet, also
         partition-scoped ones) that applied, read through the delete loader
      -> one bitmap per data file = new | previous
      -> one Puffin file holding the deletion vectors of all the data files
      -> DataFile(content=POSITION_DELETES, file_format=PUFFIN, referenced_data_file,
         content_offset, content_size_in_bytes; the data file's spec and partition)
      -> rewritten: the old deletion vector and the file-scoped position delete files of each data
         file; the commit removes them in the same snapshot (Iceberg Java's BaseDVFileWriter does
         the same). Partition-scoped position delete files stay: they still serve other data files,
         and readers ignore them for a data file that has a deletion vector.

A v3 table has at most one deletion vector per data file; the row delta's conflict check refuses
a commit when another one for the same data file was committed concurrently.
"""

from __future__ import annotations

import uuid as uuid_mod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from icefloe.arrow.deletes import _positions
from icefloe.arrow.writer import write_options
from icefloe.errors import UnsupportedFeatureError, ValidationError
from icefloe.io.puffin_writer import PuffinWriter
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.scan.delete_index import referenced_data_file

if TYPE_CHECKING:
    from icefloe.arrow.apply_deletes import DeleteLoader
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["DVTarget", "DVWriteResult", "write_deletion_vectors"]


@dataclass(frozen=True)
class DVTarget:
    """New deletes for one data file: its positions, and the delete files that applied to it
    when it was read (a scan task's ``delete_files``)."""

    data_file: DataFile
    positions: Any
    previous: Sequence[DataFile] = ()


@dataclass
class DVWriteResult:
    """Deletion vectors written (not committed) and the delete files they replace."""

    added: list[DataFile] = field(default_factory=list)
    rewritten: list[DataFile] = field(default_factory=list)

    @property
    def referenced(self) -> set[str]:
        return {f.referenced_data_file for f in self.added if f.referenced_data_file}


def puffin_location(metadata: TableMetadata, write_uuid: str | uuid_mod.UUID | None = None) -> str:
    """Java names DV files like data files, with a ``-deletes.puffin`` suffix, in the data
    directory (one file serves data files of any partition)."""
    options = write_options(metadata, None)
    return f"{options.data_path}/00000-0-{write_uuid or uuid_mod.uuid4()}-00001-deletes.puffin"


def write_deletion_vectors(
    io: FileIO,
    metadata: TableMetadata,
    targets: Iterable[DVTarget],
    *,
    loader: DeleteLoader | None = None,
    write_uuid: str | uuid_mod.UUID | None = None,
) -> DVWriteResult:
    """Write one Puffin file with a deletion vector per target data file (nothing for targets
    without positions). Each vector holds the new positions and every earlier delete of its data
    file; the result names the delete files the new vectors replace."""
    if metadata.format_version < 3:
        raise UnsupportedFeatureError(
            f"deletion vectors need a format version 3 table, this one is v{metadata.format_version}",
            hint="upgrade the table with table.upgrade_format_version(3), or write position deletes",
        )
    if loader is None:
        from icefloe.arrow.apply_deletes import DeleteLoader

        loader = DeleteLoader()
    result = DVWriteResult()
    merged: dict[str, tuple[DataFile, np.ndarray[Any, Any]]] = {}
    for t in targets:
        f = t.data_file
        path = f.file_path
        if f.content != DataFileContent.DATA:
            raise ValidationError(f"{path} is a delete file; deletion vectors reference data files")
        if path in merged:
            raise ValidationError(f"data file {path} is given twice", hint="pass its positions once")
        new = _positions(t.positions, path)
        if new.size == 0:
            continue
        if f.record_count is not None and int(new.max()) >= f.record_count:
            raise ValidationError(f"position {int(new.max())} is beyond the {f.record_count} rows of {path}")
        previous = [d for d in t.previous if d.content == DataFileContent.POSITION_DELETES]
        dvs = [d for d in previous if d.file_format == FileFormat.PUFFIN]
        if len(dvs) > 1:
            raise ValidationError(
                f"data file {path} has {len(dvs)} deletion vectors; format v3 allows one",
                hint="the table metadata is invalid; rewrite the deletes with Iceberg Java",
            )
        old = loader.positions(io, path, previous) if previous else None
        bitmap_positions = np.union1d(new, old) if old is not None and len(old) else new
        merged[path] = (f, bitmap_positions)
        result.rewritten.extend(
            d for d in previous if d.file_format == FileFormat.PUFFIN or referenced_data_file(d) == path
        )
    if not merged:
        return result
    writer = PuffinWriter(io, puffin_location(metadata, write_uuid))
    blobs = [(f, writer.add_deletion_vector(path, pos)) for path, (f, pos) in merged.items()]
    size = writer.finish()
    for f, blob in blobs:
        result.added.append(
            DataFile(
                content=DataFileContent.POSITION_DELETES,
                file_path=blob.path,
                file_format=FileFormat.PUFFIN,
                partition=tuple(f.partition),
                record_count=blob.cardinality,
                file_size_in_bytes=size,
                referenced_data_file=blob.referenced_data_file,
                content_offset=blob.offset,
                content_size_in_bytes=blob.length,
                spec_id=f.spec_id,
            )
        )
    # one delete file may be listed for several targets only if it is partition-scoped (kept)
    seen: set[tuple[str, int | None]] = set()
    unique = []
    for d in result.rewritten:
        key = (d.file_path, d.content_offset)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    result.rewritten = unique
    return result
