"""The ``merge-schema`` write option: a DataFrame's new columns and wider types join the table.

::

    driver, writer():   Spark schema -> Iceberg types (the table's own type wherever Spark's type
                        is the one the table's column maps to: uuid/string, fixed/binary, ...)
                        -> union with the table's schema (Java's unionByNameWith; required
                        columns stay required) -> refused with a typed error before any task,
                        or the merged schema the executors write with (new field ids)
    executors:          data files written with the merged schema's field ids
    driver, commit():   the same union, queued in the commit's transaction before the files: one
                        atomic commit of schema and data. If the table's schema moved since
                        writer() (the files' ids could be wrong), ConflictError and the files go.

Iceberg Java commits the merged schema in writer() already, in its own commit; icefloe commits it
with the data, so a failed job leaves the schema as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import types as st

from icefloe.spark.types import to_iceberg_schema, to_spark_type
from icefloe.spec.schema import Schema
from icefloe.spec.types import IcebergType, ListType, MapType, NestedField, PrimitiveType, StructType

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table.transaction import Transaction

__all__ = ["MERGE_SCHEMA", "commit_merged_schema", "incoming_schema", "merge_for_write", "merge_requested"]

MERGE_SCHEMA = "merge-schema"
_TRUE = ("true", "1", "yes")


def merge_requested(options: Mapping[str, str]) -> bool:
    """Whether the write asks for ``merge-schema`` (also Spark's ``mergeSchema`` spelling)."""
    value = options.get(MERGE_SCHEMA, options.get("mergeschema", "false"))
    return str(value).strip().lower() in _TRUE


def incoming_schema(spark_schema: st.StructType, table_schema: Schema) -> Schema:
    """The Iceberg schema of a DataFrame for merging into ``table_schema``."""
    converted = to_iceberg_schema(spark_schema)
    struct = _adopt_struct(converted.as_struct(), spark_schema, table_schema.as_struct())
    return Schema(*struct.fields)


def _adopt_struct(struct: StructType, spark: st.StructType, partner: StructType | None) -> StructType:
    out = []
    for f, sf in zip(struct.fields, spark.fields, strict=True):
        pf = partner.field_by_name(f.name) if partner is not None else None
        t = _adopt(f.field_type, sf.dataType, pf.field_type if pf is not None else None)
        out.append(NestedField(f.field_id, f.name, t, f.required, f.doc))
    return StructType(*out)


def _adopt(t: IcebergType, spark: st.DataType, partner: IcebergType | None) -> IcebergType:
    if isinstance(t, StructType) and isinstance(partner, StructType) and isinstance(spark, st.StructType):
        return _adopt_struct(t, spark, partner)
    if isinstance(t, ListType) and isinstance(partner, ListType) and isinstance(spark, st.ArrayType):
        element = _adopt(t.element_type, spark.elementType, partner.element_type)
        return ListType(t.element_id, element, t.element_required)
    if isinstance(t, MapType) and isinstance(partner, MapType) and isinstance(spark, st.MapType):
        key = _adopt(t.key_type, spark.keyType, partner.key_type)
        value = _adopt(t.value_type, spark.valueType, partner.value_type)
        return MapType(t.key_id, key, t.value_id, value, t.value_required)
    if isinstance(partner, PrimitiveType) and to_spark_type(partner) == spark:
        return partner
    return t


def merge_for_write(
    metadata: TableMetadata, spark_schema: st.StructType, options: Mapping[str, str]
) -> tuple[TableMetadata, str | None]:
    """With ``merge-schema``: the metadata the executors write with (the merged schema, not
    committed) and the plan :func:`commit_merged_schema` commits; else ``metadata`` and None."""
    from icefloe.table.update_schema import merged_metadata

    if not merge_requested(options):
        return metadata, None
    incoming = incoming_schema(spark_schema, metadata.schema())
    merged = merged_metadata(metadata, incoming)
    if merged is metadata:
        return metadata, None
    plan = {
        "incoming": incoming.to_json(),
        "schema_id": metadata.current_schema_id,
        "last_column_id": metadata.last_column_id,
    }
    return merged, json.dumps(plan)


def commit_merged_schema(tx: Transaction, plan: str) -> None:
    """Queue the planned schema change in the job's commit transaction (before its files)."""
    from icefloe.table.update_schema import queue_merged_schema

    p = json.loads(plan)
    queue_merged_schema(tx, Schema.from_json(p["incoming"]), int(p["schema_id"]), int(p["last_column_id"]))
