"""Table handles, scans and transactions: the layer users hold."""

from icefloe.table._table import Table
from icefloe.table.scan import DataScan
from icefloe.table.transaction import Transaction

__all__ = ["DataScan", "Table", "Transaction"]
