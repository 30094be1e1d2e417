"""Metadata tables and changelogs through the ``icefloe`` Spark data source.

::

    spark.read.format("icefloe").load("ns.t.files")                  # any metadata table
    spark.read.format("icefloe").option("snapshot-id", sid).load("ns.t.entries")
    spark.read.format("icefloe").option("start-snapshot-id", a).load("ns.t.changes")
    icefloe.spark.read(spark, "ns.t.snapshots")

A name ``ns.t.<x>`` is a metadata table when ``ns.t`` is a table, ``x`` is one of Iceberg Java's
metadata table names (or ``changes``), and no table ``ns.t.x`` exists. The rows are built on the
driver from table metadata (metadata tables are small; ``position_deletes`` reads the position
delete files) and handed to the executors as Arrow IPC bytes.

Changelog options: ``start-snapshot-id`` (exclusive), ``end-snapshot-id`` (inclusive),
``identifier-columns`` (comma-separated), ``compute-updates``, ``net-changes``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import datasource as ds

from icefloe.errors import NoSuchTableError, ValidationError
from icefloe.spark.types import to_spark_schema
from icefloe.spec.schema import Schema
from icefloe.spec.types import IntegerType, LongType, NestedField, StringType
from icefloe.table.inspect import METADATA_TABLES

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType as SparkStructType

    from icefloe.catalog import Catalog
    from icefloe.table import Table

__all__ = ["CHANGES", "ArrowTableReader", "MetadataTarget", "resolve_metadata_target"]

CHANGES = "changes"


@dataclass(frozen=True)
class MetadataTarget:
    table: Table
    name: str  # a metadata table name or "changes"


def resolve_metadata_target(catalog: Catalog, identifier: str) -> MetadataTarget | None:
    """The metadata table ``identifier`` names, or None when it names an ordinary table."""
    base, _, last = identifier.rpartition(".")
    if not base or last.lower() not in (*METADATA_TABLES, CHANGES):
        return None
    try:
        catalog.load_table(identifier)
        return None  # a real table of that name wins
    except NoSuchTableError:
        pass
    return MetadataTarget(catalog.load_table(base), last.lower())


def _bool(options: Mapping[str, str], key: str) -> bool | None:
    text = options.get(key)
    if text is None:
        return None
    if text.lower() not in ("true", "false"):
        raise ValidationError(f"option {key!r} must be true or false, got {text!r}")
    return text.lower() == "true"


def _int(options: Mapping[str, str], key: str) -> int | None:
    text = options.get(key)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"option {key!r} must be an integer, got {text!r}") from None


def changelog_schema(projection: Schema) -> Schema:
    """The changelog's Iceberg schema: the data columns and the three changelog columns."""
    top = max(projection.highest_field_id, 0)
    return Schema(
        *projection.fields,
        NestedField(top + 1, "_change_type", StringType(), True),
        NestedField(top + 2, "_change_ordinal", IntegerType(), True),
        NestedField(top + 3, "_commit_snapshot_id", LongType(), True),
    )


def build_metadata_rows(target: MetadataTarget, options: Mapping[str, str]) -> tuple[Schema, pa.Table]:
    """The Iceberg schema and the Arrow rows of ``target``."""
    table = target.table
    if target.name == CHANGES:
        ids = options.get("identifier-columns")
        scan = table.changelog_scan(
            _int(options, "start-snapshot-id"),
            _int(options, "end-snapshot-id"),
            identifier_columns=[c.strip() for c in ids.split(",") if c.strip()] if ids else None,
            compute_updates=_bool(options, "compute-updates"),
            net_changes=bool(_bool(options, "net-changes")),
        )
        return changelog_schema(scan.projection()), scan.to_arrow()
    snapshot_id = _int(options, "snapshot-id")
    inspect = table.inspect
    return inspect.schema(target.name), inspect.table(target.name, snapshot_id=snapshot_id)


def metadata_spark_schema(target: MetadataTarget, options: Mapping[str, str]) -> SparkStructType:
    if target.name == CHANGES:
        return to_spark_schema(changelog_schema(target.table.schema()))
    return to_spark_schema(target.table.inspect.schema(target.name))


class ArrowTablePartition(ds.InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class ArrowTableReader(ds.DataSourceReader):
    """Serves rows computed on the driver (Arrow IPC bytes) in Spark's Arrow layout."""

    def __init__(self, schema: Schema, rows: pa.Table, spark_schema: SparkStructType) -> None:
        import pyarrow as pa

        self.schema = schema
        self.spark_schema = spark_schema
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as writer:
            writer.write_table(rows)
        self.ipc = sink.getvalue().to_pybytes()

    def partitions(self) -> Sequence[ds.InputPartition]:
        return [ArrowTablePartition(0)]

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from icefloe.arrow.spark_layout import to_spark_batch

        target = to_arrow_schema(self.spark_schema, timezone="UTC")
        with pa.ipc.open_stream(self.ipc) as stream:
            for batch in stream:
                if batch.num_rows:
                    yield to_spark_batch(batch, self.schema, target)
