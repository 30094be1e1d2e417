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
from icefloe.transaction._merging import _UNSET, MergingProducer
from icefloe.transaction.conflicts import SERIALIZABLE, ValidationContext, validate_added_data_files

if TYPE_CHECKING:
    from icefloe.io import FileIO
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
        owns_files: bool = True,
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

    def checks(self, ctx: ValidationContext) -> None:
        if ctx.isolation_level == SERIALIZABLE:
            validate_added_data_files(ctx, AlwaysTrue(), partitions=self.drop_partitions)

    def summary(self, base: TableMetadata, parent: Snapshot | None) -> dict[str, str]:
        # Iceberg Java marks dynamic overwrites; cherry-pick relies on it.
        return {**super().summary(base, parent), "replace-partitions": "true"}
