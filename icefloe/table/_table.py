"""`Table`: a thin handle on one table's metadata, its FileIO and the catalog it lives in.

It holds no logic of its own beyond delegation: scanning lives in :mod:`icefloe.table.scan`,
changes in :mod:`icefloe.table.transaction` and the snapshot producers of :mod:`icefloe.transaction`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, overload

from icefloe._progress import ProgressCallback, report, track_batches
from icefloe.expressions import BooleanExpression
from icefloe.spec.snapshot import MAIN_BRANCH

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.catalog import Catalog
    from icefloe.io import FileIO
    from icefloe.maintenance import TableMaintenance
    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot, SnapshotRef
    from icefloe.spec.sort_order import SortOrder
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table.changelog import ChangelogScan
    from icefloe.table.health import TableHealth
    from icefloe.table.incremental import IncrementalAppendScan
    from icefloe.table.inspect import InspectTable
    from icefloe.table.manage_snapshots import ManageSnapshots
    from icefloe.table.replace_sort_order import ReplaceSortOrder, SortTermLike
    from icefloe.table.scan import DataScan
    from icefloe.table.transaction import StatementInput, Transaction
    from icefloe.table.update_schema import UpdateSchema
    from icefloe.table.update_spec import UpdateSpec

__all__ = ["Table"]


class Table:
    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog

    # ------------------------------------------------------------------ views of the metadata
    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def format_version(self) -> int:
        return self.metadata.format_version

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        return self.metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        return list(self.metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        return self.metadata.snapshot_by_id(snapshot_id)

    def refs(self) -> dict[str, SnapshotRef]:
        return dict(self.metadata.refs)

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog (in place) and return self."""
        fresh = self.catalog.load_table(self.identifier)
        self.metadata = fresh.metadata
        self.metadata_location = fresh.metadata_location
        return self

    def upgrade_format_version(self, format_version: int) -> Table:
        """Upgrade the table to ``format_version`` (2 or 3; never down). v3 starts row lineage
        (``next-row-id``) and makes merge-on-read deletes write deletion vectors; existing
        position delete files keep working. Returns self, refreshed."""
        from icefloe.spec.metadata_builder import TableMetadataBuilder
        from icefloe.spec.updates import AssertTableUUID, UpgradeFormatVersion
        from icefloe.transaction._commit import commit_actions

        # checked here first, so a bad version fails before any commit
        TableMetadataBuilder.from_metadata(self.metadata).upgrade_format_version(format_version)
        if format_version == self.metadata.format_version:
            return self
        metadata, location = commit_actions(
            self.catalog,
            self.identifier,
            self.metadata,
            [],
            extra_updates=[UpgradeFormatVersion(format_version)],
            extra_requirements=[AssertTableUUID(self.metadata.table_uuid)],
        )
        self.metadata = metadata
        self.metadata_location = location
        return self

    # ------------------------------------------------------------------ reads
    def scan(
        self,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of_timestamp: Any = None,
        limit: int | None = None,
        options: dict[str, str] | None = None,
    ) -> DataScan:
        """A scan of one snapshot: the current one, ``snapshot_id``, the head of branch or tag
        ``ref``, or the one current at ``as_of_timestamp`` (epoch ms, datetime or ISO string)."""
        from icefloe.table.scan import DataScan

        return DataScan(
            self,
            row_filter=row_filter,
            selected_fields=tuple(selected_fields),
            case_sensitive=case_sensitive,
            snapshot_id=snapshot_id,
            ref=ref,
            as_of_timestamp=as_of_timestamp,
            limit=limit,
            options=options or {},
        )

    # ------------------------------------------------------------------ writes
    def transaction(self, branch: str = MAIN_BRANCH) -> Transaction:
        """Several changes committed atomically: ``with table.transaction() as tx: ...``; they go
        to ``branch`` unless a change names another one."""
        from icefloe.table.transaction import Transaction

        return Transaction(self, branch)

    def manage_snapshots(self) -> ManageSnapshots:
        """Branches, tags, rollback and cherry-pick, committed atomically when the block ends:
        ``with table.manage_snapshots() as ms: ms.create_tag("v1", sid)``."""
        from icefloe.table.manage_snapshots import ManageSnapshots

        return ManageSnapshots(self)

    @property
    def maintenance(self) -> TableMaintenance:
        """Compaction, delete-file and manifest rewrites, snapshot expiry and orphan-file removal:
        ``table.maintenance.expire_snapshots(older_than=...)`` (docs/maintenance.md)."""
        from icefloe.maintenance import TableMaintenance

        return TableMaintenance(self)

    def update_schema(
        self, *, case_sensitive: bool = True, allow_incompatible_changes: bool = False
    ) -> UpdateSchema:
        """Schema evolution, committed atomically when the block ends:
        ``with table.update_schema() as u: u.add_column("a.b", pa.int64())`` (docs/evolution.md)."""
        from icefloe.table.update_schema import UpdateSchema

        return UpdateSchema(
            self, case_sensitive=case_sensitive, allow_incompatible_changes=allow_incompatible_changes
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """Partition evolution, committed atomically when the block ends:
        ``with table.update_spec() as u: u.add_field("hour(ts)")`` (docs/evolution.md)."""
        from icefloe.table.update_spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    @overload
    def replace_sort_order(self, *, case_sensitive: bool = True) -> ReplaceSortOrder: ...
    @overload
    def replace_sort_order(
        self, term: SortTermLike, /, *terms: SortTermLike, case_sensitive: bool = True
    ) -> SortOrder: ...
    def replace_sort_order(
        self, *terms: SortTermLike, case_sensitive: bool = True
    ) -> ReplaceSortOrder | SortOrder:
        """The order writers sort data files by (docs/evolution.md, "Sort orders"). With terms
        (``"id"``, ``"day(ts) desc nulls last"``, or SortField objects) it commits at once and returns
        the order; without, it returns a builder that commits when its block ends:
        ``with table.replace_sort_order() as so: so.asc("id").desc("day(ts)")`` (no terms in
        the block, or ``table.replace_sort_order().commit()``: the unsorted order)."""
        from icefloe.table.replace_sort_order import replace_sort_order

        return replace_sort_order(self, terms, case_sensitive=case_sensitive)

    @property
    def inspect(self) -> InspectTable:
        """Metadata tables as Arrow tables: ``table.inspect.snapshots()``, ``.files()``, ..."""
        from icefloe.table.inspect import InspectTable

        return InspectTable(self)

    def health(self, **thresholds: Any) -> TableHealth:
        """A health check from metadata alone: file sizes, delete-file ratios, manifests, snapshot
        and metadata growth, partition skew, each finding with the maintenance call that fixes it
        (``icefloe health ns.t`` on the command line; thresholds:
        :class:`icefloe.table.health.Thresholds`)."""
        from icefloe.table.health import check_health

        return check_health(self, **thresholds)

    def incremental_append_scan(
        self, from_snapshot_id: int | None = None, to_snapshot_id: int | None = None, **kwargs: Any
    ) -> IncrementalAppendScan:
        """The rows appended after ``from_snapshot_id`` (exclusive; None: from the first snapshot)
        up to ``to_snapshot_id`` (inclusive; default the current snapshot)."""
        from icefloe.table.incremental import IncrementalAppendScan

        return IncrementalAppendScan(self, from_snapshot_id, to_snapshot_id, **kwargs)

    def changelog_scan(
        self, from_snapshot_id: int | None = None, to_snapshot_id: int | None = None, **kwargs: Any
    ) -> ChangelogScan:
        """Rows inserted and deleted by the snapshots after ``from_snapshot_id`` (exclusive) up to
        ``to_snapshot_id`` (inclusive), with ``_change_type``, ``_change_ordinal`` and
        ``_commit_snapshot_id``."""
        from icefloe.table.changelog import ChangelogScan

        return ChangelogScan(self, from_snapshot_id, to_snapshot_id, **kwargs)

    def append(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        schema_evolution: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Snapshot | None:
        """Append Arrow data as one new snapshot (a fast append) to ``branch``. Returns the
        snapshot, or None when there was no row to append. On any error the table is left as it
        was. ``schema_evolution="merge"`` first adds the data's new columns and widens types, in
        the same commit. ``progress`` gets an :class:`icefloe.Progress` as rows are written
        (stage ``"write"``) and around the commit (stage ``"commit"``)."""
        tx = self.transaction(branch)
        try:
            tx.append(
                track_batches(data, progress, "append"),
                snapshot_properties=snapshot_properties,
                schema_evolution=schema_evolution,
            )
            report(progress, "append", "commit", 0, 1)
        except BaseException:
            tx.abandon()  # a progress callback that stops the write: the files written go too
            raise
        committed = tx.commit()
        report(progress, "append", "commit", 1, 1)
        return committed[0] if committed else None

    def _one_action(
        self,
        queue: Callable[[Transaction], object],
        branch: str,
        progress: ProgressCallback | None = None,
        operation: str = "write",
    ) -> Snapshot | None:
        """Run one queued change as its own transaction; on any error nothing is committed and
        the files it wrote are deleted."""
        tx = self.transaction(branch)
        try:
            queue(tx)
            report(progress, operation, "commit", 0, 1)
            committed = tx.commit()
        except BaseException:
            tx.abandon()
            raise
        report(progress, operation, "commit", 1, 1)
        return committed[-1] if committed else None

    def _statement(
        self,
        first: Callable[[Transaction], object],
        again: Callable[[Transaction], object],
        branch: str,
        progress: ProgressCallback | None,
        operation: str,
        written: Callable[[], Sequence[StatementInput | None]] = tuple,
    ) -> Snapshot | None:
        """A row-level statement that restarts from the new snapshot when a concurrent commit
        conflicts with it (``commit.statement-restart.max-attempts``, see
        :mod:`icefloe.transaction._restart`): ``first`` queues it in the first attempt's
        transaction, ``again`` in each restart's. The rows ``written`` from the input once are
        deleted when the statement fails for sure (never when the outcome is unknown)."""
        from icefloe.errors import CommitStateUnknownError
        from icefloe.transaction._restart import max_attempts, run_statement

        def attempt(n: int) -> Snapshot | None:
            return self._one_action(first if n == 1 else again, branch, progress, operation)

        try:
            return run_statement(attempt, limit=max_attempts(self.properties), before_restart=self.refresh)
        except CommitStateUnknownError:
            raise
        except BaseException:
            for w in written():
                if w is not None:
                    _discard(self.io, w.files)
            raise

    def delete(
        self,
        where: str | BooleanExpression,
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        progress: ProgressCallback | None = None,
    ) -> Snapshot | None:
        """Delete the rows matching ``where`` (per ``write.delete.mode``). Returns the new
        snapshot, or None when no row matched. A concurrent commit that conflicts with it makes
        it run again from the new snapshot (``commit.statement-restart.max-attempts``)."""

        def queue(tx: Transaction) -> None:
            tx.delete(where, snapshot_properties)

        return self._statement(queue, queue, branch, progress, "delete")

    def update(
        self,
        where: str | BooleanExpression,
        set: dict[str, Any],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        progress: ProgressCallback | None = None,
    ) -> Snapshot | None:
        """Give the rows matching ``where`` new values (per ``write.update.mode``):
        ``t.update("id = 3", set={"status": "done", "n": pc.field("n") + 1})``; a value is a
        Python value, a ``pyarrow.compute`` expression or a function of the current rows. Returns
        the new snapshot, or None when no row matched. Restarts on conflicts as `delete` does."""

        def queue(tx: Transaction) -> None:
            tx.update(where, set, snapshot_properties)

        return self._statement(queue, queue, branch, progress, "update")

    def overwrite(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        where: str | BooleanExpression = "true",
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        schema_evolution: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Snapshot | None:
        """Replace the rows matching ``where`` (every row by default) with ``data``, atomically.
        ``data`` is written once; the removal of the old rows restarts on conflicts as in
        `delete`."""
        state: list[StatementInput] = []

        def first(tx: Transaction) -> None:
            tx._check_writable()
            rows = track_batches(data, progress, "overwrite")
            state.append(tx._overwrite_input(rows, where, schema_evolution))
            tx._overwrite_from(state[0], where, snapshot_properties, tx._branch(None), owns=False)

        def again(tx: Transaction) -> None:
            tx._resume(state[0])
            tx._overwrite_from(state[0], where, snapshot_properties, tx._branch(None), owns=False)

        return self._statement(first, again, branch, progress, "overwrite", lambda: state)

    def upsert(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        key_columns: Sequence[str],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        schema_evolution: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Snapshot | None:
        """Insert ``data``, replacing the rows with the same ``key_columns`` (per
        ``write.merge.mode``), in one atomic commit. ``data`` is written once; finding and
        removing the rows it replaces restarts on conflicts as in `delete`."""
        state: list[StatementInput | None] = []

        def first(tx: Transaction) -> None:
            tx._check_writable()
            rows = track_batches(data, progress, "upsert")
            state.append(tx._upsert_input(rows, key_columns, schema_evolution))
            again(tx, resume=False)

        def again(tx: Transaction, resume: bool = True) -> None:
            written = state[0]
            if written is None:
                return  # no input row: nothing to commit
            if resume:
                tx._resume(written)
            tx._upsert_from(written, snapshot_properties, tx._branch(None), owns=False)

        return self._statement(first, again, branch, progress, "upsert", lambda: state)

    def replace_partitions(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        schema_evolution: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Snapshot | None:
        """Dynamic partition overwrite: ``data`` replaces every partition it has rows in."""
        return self._one_action(
            lambda tx: tx.replace_partitions(
                track_batches(data, progress, "replace_partitions"),
                snapshot_properties,
                schema_evolution=schema_evolution,
            ),
            branch,
            progress,
            "replace_partitions",
        )

    def __repr__(self) -> str:
        from icefloe.table._repr import table_repr

        return table_repr(self)


def _discard(io: FileIO, files: Iterable[Any]) -> None:
    import contextlib

    from icefloe.errors import FileIOError

    for f in files:
        # Best effort: an orphan file is harmless, and orphan-file cleanup finds it.
        with contextlib.suppress(FileIOError):
            io.delete(f.file_path)
