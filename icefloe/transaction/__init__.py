"""Snapshot producers (one table action per module) and the optimistic-concurrency commit loop."""

from icefloe.transaction._commit import CommitStats, RetryPolicy, commit_actions
from icefloe.transaction._producer import PendingChanges, SnapshotProducer
from icefloe.transaction.fast_append import FastAppend
from icefloe.transaction.summary import SnapshotSummaryBuilder

__all__ = [
    "CommitStats",
    "FastAppend",
    "PendingChanges",
    "RetryPolicy",
    "SnapshotProducer",
    "SnapshotSummaryBuilder",
    "commit_actions",
]
