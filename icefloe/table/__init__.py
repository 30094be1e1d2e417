"""Table handles, scans and transactions: the layer users hold."""

from icefloe.table._table import Table
from icefloe.table.changelog import ChangelogScan
from icefloe.table.incremental import IncrementalAppendScan
from icefloe.table.inspect import InspectTable
from icefloe.table.manage_snapshots import ManageSnapshots
from icefloe.table.replace_sort_order import ReplaceSortOrder
from icefloe.table.scan import DataScan
from icefloe.table.transaction import Transaction
from icefloe.table.update_schema import UpdateSchema
from icefloe.table.update_spec import UpdateSpec

__all__ = [
    "ChangelogScan",
    "DataScan",
    "IncrementalAppendScan",
    "InspectTable",
    "ManageSnapshots",
    "ReplaceSortOrder",
    "Table",
    "Transaction",
    "UpdateSchema",
    "UpdateSpec",
]
