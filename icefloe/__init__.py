"""icefloe: Apache Iceberg tables from Python, with Apache Spark pipelines.

The public API::

    import icefloe
    cat = icefloe.load_catalog("prod", uri="sqlite:///catalog.db", warehouse="file:///wh")
    t = cat.create_table("sales.orders", schema=arrow_schema, partition_by=["day(ts)"])
    t.append(arrow_table)
    t.scan(row_filter="id >= 10", selected_fields=("id", "ts")).to_arrow()
"""

from icefloe._progress import Progress, ProgressCallback
from icefloe.catalog import Catalog, load_catalog
from icefloe.errors import (
    AlreadyExistsError,
    CommitError,
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    ConflictError,
    ConflictingDataFilesError,
    ConflictingDeleteFilesError,
    ConflictingDeletionVectorsError,
    CorruptFileError,
    ExpressionError,
    FileIOError,
    IcefloeError,
    IncompatibleSchemaChangeError,
    InvalidMetadataError,
    MissingDependencyError,
    MissingFilesError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NotFoundError,
    PartitionSpecError,
    SchemaError,
    SchemaMismatchError,
    SortOrderError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.expressions import parse as parse_filter
from icefloe.spec.partition import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.types import NestedField
from icefloe.table import (
    ChangelogScan,
    DataScan,
    IncrementalAppendScan,
    InspectTable,
    ManageSnapshots,
    ReplaceSortOrder,
    Table,
    Transaction,
    UpdateSchema,
    UpdateSpec,
)

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError",
    "Catalog",
    "ChangelogScan",
    "CommitError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "ConfigError",
    "ConflictError",
    "ConflictingDataFilesError",
    "ConflictingDeleteFilesError",
    "ConflictingDeletionVectorsError",
    "CorruptFileError",
    "DataScan",
    "ExpressionError",
    "FileIOError",
    "IcefloeError",
    "IncompatibleSchemaChangeError",
    "IncrementalAppendScan",
    "InspectTable",
    "InvalidMetadataError",
    "ManageSnapshots",
    "MissingDependencyError",
    "MissingFilesError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NestedField",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NotFoundError",
    "NullOrder",
    "PartitionField",
    "PartitionSpec",
    "PartitionSpecError",
    "Progress",
    "ProgressCallback",
    "ReplaceSortOrder",
    "Schema",
    "SchemaError",
    "SchemaMismatchError",
    "SortDirection",
    "SortField",
    "SortOrder",
    "SortOrderError",
    "Table",
    "TableAlreadyExistsError",
    "Transaction",
    "UnsupportedFeatureError",
    "UpdateSchema",
    "UpdateSpec",
    "ValidationError",
    "__version__",
    "load_catalog",
    "parse_filter",
]
