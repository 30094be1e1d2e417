"""``table.incremental_append_scan(...)``: the rows appended between two snapshots, as a scan.

It reads like :class:`~icefloe.table.scan.DataScan` (``to_arrow``, ``to_batches``, ``to_pandas``,
``count``, ``filter``, ``select``) with the table's current schema; planning is
:func:`icefloe.scan.incremental.plan_incremental_appends` (Iceberg Java's ``IncrementalAppendScan``:
``from`` exclusive, ``to`` inclusive, only ``append`` snapshots, delete files not applied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe.scan.incremental import plan_incremental_appends, snapshots_between
from icefloe.table.scan import DataScan

if TYPE_CHECKING:
    from icefloe.scan.task import FileScanTask
    from icefloe.table._table import Table

__all__ = ["IncrementalAppendScan"]


class IncrementalAppendScan(DataScan):
    def __init__(
        self,
        table: Table,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        **kwargs: Any,
    ) -> None:
        for key in ("snapshot_id", "ref", "as_of_timestamp"):
            if kwargs.get(key) is not None:
                raise TypeError(f"an incremental scan reads a range of snapshots; {key} does not apply")
        super().__init__(table, **kwargs)
        self.from_snapshot_id = from_snapshot_id
        self.to_snapshot_id = to_snapshot_id
        # A bad range fails here, before anything is read.
        snapshots_between(table.metadata, from_snapshot_id, to_snapshot_id)

    def _copy(self, **changes: Any) -> IncrementalAppendScan:
        args: dict[str, Any] = {
            "row_filter": self.row_filter,
            "selected_fields": self.selected_fields,
            "case_sensitive": self.case_sensitive,
            "limit": self.limit,
            "options": self.options,
        }
        args.update(changes)
        return IncrementalAppendScan(self.table, self.from_snapshot_id, self.to_snapshot_id, **args)

    def use_ref(self, ref: str) -> DataScan:
        raise TypeError("an incremental scan reads a range of snapshots, not a ref")

    def plan_files(self) -> list[FileScanTask]:
        return plan_incremental_appends(
            self.table.io,
            self.table.metadata,
            self.from_snapshot_id,
            self.to_snapshot_id,
            self.row_filter,
            schema=self.schema(),
            case_sensitive=self.case_sensitive,
        )
