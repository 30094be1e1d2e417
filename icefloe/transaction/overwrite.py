"""Overwrite: remove data files (wholly matching a filter, or rewritten copy-on-write) and add
new ones in one snapshot. With the filter ``AlwaysTrue`` it is a full overwrite.

Which files to remove and what to add is decided by the caller from the starting snapshot (the
Arrow layer reads and rewrites partially matching files); this action commits that decision and
re-checks it against concurrent commits:

1. files to remove still exist                         (validate_deleted_files_exist)
2. serializable: no new data files match the filter     (validate_added_data_files)
3. no new delete files match the filter or apply to a removed file
                                                        (validate_no_new_delete_files,
                                                         validate_no_new_deletes_for_data_files)

Operation: ``delete`` when it only removes files, else ``overwrite`` (as Iceberg Java).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from icefloe.expressions import AlwaysTrue, BooleanExpression
from icefloe.manifest import DataFile
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._merging import _UNSET, MergingProducer
from icefloe.transaction.conflicts import (
    SERIALIZABLE,
    ValidationContext,
    validate_added_data_files,
    validate_deleted_files_exist,
    validate_no_new_delete_files,
    validate_no_new_deletes_for_data_files,
)

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["OverwriteFiles"]


class OverwriteFiles(MergingProducer):
    operation = Operation.OVERWRITE

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        *,
        add: Iterable[DataFile] = (),
        remove: Iterable[DataFile | str] = (),
        conflict_filter: BooleanExpression | None = None,
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
        self.add_data_files(add)
        self.remove_data_files(remove)
        self.conflict_filter: BooleanExpression = (
            conflict_filter if conflict_filter is not None else AlwaysTrue()
        )

    def checks(self, ctx: ValidationContext) -> None:
        validate_deleted_files_exist(ctx, self.removed_data_files)
        if ctx.isolation_level == SERIALIZABLE:
            validate_added_data_files(ctx, self.conflict_filter)
        validate_no_new_delete_files(ctx, self.conflict_filter)
        validate_no_new_deletes_for_data_files(
            ctx, [e.data_file for e in self.removed_entries] or self._known_removed()
        )

    def _known_removed(self) -> list[DataFile]:
        return [f for f in self.removed_data_files.values() if f is not None]

    def choose_operation(self) -> None:
        self.operation = (
            Operation.DELETE if not self.added_data_files and self.removed_entries else Operation.OVERWRITE
        )
