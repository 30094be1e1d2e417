"""Snapshot producers (one table action per module), conflict checks and the
optimistic-concurrency commit loop."""

from icefloe.transaction._commit import CommitStats, RetryPolicy, commit_actions
from icefloe.transaction._merging import MergingProducer
from icefloe.transaction._producer import PendingChanges, SnapshotProducer
from icefloe.transaction.conflicts import SERIALIZABLE, SNAPSHOT, ValidationContext
from icefloe.transaction.delete import DeleteFiles
from icefloe.transaction.fast_append import FastAppend
from icefloe.transaction.merge_append import MergeAppend
from icefloe.transaction.overwrite import OverwriteFiles
from icefloe.transaction.replace_partitions import ReplacePartitions
from icefloe.transaction.rewrite_files import RewriteFiles
from icefloe.transaction.row_delta import RowDelta
from icefloe.transaction.summary import SnapshotSummaryBuilder

__all__ = [
    "SERIALIZABLE",
    "SNAPSHOT",
    "CommitStats",
    "DeleteFiles",
    "FastAppend",
    "MergeAppend",
    "MergingProducer",
    "OverwriteFiles",
    "PendingChanges",
    "ReplacePartitions",
    "RetryPolicy",
    "RewriteFiles",
    "RowDelta",
    "SnapshotProducer",
    "SnapshotSummaryBuilder",
    "ValidationContext",
    "commit_actions",
]
