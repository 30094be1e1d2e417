"""Table maintenance: compaction, delete-file and manifest rewrites, snapshot expiry, orphan files.

Every action has the shape of STYLE.md's "plan, execute, commit":

    plan     engine-free (which files, which groups; picklable), in this package
      -> execute  a runner: icefloe/arrow locally, icefloe/spark on executors (``spark=``)
      -> commit   a snapshot producer in icefloe/transaction, with its conflict checks and retries

``table.maintenance`` is the one entry point: ``table.maintenance.expire_snapshots(...)``,
``table.maintenance.rewrite_data_files(...)``, ... (docs/maintenance.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icefloe.table._table import Table

__all__ = ["TableMaintenance"]


class TableMaintenance:
    """The maintenance actions of one table; each runs locally, or on Spark when given ``spark=``."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"TableMaintenance({self._table.name})"
