"""Transactions: several changes to one table, committed atomically with retries.

Changes are queued; nothing is visible until :meth:`Transaction.commit`, which hands the queued
snapshot producers to the retry loop in :mod:`icefloe.transaction._commit`. A transaction used as a
context manager commits when the block ends without an exception and cleans up otherwise.

Each queued action is staged on the transaction's working metadata right away, so a later action
(a delete after an upsert, say) sees the earlier ones' effects. Every action keeps the snapshot
the transaction started from as its starting snapshot and ignores the transaction's own
snapshots when it checks for conflicts: only commits of others can conflict.

Files and cleanup: a failed commit, or an abandoned transaction (an exception inside
``with table.transaction() as tx:``), deletes only what icefloe wrote for it (manifests, manifest
lists, and the data and delete files of ``append``, ``overwrite``, ``delete``, ``upsert``, ...).
Files a caller hands in (``append_files``, ``overwrite_files``, ``replace_partitions_files``,
``row_delta``, ``rewrite_files``) are checked first (:mod:`icefloe.transaction._added_files`) and
are never deleted unless the caller passes ``delete_on_failure=True``. Nothing is deleted when a
commit's outcome is unknown.

Conflicts: inside a transaction a `ConflictError` is raised as it is (the user's code that built
the transaction cannot be re-run). The same statements called on the table (``table.delete``,
``update``, ``upsert``, ``overwrite``) restart from the new snapshot instead, up to
``commit.statement-restart.max-attempts`` (:mod:`icefloe.transaction._restart`).

Row operations and the table properties they honour::

    delete(where)               write.delete.mode, write.delete.isolation-level
    update(where, set)          write.update.mode, write.update.isolation-level
    upsert(data, key_columns)   write.merge.mode,  write.merge.isolation-level
    overwrite(data, where)      copy-on-write always, write.update.isolation-level
    replace_partitions(data)    write.update.isolation-level
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from icefloe.errors import FileIOError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import BooleanExpression
from icefloe.spec.properties import bool_property
from icefloe.spec.snapshot import MAIN_BRANCH
from icefloe.spec.updates import MetadataUpdate, RemoveProperties, SetProperties, apply_updates
from icefloe.table.update_schema import UpdateSchema, merge_input_schema
from icefloe.table.update_spec import UpdateSpec
from icefloe.transaction._added_files import check_added_files
from icefloe.transaction._commit import CommitStats, commit_actions
from icefloe.transaction._merging import MergingProducer, starting_snapshot_id
from icefloe.transaction._producer import SnapshotProducer, branch_head
from icefloe.transaction.conflicts import isolation_level
from icefloe.transaction.delete import DeleteFiles
from icefloe.transaction.fast_append import FastAppend
from icefloe.transaction.merge_append import MERGE_ENABLED, MergeAppend
from icefloe.transaction.overwrite import OverwriteFiles
from icefloe.transaction.replace_partitions import ReplacePartitions
from icefloe.transaction.rewrite_files import RewriteFiles
from icefloe.transaction.row_delta import RowDelta
from icefloe.transaction.wap import wap_staged

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.manifest import DataFile
    from icefloe.spec.schema import Schema
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.sort_order import SortOrder
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table
    from icefloe.table.replace_sort_order import ReplaceSortOrder, SortTermLike

__all__ = ["StatementInput", "Transaction"]


class Transaction:
    def __init__(self, table: Table, branch: str = MAIN_BRANCH) -> None:
        self._table = table
        #: the branch the transaction's changes go to unless a method names another one
        self.branch = branch
        self._actions: list[SnapshotProducer] = []
        self._updates: list[MetadataUpdate] = []
        self._done = False
        self.stats = CommitStats()
        self._working: TableMetadata = table.metadata
        # The metadata each queued action was staged on: a first commit attempt on an unchanged
        # table reuses those applications (and the manifest lists they wrote).
        self._staged: list[TableMetadata] = []
        self._origin = table.metadata
        if branch != MAIN_BRANCH:
            branch_head(table.metadata, branch)  # a tag fails here, before anything is written

    # ------------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._done:
            raise ValidationError("this transaction was already committed or abandoned")

    def _check_writable(self) -> None:
        self._check_open()
        if self._table.format_version < 2:
            raise UnsupportedFeatureError(
                f"table {self._table.name} is format version 1; icefloe writes format version 2 and 3",
                hint="upgrade the table to format version 2 (an Iceberg Java ALTER TABLE ... SET "
                "TBLPROPERTIES ('format-version'='2'), or icefloe's upgrade API when it lands)",
            )
        if self._table.format_version > 3:
            raise UnsupportedFeatureError(
                f"table {self._table.name} is format version {self._table.format_version}; "
                "icefloe writes format versions 2 and 3"
            )

    @property
    def _props(self) -> dict[str, str]:
        return dict(self._working.properties)

    def _branch(self, branch: str | None) -> str:
        name = self.branch if branch is None else branch
        branch_head(self._working, name)  # a tag is refused before anything is written
        return name

    def _head(self, branch: str) -> Snapshot | None:
        return branch_head(self._working, branch)

    def _starting_snapshot(self, branch: str) -> int | None:
        """What an action on ``branch`` read: the branch's head when the transaction began."""
        return starting_snapshot_id(self._origin, branch)

    def _queue(self, action: SnapshotProducer) -> None:
        """Stage ``action`` on the working metadata (validating it there) and queue it."""
        try:
            action.stage_only = wap_staged(
                self._working.properties, action.snapshot_properties, action.branch
            )
        except BaseException:
            action.cleanup(committed=False)
            raise
        if isinstance(action, MergingProducer):
            action.ignored_snapshot_ids = {a.snapshot_id for a in self._actions}
        try:
            changes = action.apply(self._working)
        except BaseException:
            action.cleanup(committed=False)
            raise
        self._staged.append(self._working)
        self._working = apply_updates(self._working, changes.updates, None)
        self._actions.append(action)

    def _merging_kwargs(self, command: str, branch: str) -> dict[str, object]:
        return {
            "isolation_level": isolation_level(self._props, command),
            "starting_snapshot": self._starting_snapshot(branch),
            "branch": branch,
        }

    def _write(self, data: object) -> list[DataFile]:
        from icefloe.arrow.writer import write_data_files

        return write_data_files(self._table.io, self._working, data)  # type: ignore[arg-type]

    def _discard(self, files: Iterable[DataFile]) -> None:
        for f in files:
            # Best effort: an orphan file is harmless, and orphan-file cleanup finds it.
            with contextlib.suppress(FileIOError):
                self._table.io.delete(f.file_path)

    def _check_files(
        self, files: Iterable[DataFile], content: Literal["data", "deletes"], method: str
    ) -> list[DataFile]:
        """The caller's files as a list, refused (`ValidationError`, nothing touched) unless the
        table can reference them."""
        added = list(files)
        check_added_files(self._table.io, self._working, added, content=content, method=method)
        return added

    def _queue_new(self, build: Callable[[], SnapshotProducer], owned: Iterable[DataFile] = ()) -> None:
        """Build an action and queue it; if building it fails, the files icefloe wrote for it
        (``owned``) are deleted (queueing cleans up after itself)."""
        try:
            action = build()
        except BaseException:
            self._discard(owned)
            raise
        self._queue(action)

    # ------------------------------------------------------------------ appends
    def append(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
        schema_evolution: str | None = None,
    ) -> list[DataFile]:
        """Write ``data`` as Parquet now and queue an append of the files (a merge append when
        ``commit.manifest-merge.enabled`` is true, else a fast append) to ``branch``.
        ``schema_evolution="merge"`` first queues the schema change that adds the data's new
        columns and widens types (docs/evolution.md)."""
        self._check_writable()
        name = self._branch(branch)
        data = merge_input_schema(self, data, schema_evolution)
        files = self._write(data)
        if files:
            self._append(files, snapshot_properties, name, owns=True)
        return files

    def append_files(
        self,
        files: Iterable[DataFile],
        snapshot_properties: dict[str, str] | None = None,
        *,
        delete_on_failure: bool = False,
        branch: str | None = None,
    ) -> None:
        """Queue an append of data files written elsewhere (e.g. by Spark executors).

        Each file is checked now: a data file (no delete files), in a format Iceberg allows, at
        a path the table's FileIO can address, existing, of ``file_size_in_bytes``; otherwise
        `ValidationError` names it and nothing changes. The files stay the caller's: a failed
        commit or an abandoned transaction leaves them in place, unless ``delete_on_failure`` is
        true (then a commit that fails for sure, or abandoning the transaction, deletes them;
        never a commit whose outcome is unknown, nor a failed check)."""
        self._check_writable()
        name = self._branch(branch)
        added = self._check_files(files, "data", "append_files")
        self._append(added, snapshot_properties, name, owns=delete_on_failure)

    def _append(
        self, files: list[DataFile], props: dict[str, str] | None, branch: str, *, owns: bool
    ) -> None:
        # Fast appends unless the table asks for merging (PyIceberg's default; Java merges).
        merge = bool_property(self._props, MERGE_ENABLED, False)
        cls = MergeAppend if merge else FastAppend
        self._queue_new(
            lambda: cls(self._table.io, files, owns_files=owns, snapshot_properties=props, branch=branch),
            files if owns else (),
        )

    # ------------------------------------------------------------------ overwrites
    def overwrite_files(
        self,
        files: Iterable[DataFile],
        delete_filter: str | BooleanExpression = "true",
        snapshot_properties: dict[str, str] | None = None,
        *,
        remove_files: Iterable[DataFile] = (),
        conflict_filter: str | BooleanExpression | None = None,
        isolation_level: str | None = None,
        delete_on_failure: bool = False,
        branch: str | None = None,
    ) -> None:
        """Remove the rows matching ``delete_filter`` (wholly matching files by metadata, partially
        matching ones by a copy-on-write rewrite) and add ``files``, in one snapshot.

        ``files`` are checked and stay the caller's as in `append_files` (``delete_on_failure``
        likewise); the rewrites icefloe writes are its own and go when the commit fails.

        A copy-on-write rewrite computed elsewhere (Spark executors) passes ``delete_filter="false"``
        with the data files it replaces as ``remove_files``, the filter of the rows it read as
        ``conflict_filter`` (default: ``delete_filter``) and the ``isolation_level`` of its
        command (default: ``write.update.isolation-level``)."""
        from icefloe.table._row_ops import to_filter

        self._check_writable()
        name = self._branch(branch)
        schema = self._working.schema()
        expr = to_filter(delete_filter, schema)
        conflict = None if conflict_filter is None else to_filter(conflict_filter, schema)
        added = self._check_files(files, "data", "overwrite_files")
        self._overwrite(
            added,
            expr,
            snapshot_properties,
            name,
            owns=delete_on_failure,
            remove_files=list(remove_files),
            conflict_filter=conflict,
            isolation_level=None if isolation_level is None else _check_level(isolation_level),
        )

    def _overwrite(
        self,
        added: list[DataFile],
        expr: BooleanExpression,
        snapshot_properties: dict[str, str] | None,
        branch: str,
        *,
        owns: bool,
        remove_files: list[DataFile] | None = None,
        conflict_filter: BooleanExpression | None = None,
        isolation_level: str | None = None,
    ) -> None:
        """Queue an overwrite adding ``added``; ``owns``: whether icefloe may delete them."""
        from icefloe.arrow.row_match import FilterMatcher
        from icefloe.table._row_ops import COPY_ON_WRITE, remove_rows

        io = self._table.io
        mine = list(added) if owns else []
        try:
            changes = remove_rows(
                io,
                self._working,
                self._head(branch),
                FilterMatcher(self._working.schema(), expr),
                expr,
                COPY_ON_WRITE,
                whole_file_filter=expr,
            )
        except BaseException:
            self._discard(mine)
            raise

        def build() -> OverwriteFiles:
            kwargs = self._merging_kwargs("update", branch)
            if isolation_level is not None:
                kwargs["isolation_level"] = isolation_level
            action = OverwriteFiles(
                io,
                self._working,
                add=[*changes.added, *added],
                remove=[*changes.removed, *(remove_files or ())],
                conflict_filter=expr if conflict_filter is None else conflict_filter,
                snapshot_properties=snapshot_properties,
                owns_files=True,
                **kwargs,  # type: ignore[arg-type]
            )
            if not owns:
                # Only the rewrites are ours to delete; the caller's files are not.
                action.not_owned = {f.file_path for f in added}
            return action

        self._queue_new(build, [*changes.added, *mine])

    def overwrite(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        where: str | BooleanExpression = "true",
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
        schema_evolution: str | None = None,
    ) -> None:
        """Replace the rows matching ``where`` (all rows by default) with ``data``."""
        self._check_writable()
        name = self._branch(branch)
        written = self._overwrite_input(data, where, schema_evolution)
        self._overwrite_from(written, where, snapshot_properties, name, owns=True)

    def _overwrite_input(
        self, data: object, where: str | BooleanExpression, schema_evolution: str | None
    ) -> StatementInput:
        """Write the rows of an overwrite (after queueing the schema change they need)."""
        from icefloe.table._row_ops import to_filter

        before = self._working
        data = merge_input_schema(self, data, schema_evolution)
        to_filter(where, self._working.schema())  # a bad filter fails before anything is written
        return StatementInput(self._write(data), _merged_schema(before, self._working))

    def _overwrite_from(
        self,
        written: StatementInput,
        where: str | BooleanExpression,
        snapshot_properties: dict[str, str] | None,
        branch: str,
        *,
        owns: bool,
    ) -> None:
        from icefloe.table._row_ops import to_filter

        expr = to_filter(where, self._working.schema())
        self._overwrite(written.files, expr, snapshot_properties, branch, owns=owns)

    def _resume(self, written: StatementInput) -> None:
        """Queue again, in a fresh transaction of a restarted statement, the schema change its
        written rows need; if the table's schema moved meanwhile the rows cannot be reused."""
        from icefloe.errors import ConflictError
        from icefloe.table.update_schema import queue_merged_schema

        if written.merged is None:
            return
        schema, schema_id, last_column_id = written.merged
        try:
            queue_merged_schema(self, schema, schema_id, last_column_id)
        except ConflictError as e:
            e.context["restartable"] = False
            raise

    def replace_partitions_files(
        self,
        files: Iterable[DataFile],
        snapshot_properties: dict[str, str] | None = None,
        *,
        delete_on_failure: bool = False,
        branch: str | None = None,
    ) -> None:
        """Dynamic partition overwrite: drop every live data file in the partitions ``files``
        touch, and add ``files`` (checked, and kept on failure unless ``delete_on_failure``, as
        in `append_files`)."""
        self._check_writable()
        name = self._branch(branch)
        added = self._check_files(files, "data", "replace_partitions_files")
        self._replace_partitions(added, snapshot_properties, name, owns=delete_on_failure)

    def _replace_partitions(
        self, added: list[DataFile], snapshot_properties: dict[str, str] | None, branch: str, *, owns: bool
    ) -> None:
        self._queue_new(
            lambda: ReplacePartitions(
                self._table.io,
                self._working,
                added,
                snapshot_properties=snapshot_properties,
                owns_files=owns,
                **self._merging_kwargs("update", branch),  # type: ignore[arg-type]
            ),
            added if owns else (),
        )

    def replace_partitions(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
        schema_evolution: str | None = None,
    ) -> None:
        self._check_writable()
        name = self._branch(branch)
        data = merge_input_schema(self, data, schema_evolution)
        files = self._write(data)
        if files:
            self._replace_partitions(files, snapshot_properties, name, owns=True)

    # ------------------------------------------------------------------ row-level operations
    def delete(
        self,
        where: str | BooleanExpression,
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
    ) -> int:
        """Delete the rows matching ``where`` (``write.delete.mode``: copy-on-write rewrites the
        files holding them, merge-on-read writes position delete files). Returns the number of
        rows deleted (rows already deleted by earlier delete files may be counted again)."""
        from icefloe.arrow.row_match import FilterMatcher
        from icefloe.table._row_ops import MERGE_ON_READ, remove_rows, to_filter, write_mode

        self._check_writable()
        name = self._branch(branch)
        schema = self._working.schema()
        expr = to_filter(where, schema)
        mode = write_mode(self._props, "delete")
        kwargs = self._merging_kwargs("delete", name)
        changes = remove_rows(
            self._table.io,
            self._working,
            self._head(name),
            FilterMatcher(schema, expr),
            expr,
            mode,
            whole_file_filter=expr,
        )
        if not changes.removed and not changes.added_deletes:
            return 0
        action: MergingProducer
        try:
            if not changes.added and not changes.added_deletes:
                action = DeleteFiles(
                    self._table.io,
                    self._working,
                    remove=changes.removed,
                    snapshot_properties=snapshot_properties,
                    **kwargs,  # type: ignore[arg-type]
                )
            elif mode == MERGE_ON_READ:
                action = RowDelta(
                    self._table.io,
                    self._working,
                    add_delete_files=changes.added_deletes,
                    remove_delete_files=changes.removed_deletes,  # v3: deletion vectors replaced
                    referenced_data_files=changes.referenced,
                    conflict_filter=expr,
                    snapshot_properties=snapshot_properties,
                    owns_files=True,  # the delete files icefloe just wrote
                    **kwargs,  # type: ignore[arg-type]
                )
                action.remove_data_files(changes.removed)
            else:
                action = OverwriteFiles(
                    self._table.io,
                    self._working,
                    add=changes.added,
                    remove=changes.removed,
                    conflict_filter=expr,
                    snapshot_properties=snapshot_properties,
                    owns_files=True,  # the rewrites icefloe just wrote
                    **kwargs,  # type: ignore[arg-type]
                )
        except BaseException:
            changes.discard(self._table.io)
            raise
        self._queue(action)
        return changes.rows_removed

    def update(
        self,
        where: str | BooleanExpression,
        set: Mapping[str, Any],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
    ) -> int:
        """Give the rows matching ``where`` new values: ``set`` maps top-level columns to a value,
        a ``pyarrow.compute`` expression (``pc.field("n") + 1``) or a function of the current rows
        (a ``RecordBatch``) returning an array (``write.update.mode``: copy-on-write rewrites the
        files holding them, merge-on-read writes position deletes and the new rows). Returns the
        number of rows updated."""
        from icefloe.arrow.update import check_assignments, update_rows
        from icefloe.table._row_ops import MERGE_ON_READ, to_filter, write_mode

        self._check_writable()
        name = self._branch(branch)
        schema = self._working.schema()
        expr = to_filter(where, schema)
        assignments = check_assignments(schema, set)
        mode = write_mode(self._props, "update")
        kwargs = self._merging_kwargs("update", name)
        io = self._table.io
        changes = update_rows(io, self._working, self._head(name), expr, assignments, mode)
        if not changes.removed and not changes.added_deletes:
            return 0
        action: MergingProducer
        try:
            if mode == MERGE_ON_READ:
                action = RowDelta(
                    io,
                    self._working,
                    add_data_files=changes.added,
                    add_delete_files=changes.added_deletes,
                    remove_delete_files=changes.removed_deletes,  # v3: deletion vectors replaced
                    referenced_data_files=changes.referenced,
                    conflict_filter=expr,
                    snapshot_properties=snapshot_properties,
                    owns_files=True,  # the rows and delete files icefloe just wrote
                    **kwargs,  # type: ignore[arg-type]
                )
            else:
                action = OverwriteFiles(
                    io,
                    self._working,
                    add=changes.added,
                    remove=changes.removed,
                    conflict_filter=expr,
                    snapshot_properties=snapshot_properties,
                    owns_files=True,  # the rewrites icefloe just wrote
                    **kwargs,  # type: ignore[arg-type]
                )
        except BaseException:
            changes.discard(io)
            raise
        self._queue(action)
        return changes.rows_updated

    def upsert(
        self,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        key_columns: Iterable[str],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
        schema_evolution: str | None = None,
    ) -> None:
        """Insert ``data``, replacing every table row whose ``key_columns`` equal those of an
        input row (``write.merge.mode``). The input is streamed: it is written once while its key
        columns are collected; then only files whose metadata may hold those keys are read."""
        self._check_writable()
        name = self._branch(branch)
        written = self._upsert_input(data, key_columns, schema_evolution)
        if written is not None:
            self._upsert_from(written, snapshot_properties, name, owns=True)

    def _upsert_input(
        self, data: object, key_columns: Iterable[str], schema_evolution: str | None
    ) -> StatementInput | None:
        """Write the rows of an upsert and collect their keys (None: no input row)."""
        import pyarrow as pa

        from icefloe.arrow.conform import check_arrow_schema, conform_batch
        from icefloe.table._row_ops import check_key_columns

        before = self._working
        data = merge_input_schema(self, data, schema_evolution)
        schema = self._working.schema()
        input_schema, batches = _arrow_batches(data)
        keys = check_key_columns(schema, input_schema, key_columns)
        key_parts: list[pa.Table] = []

        def collect() -> Iterator[pa.RecordBatch]:
            for b in batches:
                if not isinstance(b, pa.RecordBatch):
                    raise ValidationError(f"expected pyarrow RecordBatches, got {type(b).__name__}")
                check_arrow_schema(b.schema, schema)
                conformed = conform_batch(b, schema)
                key_parts.append(pa.Table.from_batches([conformed]).select(keys))
                yield conformed

        files = self._write(collect())
        try:
            if not key_parts or sum(t.num_rows for t in key_parts) == 0:
                self._discard(files)
                return None
            key_table = pa.concat_tables(key_parts)
            counts = key_table.group_by(keys).aggregate([([], "count_all")])
            if pa.compute.max(counts.column("count_all")).as_py() > 1:
                raise ValidationError(
                    f"the upsert input has duplicate keys in {keys}",
                    hint="de-duplicate the input: each key may appear at most once",
                    key_columns=keys,
                )
        except BaseException:
            self._discard(files)
            raise
        return StatementInput(files, _merged_schema(before, self._working), key_table, keys)

    def _upsert_from(
        self,
        written: StatementInput,
        snapshot_properties: dict[str, str] | None,
        branch: str,
        *,
        owns: bool,
    ) -> None:
        """Queue the upsert of rows already written: find the rows they replace in the branch's
        head (this transaction's snapshot) and remove them. ``owns``: whether a failed commit
        deletes the written rows (a restartable statement keeps them for its next attempt)."""
        from icefloe.arrow.row_match import KeyMatcher
        from icefloe.table._row_ops import MERGE_ON_READ, remove_rows, write_mode

        assert written.key_table is not None
        schema = self._working.schema()
        mode = write_mode(self._props, "merge")
        kwargs = self._merging_kwargs("merge", branch)
        io = self._table.io
        files = written.files
        discard_on_error = list(files) if owns else []
        try:
            matcher = KeyMatcher(schema, written.keys, written.key_table)
            prefilter = matcher.prefilter(schema)
            changes = remove_rows(io, self._working, self._head(branch), matcher, prefilter, mode)
            discard_on_error += [*changes.added, *changes.added_deletes]
            action: MergingProducer
            if mode == MERGE_ON_READ:
                action = RowDelta(
                    io,
                    self._working,
                    add_data_files=files,
                    add_delete_files=changes.added_deletes,
                    remove_delete_files=changes.removed_deletes,  # v3: deletion vectors replaced
                    referenced_data_files=changes.referenced,
                    conflict_filter=prefilter,
                    snapshot_properties=snapshot_properties,
                    owns_files=True,  # the input and delete files icefloe just wrote
                    **kwargs,  # type: ignore[arg-type]
                )
                action.remove_data_files(changes.removed)
            else:
                action = OverwriteFiles(
                    io,
                    self._working,
                    add=[*changes.added, *files],
                    remove=changes.removed,
                    conflict_filter=prefilter,
                    snapshot_properties=snapshot_properties,
                    owns_files=True,  # the input and rewrites icefloe just wrote
                    **kwargs,  # type: ignore[arg-type]
                )
            if not owns:
                action.not_owned = {f.file_path for f in files}
        except BaseException:
            self._discard(discard_on_error)
            raise
        self._queue(action)

    # ------------------------------------------------------------------ primitives
    def row_delta(
        self,
        add_data_files: Iterable[DataFile] = (),
        add_delete_files: Iterable[DataFile] = (),
        *,
        remove_data_files: Iterable[DataFile] = (),
        remove_delete_files: Iterable[DataFile] = (),
        referenced_data_files: Iterable[str] = (),
        conflict_filter: str | BooleanExpression | None = None,
        isolation_level: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
        delete_on_failure: bool = False,
        branch: str | None = None,
    ) -> None:
        """Queue a row delta: the merge-on-read primitive (data files plus delete files; data files
        whose rows all go are removed whole with ``remove_data_files``). The added files are
        checked and stay the caller's as in `append_files` (``delete_on_failure`` likewise)."""
        from icefloe.table._row_ops import to_filter

        self._check_writable()
        kwargs = self._merging_kwargs("delete", self._branch(branch))
        if isolation_level is not None:
            kwargs["isolation_level"] = _check_level(isolation_level)
        expr = None if conflict_filter is None else to_filter(conflict_filter, self._working.schema())
        data = self._check_files(add_data_files, "data", "row_delta")
        deletes = self._check_files(add_delete_files, "deletes", "row_delta")
        action = RowDelta(
            self._table.io,
            self._working,
            add_data_files=data,
            add_delete_files=deletes,
            remove_delete_files=remove_delete_files,
            referenced_data_files=referenced_data_files,
            conflict_filter=expr,
            snapshot_properties=snapshot_properties,
            owns_files=delete_on_failure,
            **kwargs,  # type: ignore[arg-type]
        )
        action.remove_data_files(remove_data_files)
        self._queue(action)

    def rewrite_files(
        self,
        remove: Iterable[DataFile],
        add: Iterable[DataFile],
        *,
        remove_deletes: Iterable[DataFile] = (),
        add_deletes: Iterable[DataFile] = (),
        keep_sequence_number: bool = True,
        snapshot_properties: dict[str, str] | None = None,
        delete_on_failure: bool = False,
        branch: str | None = None,
    ) -> None:
        """Queue a rewrite: replace files by files holding the same rows (compaction). The new
        files keep the starting snapshot's data sequence number unless told otherwise. The added
        files are checked and stay the caller's as in `append_files` (``delete_on_failure``
        likewise: a compaction that wrote them itself passes True)."""
        self._check_writable()
        name = self._branch(branch)
        added = self._check_files(add, "data", "rewrite_files")
        added_deletes = self._check_files(add_deletes, "deletes", "rewrite_files")
        self._queue(
            RewriteFiles(
                self._table.io,
                self._working,
                remove=remove,
                add=added,
                remove_deletes=remove_deletes,
                add_deletes=added_deletes,
                keep_sequence_number=keep_sequence_number,
                snapshot_properties=snapshot_properties,
                owns_files=delete_on_failure,
                starting_snapshot=self._starting_snapshot(name),
                branch=name,
            )
        )

    def delete_files(
        self,
        files: Iterable[DataFile | str],
        snapshot_properties: dict[str, str] | None = None,
        *,
        branch: str | None = None,
    ) -> None:
        """Queue the removal of whole data files by metadata (their rows are deleted)."""
        self._check_writable()
        self._queue(
            DeleteFiles(
                self._table.io,
                self._working,
                remove=files,
                snapshot_properties=snapshot_properties,
                **self._merging_kwargs("delete", self._branch(branch)),  # type: ignore[arg-type]
            )
        )

    # ------------------------------------------------------------------ schema and properties
    def update_schema(
        self, *, case_sensitive: bool = True, allow_incompatible_changes: bool = False
    ) -> UpdateSchema:
        """Schema changes committed with the transaction's other changes; writes queued after
        the block use the new schema: ``with tx.update_schema() as u: u.add_column(...)``."""
        self._check_open()
        return UpdateSchema(
            self._table,
            case_sensitive=case_sensitive,
            allow_incompatible_changes=allow_incompatible_changes,
            transaction=self,
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """Partition spec changes committed with the transaction's other changes; writes queued
        after the block use the new spec: ``with tx.update_spec() as u: u.add_field("hour(ts)")``."""
        self._check_open()
        return UpdateSpec(self._table, case_sensitive=case_sensitive, transaction=self)

    @overload
    def replace_sort_order(self, *, case_sensitive: bool = True) -> ReplaceSortOrder: ...
    @overload
    def replace_sort_order(
        self, term: SortTermLike, /, *terms: SortTermLike, case_sensitive: bool = True
    ) -> SortOrder: ...
    def replace_sort_order(
        self, *terms: SortTermLike, case_sensitive: bool = True
    ) -> ReplaceSortOrder | SortOrder:
        """A new sort order committed with the transaction's other changes (queued now when terms
        are given, else when the builder's block ends); writes queued after it sort by it."""
        from icefloe.table.replace_sort_order import replace_sort_order

        self._check_open()
        return replace_sort_order(self._table, terms, case_sensitive=case_sensitive, transaction=self)

    def set_properties(self, **properties: str) -> None:
        self._check_open()
        update = SetProperties(dict(properties))
        self._updates.append(update)
        self._working = apply_updates(self._working, [update], None)

    def remove_properties(self, *keys: str) -> None:
        self._check_open()
        update = RemoveProperties(list(keys))
        self._updates.append(update)
        self._working = apply_updates(self._working, [update], None)

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
            # Only valid while the handle still holds the metadata the transaction started from.
            staged=self._staged if self._table.metadata is self._origin else (),
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


@dataclass(frozen=True)
class StatementInput:
    """The rows a statement wrote from its input, reusable by a restart of the statement
    (:mod:`icefloe.transaction._restart`): they do not depend on the snapshot it read. ``merged``
    is the schema change they were written for (schema, and the schema id and last column id it
    was computed on), ``key_table`` and ``keys`` an upsert's keys."""

    files: list[DataFile]
    merged: tuple[Schema, int, int] | None = None
    key_table: pa.Table | None = None
    keys: list[str] = field(default_factory=list)


def _merged_schema(before: TableMetadata, after: TableMetadata) -> tuple[Schema, int, int] | None:
    if after.current_schema_id == before.current_schema_id:
        return None
    return after.schema(), before.current_schema_id, before.last_column_id


def _check_level(level: str) -> str:
    return isolation_level({"write.delete.isolation-level": level}, "delete")


def _arrow_batches(data: object) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema of an Arrow input and its batches; the schema must be known up front (key
    columns are checked before anything is written)."""
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if isinstance(data, Iterable) and not isinstance(data, str | bytes):
        it = iter(data)
        first = next(it, None)
        if first is None:
            raise ValidationError("the input has no batches, so its schema is unknown")
        if not isinstance(first, pa.RecordBatch):
            raise ValidationError(f"expected pyarrow RecordBatches, got {type(first).__name__}")

        def chain() -> Iterator[pa.RecordBatch]:
            yield first
            yield from it

        return first.schema, chain()
    raise ValidationError(
        f"expected Arrow data, got {type(data).__name__}",
        hint="pass a pyarrow Table, RecordBatch, RecordBatchReader or an iterable of RecordBatches",
    )
