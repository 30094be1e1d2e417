"""Iceberg's metadata columns on Spark: ``_file``, ``_pos``, ``_spec_id`` and ``_partition``, and
on format v3 tables the row lineage columns ``_row_id`` and ``_last_updated_sequence_number``.

Row-level changes find the rows they change by (data file, position); users can select the same
columns with ``icefloe.spark.read(..., metadata_columns=[...])``. Both read paths give them::

    fast path (Spark's Parquet reader)            data source (icefloe's reader)
      _metadata.file_path -> canonical key          the planned task: path, spec id, partition
      _metadata.row_index -> _pos                   icefloe.arrow.positions: live rows + positions
      position delete files -> anti-join on         delete files applied by icefloe's reader
        (key, pos), read by Spark as well
      _file / _spec_id / _partition: a broadcast
        join with one row per planned data file

Spark spells ``_metadata.file_path`` as a URL-encoded, qualified URI (``file:/w/a%20b.parquet``),
while the table's metadata holds the path as written (``file:///w/a b.parquet``); both sides are
brought to one canonical key (:func:`path_key`, :func:`spark_path_key`) before they are compared.

``_partition`` is Iceberg Java's: a struct of every partition field of every spec of the table
(by field id, in spec order), with the transform's result type; fields a file's spec lacks are
null. An unpartitioned table has an empty struct.

The row lineage columns need each file's stored values, its ``first_row_id`` and data sequence
number (:mod:`icefloe.scan.row_lineage`): only the data source path gives them (icefloe's reader
fills them); a read that asks for them takes that path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from pyspark.sql import functions as F
from pyspark.sql import types as st

from icefloe.errors import ValidationError
from icefloe.scan.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, check_row_lineage
from icefloe.spec.schema import Schema
from icefloe.spec.types import NestedField, StructType, UUIDType
from icefloe.spec.values import to_python

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

    from icefloe.manifest import DataFile
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "FILE",
    "METADATA_COLUMNS",
    "PARTITION",
    "POS",
    "SPEC_ID",
    "check_lineage_columns",
    "check_metadata_columns",
    "lineage_columns",
    "metadata_spark_fields",
    "partition_struct",
    "path_key",
    "spark_path_key",
]

FILE = "_file"
POS = "_pos"
SPEC_ID = "_spec_id"
PARTITION = "_partition"
METADATA_COLUMNS = (FILE, POS, SPEC_ID, PARTITION, ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
LINEAGE_COLUMNS = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)

_FILE_PREFIX = re.compile(r"^file:/+")


def check_metadata_columns(names: Iterable[str] | None) -> list[str]:
    """The requested metadata columns, in the order given; unknown names are refused."""
    out: list[str] = []
    for n in names or ():
        if n not in METADATA_COLUMNS:
            raise ValidationError(
                f"{n!r} is not a metadata column",
                hint=f"metadata columns: {', '.join(METADATA_COLUMNS)}",
            )
        if n not in out:
            out.append(n)
    return out


def lineage_columns(names: Iterable[str]) -> list[str]:
    """The row lineage columns among ``names`` (in their order)."""
    return [n for n in names if n in LINEAGE_COLUMNS]


def check_lineage_columns(metadata: TableMetadata, names: Iterable[str]) -> None:
    """Row lineage columns exist on format v3 tables only (UnsupportedFeatureError below)."""
    wanted = lineage_columns(names)
    if wanted:
        check_row_lineage(metadata, f"reading {', '.join(wanted)}")


def partition_struct(metadata: TableMetadata) -> StructType:
    """Java's unified partition type: every partition field of every spec, by field id."""
    schema = metadata.schema()
    seen: dict[int, NestedField] = {}
    for spec in metadata.partition_specs:
        try:
            struct = spec.partition_type(schema)
        except Exception:  # a spec over a dropped column: its fields keep their last known types
            continue
        for f in struct.fields:
            seen.setdefault(f.field_id, NestedField(f.field_id, f.name, f.field_type, False))
    return StructType(*seen.values())


def partition_value(metadata: TableMetadata, struct: StructType, f: DataFile) -> dict[str, Any]:
    """The ``_partition`` value of data file ``f`` as Python objects (Spark's representation)."""
    spec = metadata.spec_by_id(f.spec_id)
    values = dict(zip((pf.field_id for pf in spec.fields), f.partition, strict=False))
    out: dict[str, Any] = {}
    for field in struct.fields:
        v = values.get(field.field_id)
        py = to_python(field.field_type, v) if v is not None else None
        out[field.name] = str(py) if py is not None and isinstance(field.field_type, UUIDType) else py
    return out


def metadata_spark_fields(metadata: TableMetadata, names: Sequence[str]) -> list[st.StructField]:
    """The Spark fields of the metadata columns ``names``."""
    from icefloe.spark.types import to_spark_type

    out = []
    for n in names:
        if n == FILE:
            out.append(st.StructField(FILE, st.StringType(), False))
        elif n == POS:
            out.append(st.StructField(POS, st.LongType(), False))
        elif n == SPEC_ID:
            out.append(st.StructField(SPEC_ID, st.IntegerType(), False))
        elif n in LINEAGE_COLUMNS:
            # null only for rows of files without a first_row_id (written before a v3 upgrade)
            out.append(st.StructField(n, st.LongType(), True))
        else:
            spark_type = to_spark_type(partition_struct(metadata))
            out.append(st.StructField(PARTITION, spark_type, True))
    return out


# --------------------------------------------------------------------------- path keys


def path_key(path: str) -> str:
    """The canonical key of a data file path as the table's metadata holds it."""
    if path.startswith("file:"):
        return _FILE_PREFIX.sub("file:/", path)
    if path.startswith("/"):
        return "file:" + path
    return path


def key_from_spark(value: str) -> str:
    """:func:`path_key` of a path as Spark spells it in ``_metadata.file_path`` (URL-encoded)."""
    return path_key(unquote(value))


def spark_spelling(path: str) -> str:
    """A path spelled so that :func:`key_from_spark` gives its :func:`path_key` (the key column
    of rows read by icefloe's own reader, which knows the table's spelling)."""
    return quote(path, safe=":/")


def spark_path_key(column: Column) -> Column:
    """The canonical key of Spark's ``_metadata.file_path`` (URL-encoded, qualified): ``%XX``
    decoded (a literal ``+`` stays one), then the same ``file:`` form as :func:`path_key`."""
    decoded = F.try_url_decode(F.replace(column, F.lit("+"), F.lit("%2B")))
    return F.regexp_replace(F.coalesce(decoded, column), r"^file:/+", "file:/")


def metadata_path_key(column: Column) -> Column:
    """:func:`path_key` as a Spark expression (for paths read from position delete files)."""
    return F.when(column.startswith("/"), F.concat(F.lit("file:"), column)).otherwise(
        F.regexp_replace(column, r"^file:/+", "file:/")
    )


# --------------------------------------------------------------------------- fast path


KEY = "__icefloe_file_key"
ROW_POS = "__icefloe_pos"
FILE_SIZE = "__icefloe_file_size"


def parquet_rows(
    spark: SparkSession, read_schema: st.StructType, tasks: Sequence[FileScanTask], with_size: bool = False
) -> DataFrame:
    """The live rows of ``tasks``' data files read by Spark's Parquet reader (``read_schema``
    with field ids), with the file as Spark spells it (``KEY``; :func:`key_from_spark` gives its
    key) and the position (``ROW_POS``) of each (and with ``with_size`` the file's length in
    bytes, ``FILE_SIZE``); position delete files are applied by an anti-join. Equality deletes
    are not supported here (the caller checks: :func:`parquet_deletes_supported`).

    The canonical key costs a URL decoding and a regular expression per row, so the anti-join
    matches on the position first and compares keys only for rows whose position some delete
    file lists."""
    from icefloe.manifest import DataFileContent

    paths = list(dict.fromkeys(t.file.file_path for t in tasks))
    df = spark.read.schema(read_schema).parquet(*paths)
    extra = [F.col("_metadata.file_size").alias(FILE_SIZE)] if with_size else []
    df = df.select(
        "*", F.col("_metadata.file_path").alias(KEY), F.col("_metadata.row_index").alias(ROW_POS), *extra
    )
    delete_paths = sorted(
        {d.file_path for t in tasks for d in t.delete_files if d.content == DataFileContent.POSITION_DELETES}
    )
    if delete_paths:
        schema = st.StructType(
            [st.StructField("file_path", st.StringType()), st.StructField("pos", st.LongType())]
        )
        deletes = spark.read.schema(schema).parquet(*delete_paths)
        deletes = deletes.select(
            metadata_path_key(F.col("file_path")).alias("__del_key"), F.col("pos").alias("__del_pos")
        )
        df = df.join(
            deletes,
            (df[ROW_POS] == deletes["__del_pos"]) & (spark_path_key(df[KEY]) == deletes["__del_key"]),
            "left_anti",
        )
    return df


def parquet_deletes_supported(tasks: Iterable[FileScanTask]) -> bool:
    """Whether the fast path can apply every delete file of ``tasks`` (position deletes in
    Parquet; not equality deletes nor deletion vectors)."""
    from icefloe.manifest import DataFileContent

    for t in tasks:
        for d in t.delete_files:
            if d.content != DataFileContent.POSITION_DELETES:
                return False
            if str(d.file_format).lower().rsplit(".", 1)[-1] != "parquet":
                return False
    return True


def files_frame(spark: SparkSession, metadata: TableMetadata, files: Iterable[DataFile]) -> DataFrame:
    """One row per data file: its canonical key, ``_file``, ``_spec_id`` and ``_partition``."""
    from icefloe.spark.types import to_spark_type

    struct = partition_struct(metadata)
    schema = st.StructType(
        [
            st.StructField(KEY, st.StringType(), False),
            st.StructField(FILE, st.StringType(), False),
            st.StructField(SPEC_ID, st.IntegerType(), False),
            st.StructField(PARTITION, to_spark_type(struct), True),
        ]
    )
    rows = [
        (path_key(f.file_path), f.file_path, f.spec_id, partition_value(metadata, struct, f))
        for f in {f.file_path: f for f in files}.values()
    ]
    return spark.createDataFrame(rows, schema)


def with_metadata_columns(
    df: DataFrame,
    spark: SparkSession,
    metadata: TableMetadata,
    tasks: Sequence[FileScanTask],
    names: Sequence[str],
) -> DataFrame:
    """``df`` (from :func:`parquet_rows`) with the requested metadata columns added."""
    if any(n != POS for n in names):
        files = files_frame(spark, metadata, (t.file for t in tasks))
        keyed = df.withColumn(KEY, spark_path_key(F.col(KEY)))
        df = keyed.join(F.broadcast(files), KEY, "left")
    out = df
    if POS in names:
        out = out.withColumn(POS, F.col(ROW_POS))
    return out


# --------------------------------------------------------------------------- data source path


def source_metadata_arrays(
    metadata: TableMetadata,
    task: FileScanTask,
    names: Sequence[str],
    positions: Any,
    n: int,
    target: Mapping[str, pa.DataType],
    lineage: Mapping[str, pa.Array] | None = None,
) -> list[pa.Array]:
    """The metadata columns ``names`` of ``n`` rows of ``task``'s file at ``positions``, as Arrow
    arrays of the Spark layout ``target`` (name -> Arrow type); the row lineage columns come
    from ``lineage`` (read and inherited by icefloe's reader)."""
    import numpy as np
    import pyarrow as pa

    out: list[pa.Array] = []
    for name in names:
        if name == FILE:
            out.append(pa.array([task.file.file_path], pa.string()).take(np.zeros(n, dtype=np.int64)))
        elif name == POS:
            out.append(pa.array(positions, pa.int64()))
        elif name == SPEC_ID:
            out.append(pa.array(np.full(n, task.file.spec_id, dtype=np.int32)))
        elif name in LINEAGE_COLUMNS:
            assert lineage is not None, "row lineage columns are read with the rows"
            out.append(lineage[name])
        else:
            value = partition_value(metadata, partition_struct(metadata), task.file)
            one = pa.array([value], type=target[PARTITION])
            out.append(one.take(np.zeros(n, dtype=np.int64)))
    return out


def partition_schema(metadata: TableMetadata) -> Schema:
    return Schema(*partition_struct(metadata).fields)
