"""Rewrite files: replace a set of data (and delete) files with files holding the same rows; the
primitive compaction needs. Operation ``replace``.

The new data files keep the starting snapshot's sequence number as their data sequence number
(unless asked otherwise): equality deletes committed after the rewrite started then still apply
to the rewritten rows, so a concurrent equality delete does not conflict. ``sequence_numbers``
pins single added files to another data sequence number (a rewrite of position delete files
keeps the newest one of the delete files it replaces, as Java's). Checks:

1. files to replace still exist                     (validate_deleted_files_exist)
2. no new delete files for the replaced data files  (validate_no_new_deletes_for_data_files;
   equality deletes ignored when the sequence number is kept)
3. v3, for the deletion vectors it adds (position deletes rewritten into vectors): the data files
   they reference still exist (validate_data_files_exist) and no vector was added concurrently
   for one of them (validate_no_concurrent_deletion_vectors): a data file has at most one
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.manifest import DataFile
from icefloe.spec.snapshot import MAIN_BRANCH, Operation
from icefloe.transaction._merging import _UNSET, MergingProducer, deletion_vector_targets
from icefloe.transaction.conflicts import (
    SERIALIZABLE,
    ValidationContext,
    validate_data_files_exist,
    validate_deleted_files_exist,
    validate_no_concurrent_deletion_vectors,
    validate_no_new_deletes_for_data_files,
)

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["RewriteFiles"]


class RewriteFiles(MergingProducer):
    operation = Operation.REPLACE

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        *,
        remove: Iterable[DataFile],
        add: Iterable[DataFile],
        remove_deletes: Iterable[DataFile] = (),
        add_deletes: Iterable[DataFile] = (),
        keep_sequence_number: bool = True,
        sequence_numbers: Mapping[str, int] | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        owns_files: bool = False,
        starting_snapshot: int | None = _UNSET,
    ) -> None:
        super().__init__(
            io,
            metadata,
            branch=branch,
            snapshot_properties=snapshot_properties,
            owns_files=owns_files,
            isolation_level=SERIALIZABLE,
            starting_snapshot=starting_snapshot,
        )
        self.replaced = list(remove)
        self.remove_data_files(self.replaced)
        self.remove_delete_files(remove_deletes)
        self.add_data_files(add)
        self.add_delete_files(add_deletes)
        if not self.removed_data_files and not self.removed_delete_files and not self.removed_dvs:
            raise ValidationError("a rewrite must replace at least one file", hint="pass remove=[...]")
        if keep_sequence_number and self.starting_snapshot_id is not None:
            self.data_sequence_number = metadata.snapshot_by_id(self.starting_snapshot_id).sequence_number
        self.keep_sequence_number = keep_sequence_number and self.data_sequence_number is not None
        # Rewritten delete files keep the newest data sequence number of the files they replace.
        self.added_sequence_numbers.update(sequence_numbers or {})
        self.dv_data_files = deletion_vector_targets(self.added_delete_files)

    def checks(self, ctx: ValidationContext) -> None:
        validate_deleted_files_exist(
            ctx, self.removed_data_files, self.removed_delete_files, self.removed_dvs
        )
        validate_no_new_deletes_for_data_files(
            ctx, self.replaced, ignore_equality_deletes=self.keep_sequence_number
        )
        if self.dv_data_files:
            validate_data_files_exist(ctx, self.dv_data_files)
            validate_no_concurrent_deletion_vectors(ctx, self.dv_data_files)
