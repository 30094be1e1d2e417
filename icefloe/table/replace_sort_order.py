"""``table.replace_sort_order(...)``: set the order writers sort data files by, in one commit.

Two forms, one builder (Iceberg Java's ``ReplaceSortOrder``)::

    table.replace_sort_order("id", "day(ts) desc nulls last")    # terms given: commits now
    with table.replace_sort_order() as so:                        # no terms: a builder that
        so.asc("id").desc("day(ts)", nulls_first=True)            # commits when the block ends
    table.replace_sort_order().commit()                           # no terms at all: unsorted

Terms are text (:mod:`icefloe.spec.sort_order_builder`) or :class:`SortField` objects, checked
at once against the schema the change starts from; a bad term raises :class:`SortOrderError`
naming it, and nothing is committed.

The commit::

    attempt on base metadata (refreshed on every retry)
      -> the order's columns still exist, with types its transforms accept (SortOrderError if not)
      -> AddSortOrder (reusing the id of an order with the same fields; a new order gets the
         highest id so far + 1, so ids are never reused) + SetDefaultSortOrder(-1)
      -> requirements AssertTableUUID + AssertDefaultSortOrderId(the base's default order)

As in Java (``BaseReplaceSortOrder.commit`` refreshes and re-applies), a concurrent commit of any
kind, including another sort order change, makes the attempt fail its compare-and-swap; the
retry loop re-applies the change on the new metadata, so the last replacement wins and both
orders stay in the table's ``sort-orders``. Replacing the order with the current one commits
nothing.

Inside a transaction (``tx.replace_sort_order(...)``) the change is queued with the others and
writes queued after it sort by the new order and record its id. Those files name the id the
order got when it was queued, so a retry that would give the order another id (a concurrent
sort order change took it) fails with :class:`ConflictError` instead of committing files that
name the wrong order.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING

from icefloe.errors import ConflictError, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.sort_order_builder import bind_sort_term, check_sort_field, describe_sort_field
from icefloe.spec.updates import (
    AssertDefaultSortOrderId,
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

__all__ = ["ReplaceSortOrder", "SortTermLike"]

SortTermLike = str | SortField
"""A sort term: text such as ``"day(ts) desc nulls last"``, or a :class:`SortField`."""


def resolve_order(base: TableMetadata, order: SortOrder) -> SortOrder:
    """``order`` with the id the table would give it: an existing order's with the same fields,
    else one more than the highest id so far (0 for the unsorted order)."""
    if order.is_unsorted:
        return UNSORTED_SORT_ORDER
    for existing in base.sort_orders:
        if existing.same_order(order):
            return existing
    return order.with_order_id(max([o.order_id for o in base.sort_orders] + [0]) + 1)


class _SortOrderChange(SnapshotProducer):
    """The replacement as one action of the commit loop; each attempt checks the order against
    the base's current schema and emits the updates."""

    def __init__(
        self, io: FileIO, order: SortOrder, terms: tuple[str, ...], *, expected_order_id: int | None
    ) -> None:
        super().__init__(io)
        self._order = order
        self._terms = terms
        # In a transaction: the id files written after the change record (None: anything).
        self._expected_order_id = expected_order_id

    def manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        raise AssertionError("a sort order change writes no manifests")  # pragma: no cover

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        raise AssertionError("a sort order change writes no snapshot")  # pragma: no cover

    def _apply(self, base: TableMetadata) -> PendingChanges:
        from icefloe.spec.metadata_builder import TableMetadataBuilder

        schema = base.schema()
        for field, term in zip(self._order.fields, self._terms, strict=True):
            check_sort_field(schema, field, term)  # a concurrent schema change may have dropped it
        builder = TableMetadataBuilder.from_metadata(base)
        builder.add_sort_order(self._order)
        builder.set_default_sort_order(-1)
        new_id = builder.default_sort_order_id
        if self._expected_order_id is not None and new_id != self._expected_order_id:
            raise ConflictError(
                f"the table's sort orders changed concurrently: the new sort order would get id "
                f"{new_id}, but this transaction's files were written for sort order id "
                f"{self._expected_order_id}",
                hint="refresh the table and run the transaction again",
                operation="replace_sort_order",
                snapshot_id=None,
                files=[],
            )
        updates: list[MetadataUpdate] = list(builder.updates)
        requirements: list[TableRequirement] = [
            AssertTableUUID(base.table_uuid),
            AssertDefaultSortOrderId(base.default_sort_order_id),
        ]
        return PendingChanges(updates, requirements)


class ReplaceSortOrder:
    """A new sort order for a table, built term by term and committed when the ``with`` block
    ends (or by :meth:`commit`). Method names follow Iceberg Java's ``ReplaceSortOrder``; each
    returns ``self`` so calls chain. A builder that got no terms commits the unsorted order."""

    def __init__(
        self, table: Table, *, case_sensitive: bool = True, transaction: Transaction | None = None
    ) -> None:
        self._table = table
        self._transaction = transaction
        self._base = transaction._working if transaction is not None else table.metadata
        self._schema: Schema = self._base.schema()
        self._case_sensitive = case_sensitive
        self._fields: list[SortField] = []
        self._terms: list[str] = []
        self._done = False

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError("this replace_sort_order() block was already committed or abandoned")

    def _add(self, field: SortField, term: str) -> ReplaceSortOrder:
        self._fields.append(field)
        self._terms.append(term)
        return self

    # ------------------------------------------------------------------ terms
    def add(self, *terms: SortTermLike) -> ReplaceSortOrder:
        """Add whole terms: ``add("id", "day(ts) desc nulls last")`` or :class:`SortField`\\ s."""
        self._check_open()
        for term in terms:
            if isinstance(term, SortField):
                check_sort_field(self._schema, term)
                self._add(term, describe_sort_field(self._schema, term))
            else:
                field = bind_sort_term(self._schema, term, case_sensitive=self._case_sensitive)
                self._add(field, term)
        return self

    def asc(self, term: str, nulls_first: bool | None = None) -> ReplaceSortOrder:
        """Sort ascending by ``term`` (a column or ``transform(column)``); nulls first unless
        ``nulls_first=False``."""
        return self._directed(term, SortDirection.ASC, nulls_first)

    def desc(self, term: str, nulls_first: bool | None = None) -> ReplaceSortOrder:
        """Sort descending by ``term``; nulls last unless ``nulls_first=True``."""
        return self._directed(term, SortDirection.DESC, nulls_first)

    def _directed(self, term: str, direction: SortDirection, nulls_first: bool | None) -> ReplaceSortOrder:
        self._check_open()
        null_order = None
        if nulls_first is not None:
            null_order = NullOrder.NULLS_FIRST if nulls_first else NullOrder.NULLS_LAST
        field = bind_sort_term(
            self._schema,
            term,
            direction=direction,
            null_order=null_order,
            case_sensitive=self._case_sensitive,
        )
        return self._add(field, term)

    # ------------------------------------------------------------------ outcome
    def apply(self) -> SortOrder:
        """The sort order as it will be committed, with the id the table would give it now
        (nothing is committed)."""
        return resolve_order(self._base, self._order())

    def _order(self) -> SortOrder:
        return SortOrder(1, self._fields) if self._fields else UNSORTED_SORT_ORDER

    def commit(self) -> SortOrder:
        """Commit the order (inside a transaction: queue it) and return it with its id. Nothing
        is committed when it is already the table's default order."""
        self._check_open()
        self._done = True
        order = self._order()
        current = self._base.sort_order()
        if current.same_order(order):
            return current
        if self._transaction is not None:
            expected = resolve_order(self._base, order).order_id
            self._transaction._queue(
                _SortOrderChange(self._table.io, order, tuple(self._terms), expected_order_id=expected)
            )
            return self._transaction._working.sort_order()
        action = _SortOrderChange(self._table.io, order, tuple(self._terms), expected_order_id=None)
        metadata, location = commit_actions(
            self._table.catalog, self._table.identifier, self._table.metadata, [action]
        )
        self._table.metadata = metadata
        self._table.metadata_location = location
        return metadata.sort_order()

    def abandon(self) -> None:
        self._done = True

    def __enter__(self) -> ReplaceSortOrder:
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
        terms = ", ".join(describe_sort_field(self._schema, f) for f in self._fields)
        return f"ReplaceSortOrder({self._table.name!r}, [{terms}])"


def replace_sort_order(
    table: Table,
    terms: Iterable[SortTermLike],
    *,
    case_sensitive: bool,
    transaction: Transaction | None = None,
) -> ReplaceSortOrder | SortOrder:
    """What ``table.replace_sort_order(*terms)`` and ``tx.replace_sort_order(*terms)`` do: with
    terms, build and commit (or queue) at once and return the order; without, the builder."""
    builder = ReplaceSortOrder(table, case_sensitive=case_sensitive, transaction=transaction)
    items = list(terms)
    if not items:
        return builder
    return builder.add(*items).commit()
