"""Every error icefloe raises, under one root.

The tree::

    IcefloeError
    ├── ValidationError            bad input from the caller; nothing was changed
    │   ├── SchemaError            an invalid schema, type or field reference
    │   │   ├── SchemaMismatchError    data does not fit the table's schema
    │   │   └── IncompatibleSchemaChangeError  a schema change that old data or readers cannot follow
    │   ├── ExpressionError        a filter that does not parse or does not bind
    │   ├── PartitionSpecError     an invalid partition spec or transform
    │   ├── SortOrderError         an invalid sort order
    │   └── ConfigError            invalid or missing configuration
    ├── InvalidMetadataError       metadata that breaks the spec's invariants (read or built)
    │   └── CorruptFileError       a table file whose bytes cannot be decoded (path, file_kind)
    ├── NotFoundError
    │   ├── NoSuchNamespaceError
    │   ├── NoSuchTableError
    │   └── NoSuchSnapshotError    also unknown refs and timestamps before the first snapshot
    ├── AlreadyExistsError
    │   ├── NamespaceAlreadyExistsError
    │   └── TableAlreadyExistsError
    ├── NamespaceNotEmptyError
    ├── CommitError
    │   ├── CommitFailedError      the table moved under us; retryable
    │   ├── CommitStateUnknownError    the outcome is unknown; never clean up after it
    │   └── ConflictError          a concurrent commit invalidated this operation; not retryable
    │       ├── ConflictingDataFilesError     new data files match the operation's conflict filter
    │       ├── ConflictingDeleteFilesError   new deletes for data files the operation read/rewrote
    │       │   └── ConflictingDeletionVectorsError  a concurrent deletion vector for the same data file
    │       └── MissingFilesError             files the operation removes or references are gone
    ├── UnsupportedFeatureError    valid Iceberg that icefloe cannot handle yet
    ├── MissingDependencyError     an optional package is not installed (``extra`` names the extra)
    └── FileIOError                a file could not be read or written

Every error carries a human message, an optional ``hint`` telling the user what to do next,
free-form ``context`` fields, and a ``retryable`` flag that the commit retry loop honours.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExistsError",
    "CommitError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "ConfigError",
    "ConflictError",
    "ConflictingDataFilesError",
    "ConflictingDeleteFilesError",
    "ConflictingDeletionVectorsError",
    "CorruptFileError",
    "ExpressionError",
    "FileIOError",
    "IcefloeError",
    "IncompatibleSchemaChangeError",
    "InvalidMetadataError",
    "MissingDependencyError",
    "MissingFilesError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NotFoundError",
    "PartitionSpecError",
    "SchemaError",
    "SchemaMismatchError",
    "SortOrderError",
    "TableAlreadyExistsError",
    "UnsupportedFeatureError",
    "ValidationError",
]


class IcefloeError(Exception):
    """Root of every icefloe error.

    ``hint`` says what the caller can do about it; ``context`` holds the facts (table, column,
    snapshot id, ...) as fields so that programs need not parse the message.
    """

    retryable: bool = False

    def __init__(self, message: str, *, hint: str | None = None, **context: Any) -> None:
        self.message = message
        self.hint = hint
        self.context: dict[str, Any] = context
        super().__init__(message)

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\nHint: {self.hint}"
        return self.message


class ValidationError(IcefloeError, ValueError):
    """The caller's input is invalid. Nothing was changed."""


class SchemaError(ValidationError):
    """An invalid schema, type, or reference to a field."""


class SchemaMismatchError(SchemaError):
    """Data does not fit the table's schema (missing column, incompatible type, null in a required
    field). Raised before anything is written or committed."""


class IncompatibleSchemaChangeError(SchemaError):
    """A schema change that existing data, readers or the table's partitioning cannot follow:
    narrowing or changing a type beyond the spec's promotions, optional -> required, a required
    new column, deleting an identifier field or a column the partition spec or sort order uses.
    Refused before anything commits; ``column`` names the column. Adding a required column and
    making a column required can be allowed explicitly (``allow_incompatible_changes()``)."""


class ExpressionError(ValidationError):
    """A filter expression that does not parse, names an unknown column, or compares incompatible
    types."""


class PartitionSpecError(ValidationError):
    """An invalid partition spec, partition field or transform."""


class SortOrderError(ValidationError):
    """An invalid sort order."""


class ConfigError(ValidationError):
    """Invalid or missing configuration (catalog properties, config file, environment)."""


class InvalidMetadataError(IcefloeError):
    """Table metadata, a manifest or a manifest list that breaks the Iceberg spec."""


class CorruptFileError(InvalidMetadataError):
    """A file the table references exists and was read, but its bytes cannot be decoded as what
    the metadata says it is: truncated, damaged in the middle, empty, or another format altogether.
    Retrying cannot help; the file has to be restored or removed from the table.

    Context fields: ``path`` (the file's location; None when the text did not come from a file)
    and ``file_kind`` (one of :attr:`FILE_KINDS`: ``"data file"``, ``"position delete file"``,
    ``"equality delete file"``, ``"deletion vector"``, ``"manifest"``, ``"manifest list"``,
    ``"table metadata"``, ``"Puffin file"``).

    It is an :class:`InvalidMetadataError` (iceberg-rust's ``DataInvalid``), not a
    :class:`FileIOError`: the I/O worked and the content breaks the format, so code that treats
    ``OSError`` as "storage trouble, try again" must not catch it. Missing or unreadable files stay
    :class:`FileIOError` (``context["not_found"]`` tells a missing one).
    """

    FILE_KINDS = (
        "data file",
        "position delete file",
        "equality delete file",
        "deletion vector",
        "manifest",
        "manifest list",
        "table metadata",
        "Puffin file",
    )

    @classmethod
    def of(
        cls, path: str | None, file_kind: str, reason: str, *, hint: str | None = None
    ) -> CorruptFileError:
        """The error for ``file_kind`` at ``path`` whose decoder said ``reason``, with the hint
        that fits the kind of file unless ``hint`` is given."""
        where = f"{file_kind} {path!r}" if path else file_kind
        return cls(
            f"cannot decode {where}: {reason}",
            hint=hint if hint is not None else _CORRUPT_HINTS.get(file_kind),
            path=path,
            file_kind=file_kind,
        )


_RESTORE = "restore the file from a backup or a replica of the storage"
_CORRUPT_HINTS = {
    "data file": f"{_RESTORE}, or remove it from the table (Transaction.delete_files) and re-ingest "
    "its rows; its rows cannot be read as it is",
    "position delete file": f"{_RESTORE}; until then the data files it covers cannot be read, because "
    "rows it deletes would reappear",
    "equality delete file": f"{_RESTORE}; until then the data files it covers cannot be read, because "
    "rows it deletes would reappear",
    "deletion vector": f"{_RESTORE}; until then the data file it covers cannot be read, because rows it "
    "deletes would reappear",
    "manifest": f"{_RESTORE}, or roll the table back to a snapshot that does not use it "
    "(manage_snapshots().rollback_to); the files it lists cannot be planned",
    "manifest list": f"{_RESTORE}, or roll the table back to another snapshot "
    "(manage_snapshots().rollback_to)",
    "table metadata": f"{_RESTORE}, or point the catalog at an earlier metadata file with "
    "register_table(..., overwrite=True)",
}


class NotFoundError(IcefloeError, LookupError):
    """Something that was asked for does not exist."""


class NoSuchNamespaceError(NotFoundError):
    pass


class NoSuchTableError(NotFoundError):
    pass


class NoSuchSnapshotError(NotFoundError):
    """An unknown snapshot id or ref, or a timestamp before the table's first snapshot."""


class AlreadyExistsError(IcefloeError):
    pass


class NamespaceAlreadyExistsError(AlreadyExistsError):
    pass


class TableAlreadyExistsError(AlreadyExistsError):
    pass


class NamespaceNotEmptyError(IcefloeError):
    pass


class CommitError(IcefloeError):
    """A commit did not go through."""


class CommitFailedError(CommitError):
    """The table changed since it was read (the compare-and-swap lost, or a requirement no longer
    holds). Retrying on a refreshed table can succeed."""

    retryable = True


class CommitStateUnknownError(CommitError):
    """The catalog did not say whether the commit landed (timeout, lost connection). Files the
    commit wrote must not be deleted: they may be part of the table now."""


class ConflictError(CommitError):
    """Validation against what committed concurrently failed: re-applying the operation on the new
    table state would break its guarantees (lose a delete, resurrect a row, rewrite rows twice).
    Not retryable as is: the caller must re-read the table and decide again.

    Context fields: ``snapshot_id`` of the conflicting commit, ``operation`` of ours,
    ``isolation_level``, and the ``files`` involved."""


class ConflictingDataFilesError(ConflictError):
    """Data files added concurrently match the rows this operation read or replaces."""


class ConflictingDeleteFilesError(ConflictError):
    """Delete files were added concurrently for data files this operation read, rewrote or
    references."""


class ConflictingDeletionVectorsError(ConflictingDeleteFilesError):
    """A concurrent commit added a deletion vector for a data file this operation also writes one
    for (format v3 allows one deletion vector per data file: the two cannot both stand)."""


class MissingFilesError(ConflictError):
    """Files this operation removes or references were removed by a concurrent commit."""


class UnsupportedFeatureError(IcefloeError, NotImplementedError):
    """Valid Iceberg that this version of icefloe cannot handle yet."""


class MissingDependencyError(IcefloeError, ImportError):
    """A feature needs an optional package that is not installed. Context fields: ``module``
    (what could not be imported) and ``extra`` (the icefloe extra that installs it: the hint says
    ``pip install 'icefloe[<extra>]'``). It is an ``ImportError``, so code that already catches
    that keeps working."""


class FileIOError(IcefloeError, OSError):
    """A file could not be read, written or deleted."""
