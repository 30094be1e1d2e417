"""Dangling delete files: delete files that no live data file can need any more, found from
metadata alone and removed in one ``replace`` commit (Java's ``RemoveDanglingDeletesSparkAction``,
run by ``rewrite_data_files`` with ``remove-dangling-deletes=true``).

A delete file applies only to data files whose *data* sequence number is not newer than its own
(position deletes: ``data_seq <= delete_seq``; equality deletes: ``data_seq < delete_seq``), in
its spec and partition (equality deletes of an unpartitioned spec: in every partition). So per
(spec, partition) the smallest data sequence number of the live data files decides::

    position delete   dangling when data_seq_min > delete_seq, or no live data file in its
                      partition, or it names one data file (file-scoped) that is not live
    equality delete   dangling when data_seq_min >= delete_seq, or no live data file in its
                      partition (a global one: in the whole table)

Compaction keeps the starting snapshot's sequence number, so the deletes committed before it
become dangling once every older file of their partition has been rewritten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.manifest import DataFile, DataFileContent, ManifestContent, read_manifest, read_manifest_list
from icefloe.scan.delete_index import referenced_data_file

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table

__all__ = ["find_dangling_deletes", "remove_dangling_deletes"]


def find_dangling_deletes(io: FileIO, metadata: TableMetadata, snapshot: Snapshot | None) -> list[DataFile]:
    """The live delete files of ``snapshot`` that apply to no live data file (module docstring)."""
    if snapshot is None:
        return []
    manifests = read_manifest_list(io, snapshot.manifest_list)
    min_seq: dict[tuple[int, tuple[Any, ...]], int] = {}
    live_paths: set[str] = set()
    table_min: int | None = None
    for m in manifests:
        if m.content != ManifestContent.DATA:
            continue
        for e in read_manifest(io, m, discard_deleted=True):
            seq = e.sequence_number if e.sequence_number is not None else 0
            key = (e.data_file.spec_id, tuple(e.data_file.partition))
            if key not in min_seq or seq < min_seq[key]:
                min_seq[key] = seq
            table_min = seq if table_min is None or seq < table_min else table_min
            live_paths.add(e.data_file.file_path)
    dangling: list[DataFile] = []
    for m in manifests:
        if m.content != ManifestContent.DELETES:
            continue
        for e in read_manifest(io, m, discard_deleted=True):
            d = e.data_file
            seq = e.sequence_number if e.sequence_number is not None else 0
            if d.content == DataFileContent.POSITION_DELETES:
                ref = referenced_data_file(d)
                lowest = min_seq.get((d.spec_id, tuple(d.partition)))
                if (ref is not None and ref not in live_paths) or lowest is None or seq < lowest:
                    dangling.append(d)
            elif d.content == DataFileContent.EQUALITY_DELETES:
                if metadata.spec_by_id(d.spec_id).is_unpartitioned():
                    lowest = table_min
                else:
                    lowest = min_seq.get((d.spec_id, tuple(d.partition)))
                if lowest is None or seq <= lowest:
                    dangling.append(d)
    return dangling


def remove_dangling_deletes(table: Table) -> tuple[int, int | None]:
    """Remove the table's dangling delete files in one ``replace`` commit (validated: they must
    still be in the table). Returns how many were removed and the new snapshot's id (None when
    there was nothing to remove)."""
    from icefloe.maintenance._execution import commit_producer
    from icefloe.transaction.rewrite_files import RewriteFiles

    table.refresh()
    found = find_dangling_deletes(table.io, table.metadata, table.metadata.current_snapshot())
    if not found:
        return 0, None
    producer = RewriteFiles(table.io, table.metadata, remove=[], add=[], remove_deletes=found)
    return len(found), commit_producer(table, producer)
