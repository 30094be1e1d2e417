"""Replace partitions (dynamic partition overwrite): add data files and drop every live data file
in the (spec id, partition) tuples the new files touch. Operation ``overwrite``.

Unlike the other overwrites, the partitions are re-evaluated on every attempt's base: that is the
operation's meaning (whatever is in those partitions now is replaced). At serializable isolation
a data file committed concurrently into one of them is a conflict instead
(validate_added_data_files with the partition set).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from icefloe.expressions import AlwaysTrue
from icefloe.manifest import DataFile
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._manifest_filter import ManifestFilter
from icefloe.transaction._merging import _UNSET, MergingProducer
from icefloe.transaction.conflicts import SERIALIZABLE, ValidationContext, validate_added_data_files

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.manifest import ManifestEntry
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["ReplacePartitions"]


class ReplacePartitions(MergingProducer):
    operation = Operation.OVERWRITE

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        files: Iterable[DataFile],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        owns_files: bool = False,
        isolation_level: str = SERIALIZABLE,
        starting_snapshot: int | None = _UNSET,
    ) -> None:
        super().__init__(
            io,
            metadata,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owns_files=owns_files,
            isolation_level=isolation_level,
            starting_snapshot=starting_snapshot,
        )
        self.add_data_files(files)
        self.drop_partitions = {(f.spec_id, tuple(f.partition)) for f in self.added_data_files}
        # Java's BaseReplacePartitions: files of an unpartitioned spec replace the whole table, the
        # files of every other spec included (a table whose spec evolved to unpartitioned, say)
        specs = metadata.partition_specs_by_id
        self.replace_all = bool(self.added_data_files) and all(
            f.spec_id in specs and specs[f.spec_id].is_unpartitioned() for f in self.added_data_files
        )

    def _should_remove_data(self, e: ManifestEntry) -> bool:
        return self.replace_all or super()._should_remove_data(e)

    def _filters(self) -> tuple[ManifestFilter, ManifestFilter]:
        if not self.replace_all:
            return super()._filters()
        if self._data_filter is None or self._delete_filter is None:
            # every live data file goes, and with it every delete file (Java's deleteByRowFilter(true))
            self._data_filter, self._delete_filter = (
                ManifestFilter(self.io, self.snapshot_id, self.new_manifest_path, lambda e: True)
                for _ in range(2)
            )
        return self._data_filter, self._delete_filter

    def checks(self, ctx: ValidationContext) -> None:
        if ctx.isolation_level == SERIALIZABLE:
            partitions = None if self.replace_all else self.drop_partitions
            validate_added_data_files(ctx, AlwaysTrue(), partitions=partitions)

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        # Iceberg Java marks dynamic overwrites; cherry-pick relies on it.
        return {**super().summary(base, parent), "replace-partitions": "true"}
