"""Row delta: add data files and delete files (and remove delete files) in one snapshot; the
merge-on-read primitive behind DELETE, UPDATE and MERGE.

Checks, in order:

1. data files our delete files reference still exist      (validate_data_files_exist)
2. v3: no deletion vector was added concurrently for a data file we add one for
                                                           (validate_no_concurrent_deletion_vectors)
3. delete files we remove still exist                      (validate_deleted_files_exist; a
   replaced deletion vector by Puffin file and data file)
4. serializable: no new data files match the filter        (validate_added_data_files)
5. no new delete files match the filter                    (validate_no_new_delete_files) —
   at both isolation levels, for DELETE as for UPDATE/MERGE (see conflicts.py)

Deletion vectors (v3): a new vector for a data file replaces its earlier one (and the file-scoped
position delete files folded into it); the writer (:mod:`icefloe.arrow.deletion_vectors`) names
those and they are removed here, in the same snapshot (``remove_delete_files``). Two vectors for
one data file in the same commit are refused.

Operation: ``delete`` when it adds only delete files, ``append`` when it adds only data files,
else ``overwrite``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from icefloe.expressions import AlwaysTrue, BooleanExpression
from icefloe.manifest import DataFile
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._merging import _UNSET, MergingProducer, deletion_vector_targets
from icefloe.transaction.conflicts import (
    SERIALIZABLE,
    ValidationContext,
    validate_added_data_files,
    validate_data_files_exist,
    validate_deleted_files_exist,
    validate_no_concurrent_deletion_vectors,
    validate_no_new_delete_files,
)

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["RowDelta"]


class RowDelta(MergingProducer):
    operation = Operation.OVERWRITE

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        *,
        add_data_files: Iterable[DataFile] = (),
        add_delete_files: Iterable[DataFile] = (),
        remove_delete_files: Iterable[DataFile | str] = (),
        referenced_data_files: Iterable[str] = (),
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
        self.add_data_files(add_data_files)
        self.add_delete_files(add_delete_files)
        self.remove_delete_files(remove_delete_files)
        refs = set(referenced_data_files)
        refs.update(f.referenced_data_file for f in self.added_delete_files if f.referenced_data_file)
        self.referenced_data_files = refs
        self.dv_data_files = deletion_vector_targets(self.added_delete_files)
        self.conflict_filter: BooleanExpression = (
            conflict_filter if conflict_filter is not None else AlwaysTrue()
        )

    def checks(self, ctx: ValidationContext) -> None:
        validate_data_files_exist(ctx, self.referenced_data_files)
        validate_no_concurrent_deletion_vectors(ctx, self.dv_data_files)
        validate_deleted_files_exist(
            ctx, self.removed_data_files, self.removed_delete_files, self.removed_dvs
        )
        if ctx.isolation_level == SERIALIZABLE:
            validate_added_data_files(ctx, self.conflict_filter)
        if self.added_delete_files or self.removed_delete_files or self.removed_dvs:
            validate_no_new_delete_files(ctx, self.conflict_filter)

    def choose_operation(self) -> None:
        if (self.added_delete_files or self.removed_entries) and not self.added_data_files:
            self.operation = Operation.DELETE
        elif self.added_data_files and not self.added_delete_files and not self.removed_entries:
            self.operation = Operation.APPEND
        else:
            self.operation = Operation.OVERWRITE
