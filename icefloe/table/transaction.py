"""Transactions: several changes to one table, committed atomically with retries.

Changes are queued; nothing is visible until :meth:`Transaction.commit`, which hands the queued
snapshot producers to the retry loop in :mod:`icefloe.transaction._commit`. A transaction used as a
context manager commits when the block ends without an exception and cleans up otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING

from icefloe.errors import UnsupportedFeatureError, ValidationError
from icefloe.spec.updates import MetadataUpdate, RemoveProperties, SetProperties
from icefloe.transaction._commit import CommitStats, commit_actions
from icefloe.transaction._producer import SnapshotProducer
from icefloe.transaction.fast_append import FastAppend

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.manifest import DataFile
    from icefloe.spec.snapshot import Snapshot
    from icefloe.table._table import Table

__all__ = ["Transaction"]


class Transaction:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._actions: list[SnapshotProducer] = []
        self._updates: list[MetadataUpdate] = []
        self._done = False
        self.stats = CommitStats()

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError("this transaction was already committed or abandoned")

    def _check_writable(self) -> None:
        if self._table.format_version < 2:
            raise UnsupportedFeatureError(
                f"table {self._table.name} is format version 1; icefloe writes format version 2 and 3",
                hint="upgrade the table to format version 2 (an Iceberg Java ALTER TABLE ... SET "
                "TBLPROPERTIES ('format-version'='2'), or icefloe's upgrade API when it lands)",
            )
        if self._table.format_version > 2:
            raise UnsupportedFeatureError(
                f"table {self._table.name} is format version {self._table.format_version}; "
                "icefloe writes format version 2 for now"
            )

    # ------------------------------------------------------------------ queued changes
    def append(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        snapshot_properties: dict[str, str] | None = None,
    ) -> list[DataFile]:
        """Write ``data`` as Parquet now and queue a fast append of the files."""
        from icefloe.arrow.writer import write_data_files

        self._check_open()
        self._check_writable()
        files = write_data_files(self._table.io, self._table.metadata, data)
        if files:
            self._actions.append(FastAppend(self._table.io, files, snapshot_properties=snapshot_properties))
        return files

    def append_files(
        self,
        files: Iterable[DataFile],
        snapshot_properties: dict[str, str] | None = None,
        *,
        delete_on_failure: bool = True,
    ) -> None:
        """Queue a fast append of data files written elsewhere (e.g. by Spark executors)."""
        self._check_open()
        self._check_writable()
        self._actions.append(
            FastAppend(
                self._table.io, files, owns_files=delete_on_failure, snapshot_properties=snapshot_properties
            )
        )

    def set_properties(self, **properties: str) -> None:
        self._check_open()
        self._updates.append(SetProperties(dict(properties)))

    def remove_properties(self, *keys: str) -> None:
        self._check_open()
        self._updates.append(RemoveProperties(list(keys)))

    # ------------------------------------------------------------------ outcome
    def commit(self) -> list[Snapshot]:
        """Commit every queued change atomically; returns the snapshots added (in order) and
        refreshes the table handle."""
        self._check_open()
        self._done = True
        if not self._actions and not self._updates:
            return []
        metadata, location = commit_actions(
            self._table.catalog,
            self._table.identifier,
            self._table.metadata,
            self._actions,
            extra_updates=self._updates,
            stats=self.stats,
        )
        self._table.metadata = metadata
        self._table.metadata_location = location
        return [a.committed_snapshot for a in self._actions if a.committed_snapshot is not None]

    def abandon(self) -> None:
        """Drop the queued changes and delete the files they wrote."""
        if not self._done:
            self._done = True
            for a in self._actions:
                a.cleanup(committed=False)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            if not self._done:
                self.commit()
        else:
            self.abandon()
