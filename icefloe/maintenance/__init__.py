"""Table maintenance: compaction, delete-file and manifest rewrites, snapshot expiry, orphan files.

Every action has the shape of STYLE.md's "plan, execute, commit":

    plan     engine-free (which files, which groups; picklable), in this package
      -> execute  a runner: icefloe/arrow locally, icefloe/spark on executors (``spark=``)
      -> commit   a snapshot producer in icefloe/transaction, with its conflict checks and retries

``table.maintenance`` is the one entry point: ``table.maintenance.expire_snapshots(...)``,
``table.maintenance.rewrite_data_files(...)``, ... (docs/maintenance.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from icefloe._progress import ProgressCallback, report

if TYPE_CHECKING:
    from icefloe.maintenance.expire_snapshots import ExpireSnapshotsResult
    from icefloe.maintenance.orphan_files import RemoveOrphanFilesResult
    from icefloe.maintenance.rewrite_data_files import RewriteDataFilesResult
    from icefloe.maintenance.rewrite_manifests import RewriteManifestsResult
    from icefloe.maintenance.rewrite_position_deletes import RewritePositionDeletesResult
    from icefloe.table._table import Table

__all__ = ["TableMaintenance"]


class TableMaintenance:
    """The maintenance actions of one table; each runs locally, or on Spark when given ``spark=``."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"TableMaintenance({self._table.name})"

    def rewrite_data_files(
        self,
        strategy: str = "binpack",
        sort_order: Any = None,
        zorder_columns: Any = None,
        where: Any = None,
        options: Mapping[str, Any] | None = None,
        spark: Any = None,
        progress: ProgressCallback | None = None,
    ) -> RewriteDataFilesResult:
        """Compact data files (Iceberg Java's ``rewriteDataFiles``): small (or too big) files of
        each partition, with their deletes applied, rewritten into files of about
        ``target-file-size-bytes``, as they come (``"binpack"``), sorted by ``sort_order`` or the
        table's order (``"sort"``), or by the z-value of ``zorder_columns`` (``"zorder"``).
        ``where`` limits the files considered; ``options`` take Java's names and defaults.
        Commits a ``replace`` snapshot (docs/maintenance.md, "Compaction"). ``progress`` gets an
        :class:`icefloe.Progress` per stage (``plan``, then ``rewrite`` counting file groups)."""
        from icefloe.maintenance.rewrite_data_files import RewriteDataFiles

        action = RewriteDataFiles(self._table, strategy, sort_order, zorder_columns, where, options, spark)
        report(progress, "rewrite_data_files", "plan", 0, 1)
        plan = action.plan()
        groups = len(plan.groups)
        report(progress, "rewrite_data_files", "rewrite", 0, groups, "groups")
        result = action.execute(plan)
        report(progress, "rewrite_data_files", "rewrite", groups, groups, "groups")
        return result

    def rewrite_position_delete_files(
        self, where: Any = None, options: Mapping[str, Any] | None = None, spark: Any = None
    ) -> RewritePositionDeletesResult:
        """Merge small position delete files per partition and drop the deletes of data files
        that are gone (Iceberg Java's ``rewritePositionDeletes``; docs/maintenance.md)."""
        from icefloe.maintenance.rewrite_position_deletes import RewritePositionDeleteFiles

        return RewritePositionDeleteFiles(self._table, where, options, spark).execute()

    def rewrite_manifests(
        self,
        spark: Any = None,
        options: Mapping[str, Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> RewriteManifestsResult:
        """Cluster the manifests of the current spec by partition, at
        ``commit.manifest.target-size-bytes`` each (Iceberg Java's ``rewriteManifests``);
        on Spark the manifests are read by tasks (docs/maintenance.md). ``progress`` gets an
        :class:`icefloe.Progress` per stage (``plan``, then ``rewrite`` counting manifests)."""
        from icefloe.maintenance.rewrite_manifests import RewriteManifestsAction

        action = RewriteManifestsAction(self._table, spark, options)
        report(progress, "rewrite_manifests", "plan", 0, 1)
        plan = action.plan()
        replaced = len(plan.replaced)
        report(progress, "rewrite_manifests", "rewrite", 0, replaced, "manifests")
        result = action.execute(plan)
        report(progress, "rewrite_manifests", "rewrite", replaced, replaced, "manifests")
        return result

    def expire_snapshots(
        self,
        older_than: Any = None,
        retain_last: int | None = None,
        snapshot_ids: Iterable[int] | None = None,
        *,
        clean_expired_files: bool = True,
        dry_run: bool = False,
        spark: Any = None,
    ) -> ExpireSnapshotsResult:
        """Remove old snapshots and expired refs (Iceberg Java's ``RemoveSnapshots`` rules and
        the table's ``history.expire.*`` settings), then delete the files only they reached.

        ``older_than`` (epoch ms, datetime or ISO text; default now minus
        ``history.expire.max-snapshot-age-ms``, 5 days) and ``retain_last`` (default
        ``history.expire.min-snapshots-to-keep``, 1) apply to branches without their own
        settings; ``snapshot_ids`` are expired as well. Files are deleted only after the commit
        landed, and only those no remaining snapshot of any ref reaches; with
        ``clean_expired_files=False`` none are. ``dry_run`` commits nothing and returns the
        files that would be deleted. ``spark=`` reads manifests on Spark executors."""
        from icefloe.maintenance.expire_snapshots import expire_snapshots

        return expire_snapshots(
            self._table,
            older_than=older_than,
            retain_last=retain_last,
            snapshot_ids=snapshot_ids,
            clean_expired_files=clean_expired_files,
            dry_run=dry_run,
            spark=spark,
        )

    def remove_orphan_files(
        self,
        older_than: Any = None,
        location: str | None = None,
        *,
        dry_run: bool = False,
        spark: Any = None,
        equal_schemes: Mapping[str, str] | None = None,
        equal_authorities: Mapping[str, str] | None = None,
        prefix_mismatch_mode: str = "error",
    ) -> RemoveOrphanFilesResult:
        """Delete the files under ``location`` (default the table's location) that no snapshot,
        statistics or metadata file of the table references and whose modification time is
        older than ``older_than`` (default 3 days ago: files of writers in flight survive).
        Returns the orphan paths (deleted, or with ``dry_run`` only found). ``spark=`` lists and
        reads manifests on Spark executors (docs/maintenance.md)."""
        from icefloe.maintenance.orphan_files import remove_orphan_files

        return remove_orphan_files(
            self._table,
            older_than=older_than,
            location=location,
            dry_run=dry_run,
            spark=spark,
            equal_schemes=equal_schemes,
            equal_authorities=equal_authorities,
            prefix_mismatch_mode=prefix_mismatch_mode,
        )
