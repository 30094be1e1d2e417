"""Every error icefloe raises, under one root.

The tree::

    IcefloeError
    ├── ValidationError            bad input from the caller; nothing was changed
    │   ├── SchemaError            an invalid schema, type or field reference
    │   │   └── SchemaMismatchError    data does not fit the table's schema
    │   ├── ExpressionError        a filter that does not parse or does not bind
    │   ├── PartitionSpecError     an invalid partition spec or transform
    │   ├── SortOrderError         an invalid sort order
    │   └── ConfigError            invalid or missing configuration
    ├── InvalidMetadataError       metadata that breaks the spec's invariants (read or built)
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
    │       └── MissingFilesError             files the operation removes or references are gone
    ├── UnsupportedFeatureError    valid Iceberg that icefloe cannot handle yet
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
    "ExpressionError",
    "FileIOError",
    "IcefloeError",
    "InvalidMetadataError",
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


class MissingFilesError(ConflictError):
    """Files this operation removes or references were removed by a concurrent commit."""


class UnsupportedFeatureError(IcefloeError, NotImplementedError):
    """Valid Iceberg that this version of icefloe cannot handle yet."""


class FileIOError(IcefloeError, OSError):
    """A file could not be read, written or deleted."""
