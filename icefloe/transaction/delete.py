"""Delete whole data files by metadata alone (no file is read or written).

Used when every row of each removed file matches the delete filter (the Arrow layer decides, from
partition values and column metrics); copy-on-write rewrites of partially matching files commit as
an :class:`~icefloe.transaction.overwrite.OverwriteFiles`, merge-on-read deletes as a
:class:`~icefloe.transaction.row_delta.RowDelta`. Delete files that only applied to removed data
files may be removed with them. Operation ``delete``.

Checks: files to remove still exist (validate_deleted_files_exist). New delete files for a
removed data file are no conflict: every row of it goes either way, and its file-scoped position
deletes are removed with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from icefloe.manifest import DataFile
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._merging import _UNSET, MergingProducer
from icefloe.transaction.conflicts import SERIALIZABLE, ValidationContext, validate_deleted_files_exist

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["DeleteFiles"]


class DeleteFiles(MergingProducer):
    operation = Operation.DELETE

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        *,
        remove: Iterable[DataFile | str] = (),
        remove_deletes: Iterable[DataFile | str] = (),
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        isolation_level: str = SERIALIZABLE,
        starting_snapshot: int | None = _UNSET,
    ) -> None:
        super().__init__(
            io,
            metadata,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owns_files=False,
            isolation_level=isolation_level,
            starting_snapshot=starting_snapshot,
        )
        self.remove_data_files(remove)
        self.remove_delete_files(remove_deletes)

    def checks(self, ctx: ValidationContext) -> None:
        # Removing a file a concurrent commit already removed would double-count the delete;
        # deleting rows whose file gained delete files meanwhile is harmless (they go too).
        validate_deleted_files_exist(
            ctx, self.removed_data_files, self.removed_delete_files, self.removed_dvs
        )
