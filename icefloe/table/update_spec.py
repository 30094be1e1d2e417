"""``table.update_spec()``: partition evolution in one atomic commit.

::

    with table.update_spec() as u:
        u.add_field("hour(ts)")                  # field ts_hour, a new partition field id
        u.add_field("bucket(16, id)", "shard")   # with a name of our choosing
        u.add_identity("category")
        u.remove_field("ts_day")                 # by name, or by term: u.remove_field("day(ts)")
        u.rename_field("shard", "id_shard")
    # one commit here (AddPartitionSpec + SetDefaultSpec); on an exception nothing is committed

Each call is checked at once (:mod:`icefloe.spec.partition_evolution` holds the rules, Iceberg
Java's ``BaseUpdatePartitionSpec``), and the whole new spec again when the block commits. Data
already written keeps its spec: files are planned, pruned and deleted from under the spec they
were written with, and new writes use the new default spec.

The commit::

    attempt on base metadata
      -> the table's default spec id and last-partition-id still those the block started from?
         (no: ConflictError, nothing committed; the spec changed concurrently)
      -> AddPartitionSpec(new spec) (left out when an equal spec exists: its id is reused)
         + SetDefaultSpec, requirements AssertDefaultSpecId + AssertLastAssignedPartitionId

A concurrent data commit does not change the spec, so the retry loop applies the change again on
the new metadata and both land. Inside a transaction (``tx.update_spec()``) the change is queued
with the transaction's other changes; writes queued after it use the new spec.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from icefloe.errors import ConflictError, ValidationError
from icefloe.spec.partition import PartitionSpec
from icefloe.spec.partition_evolution import PartitionEvolution
from icefloe.spec.updates import (
    AssertDefaultSpecId,
    AssertLastAssignedPartitionId,
    AssertTableUUID,
    MetadataUpdate,
    TableRequirement,
)
from icefloe.transaction._commit import commit_actions
from icefloe.transaction._producer import PendingChanges, SnapshotProducer

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.manifest import ManifestFile
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table._table import Table
    from icefloe.table.transaction import Transaction

__all__ = ["UpdateSpec"]


def _spec_updates(base: TableMetadata, spec: PartitionSpec, set_as_default: bool) -> list[MetadataUpdate]:
    """The updates that add ``spec`` to ``base`` (reusing an equal spec's id) and make it the
    default; empty when there is nothing to change."""
    from icefloe.spec.metadata_builder import TableMetadataBuilder

    builder = TableMetadataBuilder.from_metadata(base)
    builder.add_partition_spec(spec)
    if set_as_default:
        builder.set_default_spec(-1)
    return list(builder.updates)


class _SpecChange(SnapshotProducer):
    """The spec change as one action of the commit loop: each attempt checks that the table's
    spec is still the one the change was computed on, then emits the updates."""

    def __init__(
        self,
        io: FileIO,
        new_spec: PartitionSpec,
        expected_spec_id: int,
        expected_last_partition_id: int,
        *,
        set_as_default: bool = True,
        assert_base: bool = True,
    ) -> None:
        super().__init__(io)
        self._new = new_spec
        self._expected_spec_id = expected_spec_id
        self._expected_last_partition_id = expected_last_partition_id
        self._set_as_default = set_as_default
        # Only the first spec change of a transaction asserts the table's base spec: a later one
        # builds on the first one's result, which the catalog never sees as a base.
        self._assert_base = assert_base

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        raise AssertionError("a spec change writes no manifests")  # pragma: no cover

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        raise AssertionError("a spec change writes no snapshot")  # pragma: no cover

    def _apply(self, base: TableMetadata) -> PendingChanges:
        if (
            base.default_spec_id != self._expected_spec_id
            or base.last_partition_id != self._expected_last_partition_id
        ):
            raise ConflictError(
                f"the table's partition spec changed concurrently: its default spec is "
                f"{base.default_spec_id} (last partition id {base.last_partition_id}), this change was "
                f"made on spec {self._expected_spec_id} (last partition id "
                f"{self._expected_last_partition_id})",
                hint="refresh the table, look at its new partition spec and apply the change again",
                operation="update_spec",
                snapshot_id=None,
                files=[],
            )
        updates = _spec_updates(base, self._new, self._set_as_default)
        requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
        if self._assert_base:
            requirements += [
                AssertDefaultSpecId(self._expected_spec_id),
                AssertLastAssignedPartitionId(self._expected_last_partition_id),
            ]
        return PendingChanges(updates, requirements)


class UpdateSpec:
    """Changes to a table's partition spec, committed together when the ``with`` block ends (or
    by :meth:`commit`). Method names follow Iceberg Java's ``UpdatePartitionSpec``; each returns
    ``self`` so calls can be chained. Terms are written as in ``partition_by``: ``"hour(ts)"``,
    ``"bucket(16, id)"``, ``"truncate(4, s)"``, ``"year(d)"``, or a column name for identity."""

    def __init__(
        self, table: Table, *, case_sensitive: bool = True, transaction: Transaction | None = None
    ) -> None:
        self._table = table
        self._transaction = transaction
        base = transaction._working if transaction is not None else table.metadata
        self._base = base
        self._evolution = PartitionEvolution(
            base.spec(),
            base.schema(),
            base.last_partition_id,
            base.partition_specs,
            format_version=base.format_version,
            case_sensitive=case_sensitive,
        )
        self._set_as_default = True
        self._done = False

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError("this update_spec() block was already committed or abandoned")

    # ------------------------------------------------------------------ changes
    def add_field(self, term: str, name: str | None = None) -> UpdateSpec:
        """Add a partition field: ``add_field("hour(ts)")`` (named ``ts_hour``),
        ``add_field("bucket(16, id)", "shard")``. A field with the same column and transform in
        an earlier spec gets its field id back; otherwise the field gets a new id."""
        self._check_open()
        self._evolution.add_field(term, name)
        return self

    def add_identity(self, column: str) -> UpdateSpec:
        """Add an identity partition field on ``column`` (named like the column)."""
        self._check_open()
        self._evolution.add_identity(column)
        return self

    def remove_field(self, name: str) -> UpdateSpec:
        """Remove a partition field, by its name (``"ts_day"``) or by its term (``"day(ts)"``).
        Data already written keeps it; new data is no longer partitioned by it."""
        self._check_open()
        self._evolution.remove_field(name)
        return self

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        """Rename a partition field (its id and transform stay)."""
        self._check_open()
        self._evolution.rename_field(name, new_name)
        return self

    def add_non_default_spec(self) -> UpdateSpec:
        """Add the new spec to the table without making it the default (Java's
        ``addNonDefaultSpec``): writes keep using the current spec unless told otherwise."""
        self._check_open()
        self._set_as_default = False
        return self

    # ------------------------------------------------------------------ outcome
    def apply(self) -> PartitionSpec:
        """The spec as it will be after the block commits, with the spec id it will get (an equal
        spec's id, if the table has one). Nothing is committed."""
        spec = self._evolution.apply()
        for s in self._base.partition_specs:
            if s.compatible_with(spec):
                return s
        return spec.with_spec_id(max(s.spec_id for s in self._base.partition_specs) + 1)

    @property
    def last_partition_id(self) -> int:
        """The highest partition field id assigned so far (the table's, plus the new fields')."""
        return self._evolution.last_partition_id

    def _action(self) -> _SpecChange | None:
        spec = self._evolution.apply()
        if not _spec_updates(self._base, spec, self._set_as_default):
            return None
        earlier = self._transaction is not None and any(
            isinstance(a, _SpecChange) for a in self._transaction._actions
        )
        return _SpecChange(
            self._table.io,
            spec,
            self._base.default_spec_id,
            self._base.last_partition_id,
            set_as_default=self._set_as_default,
            assert_base=not earlier,
        )

    def commit(self) -> TableMetadata:
        """Commit the change (or, inside a transaction, queue it with the transaction's other
        changes) and return the table metadata as it is now (for a transaction: as it will be).
        Nothing changes when the result is the current spec."""
        self._check_open()
        self._done = True
        action = self._action()
        if self._transaction is not None:
            if action is not None:
                self._transaction._queue(action)
            return self._transaction._working
        if action is None:
            return self._table.metadata
        metadata, location = commit_actions(
            self._table.catalog, self._table.identifier, self._table.metadata, [action]
        )
        self._table.metadata = metadata
        self._table.metadata_location = location
        return metadata

    def abandon(self) -> None:
        self._done = True

    def __enter__(self) -> UpdateSpec:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            if not self._done:
                self.commit()
        else:
            self.abandon()

    def __repr__(self) -> str:
        return f"UpdateSpec({self._table.name!r}, base_spec_id={self._base.default_spec_id})"
