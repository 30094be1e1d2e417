"""The native write path of ``icefloe.spark.write``: Spark's own Parquet writer writes the files.

The data source (``df.write.format("icefloe")``) ships every row from the JVM to Python workers
as Arrow batches and writes Parquet there; on small machines that costs ~40% against a raw
``df.write.parquet``. When Spark's Parquet writer produces exactly the files Iceberg asks for, this
path lets it write them and keeps only the metadata work in Python, on the driver::

    driver: eligibility (below; else the data source writes)
      -> the table's columns with parquet.field.id metadata:        field ids, below
         + one partition-key column (the encoded partition tuple)   Iceberg transforms as Columns
      -> distribution and ordering (icefloe.spark.write's rules; the key first within a task)
      -> df.write.partitionBy(key).parquet(<data path>/spark-<uuid>)  codec, row-group, page size
         with spark.sql.parquet.fieldId.write.enabled, outputTimestampType=TIMESTAMP_MICROS and
         writeLegacyFormat=false set for the write and restored after it
      -> list the staging directory (Hadoop FileSystem)             the committed output, see below
      -> per file: footer -> record count, column sizes, value/null counts, bounds; the
         partition tuple decoded from the key directory name; field ids checked
      -> the data source's own commit (IcefloeWriter.commit): append | overwrite (all / filter)
         | dynamic; branch, WAP, snapshot properties, retries, files deleted on failure

How the field ids reach the files. Spark's writer takes them from the metadata of the written
columns. Where the DataFrame holds a nullable column for a required field, one projection checks
each such column for nulls (failing the task on one) and aliases every column with its id.
Otherwise the columns get their ids without a projection that computes anything (``_passthrough``:
a pass-through plan, used when the optimized plan keeps the ids, in practice for a cached
DataFrame), so that Spark's writer takes the rows as they come, as a raw ``df.write.parquet``
does; else the same aliasing projection. Either way every footer's ids are checked.

How the driver learns the files. The staging directory is new and unique to this write, and
Spark's commit protocol moves only committed task output into it before ``save`` returns (failed
and speculative attempts stay under ``_temporary``, which the job commit removes). So after a
successful save, a listing of that directory is exactly this write's files, provided the file
system lists consistently after a write. The path is taken only for the schemes Spark's own
Hadoop file systems serve with no settings of their own (local paths, ``file:``, ``hdfs:``,
``viewfs:``: the rule ``icefloe.spark.read``'s fast path uses) and all of these list
consistently; object stores (``s3://``, served by icefloe's FileIO with the catalog's settings)
always go through the data source.

How a file's partition is recovered exactly. Spark names the directory of a ``partitionBy``
column after its value, escaping some characters and writing empty strings as null. So the key
column is a text that needs no escaping: per partition field ``n`` (null) or ``v`` and the
upper-case hex of an exact text or byte form of the value (integers as 64-bit two's complement,
dates as days, timestamps as microseconds, strings as UTF-8 bytes, binary as is, decimals and
floating-point numbers as Spark's decimal text), joined by ``_``. A string or binary identity value
longer than 100 bytes would make the directory name too long: its token is ``h`` and the SHA-256
of the value, and the value is taken from the file footer's lower bound of that column (every row
of the file has it) after checking it hashes the same.

Eligible writes: tables of format version 2 with Parquet data files in a Hadoop-reachable
location and not the object-storage location layout; columns of boolean, int, long,
float, double, decimal, date, timestamp, timestamptz, string, binary and structs of those (Spark
writes no ``parquet.field.id`` for list elements and map keys/values, so lists and maps, and the
types Spark's writer encodes differently: uuid, fixed, time, nanosecond timestamps, are
written by the data source); a DataFrame whose columns have the table's names and Spark types
(no nullable column for a required field); no bloom filter columns; the options ``catalog``,
``branch``, ``wap-id``, ``overwrite-filter`` and ``partition-overwrite-mode`` only. Everything
else falls back to the data source, as does a write whose files turn out not to carry the field
ids (checked in every footer; the staged files are deleted first).

Metrics follow the table's metrics modes from the footers: column sizes, value and null counts,
and bounds of every type whose footer statistics are exact in Iceberg's order; float and double
columns get no bounds and no NaN counts (Parquet statistics of floating-point columns say
nothing about NaN, and nothing about signed zeros in Java's order): both are optional, so
readers just prune less on them. Spark writes one file per task and partition and does not roll
files by size: a table that sets ``write.target-file-size-bytes`` is written by the data source.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid as uuid_mod
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from icefloe.arrow.metrics import MetricsConfig, parquet_leaf_field_ids, row_group_start
from icefloe.errors import CommitStateUnknownError, IcefloeError, SchemaMismatchError
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.spark.session import session_confs
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from icefloe.spec.values import to_bytes, truncate_lower_bound, truncate_upper_bound
from icefloe.transforms import TransformKind

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from icefloe.spark.write import WriteRequirements
    from icefloe.spec.partition import PartitionField
    from icefloe.spec.schema import Schema
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import Table

__all__ = ["NativeFallback", "native_problem", "write_native"]

KEY_COLUMN = "__icefloe_partition"
_HADOOP_SCHEMES = ("", "file", "hdfs", "viewfs")
_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "uncompressed": "none", "none": "none"}
_OPTIONS = frozenset({"catalog", "branch", "wap-id", "overwrite-filter", "partition-overwrite-mode"})
_CONFS = {
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.writeLegacyFormat": "false",
}
#: hex characters of a token above which a string/binary identity value is hashed instead
_MAX_TOKEN_HEX = 200
_FOOTER_EXACT = (
    BooleanType,
    IntegerType,
    LongType,
    DateType,
    TimestampType,
    TimestamptzType,
    DecimalType,
    StringType,
    BinaryType,
)
_PRIMITIVES = (*_FOOTER_EXACT, FloatType, DoubleType)


class NativeFallback(IcefloeError):
    """The native path found, after Spark wrote its staged files, that they are not what Iceberg
    needs (deleted again); the caller writes through the data source instead."""


# --------------------------------------------------------------------------- eligibility


def _column_problem(f: NestedField, path: str, top: bool = True) -> str | None:
    t = f.field_type
    if f.required and (isinstance(t, StructType) or not top):
        # the struct expression that puts field ids on nested fields makes them nullable
        return f"column {path!r} is a required struct or a required field inside a struct"
    if isinstance(t, StructType):
        for child in t.fields:
            bad = _column_problem(child, f"{path}.{child.name}", top=False)
            if bad:
                return bad
        return None
    if not isinstance(t, _PRIMITIVES):
        return (
            f"column {path!r} has type {t}, which Spark's Parquet writer cannot write with "
            "Iceberg's encoding and field ids"
        )
    if f.initial_default is not None or f.write_default is not None:
        return f"column {path!r} has a default value"
    return None


def _spark_type_problem(spark_field: Any, target: Any, path: str, top: bool = False) -> str | None:
    """Whether the DataFrame field can be written as the table's field (a nullable top-level
    column of a primitive type for a required one: with a null check in the write)."""
    from pyspark.sql import types as st

    a, b = spark_field.dataType, target.dataType
    if spark_field.nullable and not target.nullable and (not top or isinstance(b, st.StructType)):
        return f"column {path!r} is nullable in the DataFrame but required in the table"
    if isinstance(b, st.StructType):
        if not isinstance(a, st.StructType) or [f.name for f in a.fields] != [f.name for f in b.fields]:
            return f"column {path!r} is not the table's struct"
        for fa, fb in zip(a.fields, b.fields, strict=True):
            bad = _spark_type_problem(fa, fb, f"{path}.{fb.name}")
            if bad:
                return bad
        return None
    if a != b:
        return f"column {path!r} is {a.simpleString()}, the table's is {b.simpleString()}"
    return None


def _scheme(location: str) -> str:
    return location.split("://", 1)[0].lower() if "://" in location else ""


def data_path(metadata: TableMetadata) -> str:
    return (metadata.properties.get("write.data.path") or f"{metadata.location.rstrip('/')}/data").rstrip("/")


def _partition_problem(schema: Schema, pf: PartitionField) -> str | None:
    if pf.transform.kind is TransformKind.VOID:
        return None
    source = schema.find_type(pf.source_id)
    kind = pf.transform.kind
    if kind is TransformKind.IDENTITY and isinstance(source, TimestampType):
        return f"partition field {pf.name!r} is the identity of a timestamp without zone"
    if kind is TransformKind.TRUNCATE and isinstance(source, StringType | BinaryType):
        width = getattr(pf.transform, "width", 0)
        if width * (8 if isinstance(source, StringType) else 2) > _MAX_TOKEN_HEX:
            return f"partition field {pf.name!r} truncates to {width}, too wide for a directory name"
    return None


def native_problem(
    spark: SparkSession, df: DataFrame, table: Table, options: Mapping[str, str]
) -> str | None:
    """Why this write must go through the data source, or None when Spark's Parquet writer can
    write it (module docstring)."""
    from icefloe.spark.types import to_spark_schema

    metadata = table.metadata
    if metadata.format_version != 2:
        return f"the table is format version {metadata.format_version}"
    if not hasattr(spark, "_jvm") or spark._jvm is None:
        return "the session has no JVM gateway (Spark Connect)"
    extra = sorted(k for k in options if k not in _OPTIONS and not k.startswith("catalog."))
    if extra:
        return f"the write options {extra} are handled by the data source"
    props = metadata.properties
    if props.get("write.format.default", "parquet").lower() != "parquet":
        return "the table's file format is not Parquet"
    if props.get("write.object-storage.enabled", "false").lower() == "true":
        return "the table uses the object-storage location layout"
    if "write.target-file-size-bytes" in props:
        return "the table sets write.target-file-size-bytes (Spark's writer does not roll files by size)"
    if any(k.startswith("write.parquet.bloom-filter-enabled.column.") for k in props):
        return "the table writes Parquet bloom filters"
    if props.get("write.parquet.compression-codec", "zstd").lower() not in _CODECS:
        return "the table's Parquet codec is not one Spark writes the same way"
    location = data_path(metadata)
    scheme = _scheme(location)
    if scheme not in _HADOOP_SCHEMES and not (len(scheme) == 1 and scheme.isalpha()):
        return f"the data path {location} is on {scheme}://, which icefloe's FileIO writes"
    schema = metadata.schema()
    for f in schema.fields:
        bad = _column_problem(f, f.name)
        if bad:
            return bad
    for pf in metadata.spec().fields:
        bad = _partition_problem(schema, pf)
        if bad:
            return bad
    target = to_spark_schema(schema)
    by_name = {f.name: f for f in df.schema.fields}
    if sorted(by_name) != sorted(f.name for f in target.fields):
        return "the DataFrame's columns are not the table's"
    for tf in target.fields:
        bad = _spark_type_problem(by_name[tf.name], tf, tf.name, top=True)
        if bad:
            return bad
    return None


# --------------------------------------------------------------------------- the key column


def _token(schema: Schema, pf: PartitionField) -> Column:
    from pyspark.sql import functions as F

    from icefloe.spark.write import transform_column

    if pf.transform.kind is TransformKind.VOID:
        return F.lit("n")
    source = schema.find_type(pf.source_id)
    result = pf.transform.result_type(source)
    value = transform_column(schema, pf.source_id, pf.transform)
    identity = pf.transform.kind is TransformKind.IDENTITY
    if identity and isinstance(source, DateType):
        value = F.unix_date(value)
    elif identity and isinstance(source, TimestamptzType):
        value = F.unix_micros(value)
    if isinstance(result, StringType | BinaryType):
        text = F.hex(value)
        token = F.concat(F.lit("v"), text)
        if identity:
            hashed = F.concat(F.lit("h"), F.upper(F.sha2(value, 256)))
            token = F.when(F.length(text) > _MAX_TOKEN_HEX, hashed).otherwise(token)
    elif isinstance(result, DecimalType | FloatType | DoubleType):
        token = F.concat(F.lit("v"), F.hex(value.cast("string")))
    else:
        token = F.concat(F.lit("v"), F.hex(value.cast("long")))
    return F.when(value.isNull(), F.lit("n")).otherwise(token)


def key_column(schema: Schema, fields: tuple[PartitionField, ...]) -> Column:
    from pyspark.sql import functions as F

    return F.concat_ws("_", *[_token(schema, pf) for pf in fields])


def _decode_token(token: str, t: IcebergType) -> tuple[bool, Any]:
    """(hashed, value): the partition value of ``token`` of result type ``t``; a hashed token
    gives the hex digest to check against the footer."""
    if token == "n":
        return False, None
    kind, text = token[0], token[1:]
    if kind == "h":
        return True, text.lower()
    if kind != "v":
        raise NativeFallback(f"unexpected partition token {token!r}")
    if not isinstance(t, StringType | BinaryType | DecimalType | FloatType | DoubleType):
        n = int(text, 16)  # Spark's hex of a long: no leading zeros, two's complement if negative
        if n >= 1 << 63:
            n -= 1 << 64
        return False, bool(n) if isinstance(t, BooleanType) else n
    raw = bytes.fromhex(text)
    if isinstance(t, StringType):
        return False, raw.decode("utf-8")
    if isinstance(t, BinaryType):
        return False, raw
    if isinstance(t, DecimalType):
        value = Decimal(raw.decode("ascii"))
        return False, value.quantize(Decimal(1).scaleb(-t.scale))
    if isinstance(t, FloatType):
        return False, float(np.float32(raw.decode("ascii")))
    return False, float(raw.decode("ascii"))


# --------------------------------------------------------------------------- footers -> DataFiles


@dataclass
class _Staged:
    rel: str  # path under the staging directory
    size: int


def _leaf_field_ids(arrow_schema: Any) -> list[int | None]:
    out: list[int | None] = []

    def walk(f: Any) -> None:
        import pyarrow as pa

        if pa.types.is_struct(f.type):
            for i in range(f.type.num_fields):
                walk(f.type.field(i))
            return
        meta = f.metadata or {}
        fid = meta.get(b"PARQUET:field_id")
        out.append(int(fid) if fid is not None else None)

    for f in arrow_schema:
        walk(f)
    return out


def _min_max(t: PrimitiveType, stats: Any) -> tuple[Any, Any]:
    if isinstance(t, StringType | DecimalType):
        return stats.min, stats.max
    return stats.min_raw, stats.max_raw


def data_file(
    table: Table,
    path: str,
    size: int,
    partition_tokens: list[str],
    config: MetricsConfig,
    sort_order_id: int,
) -> DataFile:
    """The DataFile of one file Spark wrote, from its footer (module docstring)."""
    metadata = table.metadata
    schema, spec = metadata.schema(), metadata.spec()
    with table.io.new_input(path).open() as stream:
        meta = pq.read_metadata(stream)
    leaf_ids = parquet_leaf_field_ids(schema)
    found_ids = _leaf_field_ids(meta.schema.to_arrow_schema())
    if found_ids != leaf_ids:
        raise NativeFallback(
            f"{path} was written without the table's field ids (columns have {found_ids}, not {leaf_ids})"
        )
    column_sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    bounds: dict[int, list[Any]] = {}
    unbounded: set[int] = set()
    split_offsets = []
    types = {fid: schema.find_type(fid) for fid in leaf_ids}
    for r in range(meta.num_row_groups):
        rg = meta.row_group(r)
        split_offsets.append(row_group_start(rg))
        for i, fid in enumerate(leaf_ids):
            mode = config.mode(fid)
            if not mode.collects_counts:
                continue
            col = rg.column(i)
            column_sizes[fid] = column_sizes.get(fid, 0) + col.total_compressed_size
            stats = col.statistics
            if stats is None or not stats.has_null_count:
                raise NativeFallback(f"{path} has no null counts for field {fid}")
            values[fid] = values.get(fid, 0) + rg.num_rows
            nulls[fid] = nulls.get(fid, 0) + stats.null_count
            t = types[fid]
            if not mode.collects_bounds or not isinstance(t, _FOOTER_EXACT) or fid in unbounded:
                continue
            if not stats.has_min_max:
                if stats.null_count < rg.num_rows:
                    unbounded.add(fid)  # values without footer bounds (longer than the limit)
                continue
            assert isinstance(t, PrimitiveType)
            lo, hi = _min_max(t, stats)
            cur = bounds.get(fid)
            if cur is None:
                bounds[fid] = [lo, hi]
            else:
                cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for fid, (lo, hi) in bounds.items():
        if fid in unbounded:
            continue
        t = types[fid]
        mode = config.mode(fid)
        if mode.kind == "truncate" and isinstance(t, StringType | BinaryType):
            lo = truncate_lower_bound(t, lo, mode.length)
            hi = truncate_upper_bound(t, hi, mode.length)
        if lo is not None:
            lower[fid] = to_bytes(t, lo)
        if hi is not None:
            upper[fid] = to_bytes(t, hi)
    partition = _partition(schema, spec.fields, partition_tokens, meta, leaf_ids, path)
    return DataFile(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=meta.num_rows,
        file_size_in_bytes=size,
        column_sizes=column_sizes,
        value_counts=values,
        null_value_counts=nulls,
        nan_value_counts={},
        lower_bounds=lower,
        upper_bounds=upper,
        split_offsets=tuple(split_offsets),
        sort_order_id=sort_order_id,
        spec_id=spec.spec_id,
    )


def _partition(
    schema: Schema,
    fields: tuple[PartitionField, ...],
    tokens: list[str],
    meta: Any,
    leaf_ids: list[int],
    path: str,
) -> tuple[Any, ...]:
    if len(tokens) != len(fields):
        raise NativeFallback(f"{path}: {len(tokens)} partition tokens for {len(fields)} fields")
    out: list[Any] = []
    for pf, token in zip(fields, tokens, strict=True):
        result = pf.transform.result_type(schema.find_type(pf.source_id))
        try:
            hashed, value = _decode_token(token, result)
        except (ValueError, ArithmeticError) as e:
            raise NativeFallback(f"{path}: cannot decode partition token {token!r}: {e}") from e
        if hashed:
            value = _hashed_value(meta, leaf_ids.index(pf.source_id), result, value, path)
        out.append(value)
    return tuple(out)


def _hashed_value(meta: Any, leaf: int, t: IcebergType, digest: str, path: str) -> Any:
    """A long identity value: the footer's minimum of its column, checked against the digest."""
    found: Any = None
    for r in range(meta.num_row_groups):
        stats = meta.row_group(r).column(leaf).statistics
        if stats is not None and stats.has_min_max:
            found = stats.min if isinstance(t, StringType) else stats.min_raw
            break
    raw = found.encode("utf-8") if isinstance(found, str) else found
    if raw is None or hashlib.sha256(raw).hexdigest() != digest:
        raise NativeFallback(f"{path}: the footer does not give its long partition value")
    return found


# --------------------------------------------------------------------------- Hadoop file system


def _hadoop_fs(spark: SparkSession, location: str) -> tuple[Any, Any]:
    jvm: Any = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path  # type: ignore[union-attr]


def _list_staged(spark: SparkSession, staging: str) -> list[_Staged]:
    """The committed files of the staging directory (module docstring: why a listing is safe)."""
    fs, root = _hadoop_fs(spark, staging)
    if not fs.exists(root):
        return []
    prefix = fs.makeQualified(root).toString().rstrip("/") + "/"
    out: list[_Staged] = []
    it = fs.listFiles(root, True)
    while it.hasNext():
        status = it.next()
        full = status.getPath().toString()
        if not full.startswith(prefix):
            raise NativeFallback(f"{full} is not under {prefix}")
        rel = full[len(prefix) :]
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(("_", ".")):
            with contextlib.suppress(Exception):  # _SUCCESS, .crc checksums: not data
                fs.delete(status.getPath(), False)
            continue
        out.append(_Staged(rel, int(status.getLen())))
    return out


def delete_staging(spark: SparkSession, staging: str) -> None:
    """Delete the staging directory (this write's own, unique to it) with everything in it."""
    with contextlib.suppress(Exception):
        fs, root = _hadoop_fs(spark, staging)
        fs.delete(root, True)


# --------------------------------------------------------------------------- the write


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _with_id(col: Column, f: Any) -> Column:
    """``col`` as the field ``f`` (a StructField with its ``parquet.field.id`` metadata), struct
    fields rebuilt so that each nested field carries its own id too."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as st

    if isinstance(f.dataType, st.StructType):
        inner = F.struct(*[_with_id(col.getField(c.name), c) for c in f.dataType.fields])
        col = F.when(col.isNull(), F.lit(None)).otherwise(inner)
    return col.alias(f.name, metadata=f.metadata)


NULL_IN_REQUIRED = "icefloe: a null in required column "


def _not_null(column: str, spark_type: Any) -> Column:
    """``column`` failing the task on a null, typed non-nullable: a coalesce with a non-null
    literal that is never reached (the first branch raises where the value is null)."""
    import datetime as dt

    from pyspark.sql import functions as F
    from pyspark.sql import types as st

    zeros: dict[type, Any] = {
        st.StringType: "",
        st.BinaryType: bytearray(),
        st.BooleanType: False,
        st.DateType: dt.date(1970, 1, 1),
        st.TimestampType: dt.datetime(1970, 1, 1),
        st.TimestampNTZType: dt.datetime(1970, 1, 1),
        st.DecimalType: Decimal(0),
    }
    zero = zeros.get(type(spark_type), 0)
    col = F.col(_quoted(column))
    checked = F.when(col.isNull(), F.raise_error(F.lit(NULL_IN_REQUIRED + repr(column)))).otherwise(col)
    return F.coalesce(checked, F.lit(zero).cast(spark_type))


def _ids_on(spark_type: Any, target_type: Any) -> Any:
    """The DataFrame's ``spark_type`` (nullability included) with the metadata, field ids among
    it, of the table's ``target_type`` on every nested struct field."""
    from pyspark.sql import types as st

    if not isinstance(target_type, st.StructType):
        return spark_type
    return st.StructType(
        [
            st.StructField(a.name, _ids_on(a.dataType, b.dataType), a.nullable, b.metadata)
            for a, b in zip(spark_type.fields, target_type.fields, strict=True)
        ]
    )


def _passthrough(df: DataFrame, target: Any) -> DataFrame | None:
    """``df``'s columns in the table's order, carrying the table's field ids, as a projection that
    computes nothing: a logical ``Project`` of ``df``'s own attributes (same expression ids) with
    the metadata set, built on the JVM and marked analyzed so that the analyzer does not give the
    attributes new ids. The optimizer drops it, so Spark's writer takes the rows as they come
    instead of copying each one through a projection (for a cached DataFrame ~15% of the write's
    task CPU at TPC-H SF 1, where the raw writer reads the cache's rows with no copy).

    Used only when the optimized plan still carries the field ids (below); None otherwise, or when
    this Spark does not offer these (internal) classes as expected: the caller then projects with
    Columns. Either way every footer's field ids are checked after the write."""
    import json

    from pyspark.sql import DataFrame as SparkDataFrame

    spark = df.sparkSession
    jvm: Any = spark._jvm
    try:
        plan = df._jdf.queryExecution().analyzed()
        output = plan.output()
        attrs = {output.apply(i).name(): output.apply(i) for i in range(output.size())}
        by_name = {f.name: f for f in df.schema.fields}
        parse_type = jvm.org.apache.spark.sql.types.DataType.fromJson
        parse_meta = jvm.org.apache.spark.sql.types.Metadata.fromJson
        projected = jvm.java.util.ArrayList()
        for f in target.fields:
            attr = attrs[f.name].withMetadata(parse_meta(json.dumps(f.metadata)))
            if f.dataType.typeName() == "struct":
                attr = attr.withDataType(parse_type(_ids_on(by_name[f.name].dataType, f.dataType).json()))
            projected.add(attr)
        seq = jvm.org.apache.spark.api.python.PythonUtils.toSeq(projected)
        project = jvm.org.apache.spark.sql.catalyst.plans.logical.Project(seq, plan)
        project.setAnalyzed()
        jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, project)
        # The write plans from the optimized plan, where the projection is gone: the metadata
        # reaches the writer only when the optimizer moved it onto what replaces the projection,
        # as the cache manager does when the DataFrame is a cached one (the cached relation takes
        # the projection's attributes). Otherwise the ids would be lost: the Column projection.
        optimized = jdf.queryExecution().optimizedPlan().output()
        if optimized.size() != len(target.fields):
            return None
        for i, f in enumerate(target.fields):
            attr = optimized.apply(i)
            expected = parse_type(_ids_on(by_name[f.name].dataType, f.dataType).json())
            if attr.name() != f.name or json.loads(attr.metadata().json()) != f.metadata:
                return None
            if attr.dataType().json() != expected.json():
                return None
        return SparkDataFrame(jdf, spark)
    except Exception:  # any JVM/py4j surprise: the Column projection is always right
        return None


def _prepare(
    df: DataFrame, table: Table, requirements: WriteRequirements, num_partitions: int | None
) -> DataFrame:
    from pyspark.sql import functions as F

    from icefloe.spark.types import to_spark_schema
    from icefloe.spark.write import sort_column

    metadata = table.metadata
    schema = metadata.schema()
    fields = tuple(f for f in metadata.spec().fields)
    target = to_spark_schema(schema, with_field_ids=True)
    # native_problem made sure the DataFrame has the table's column names and exact types
    nullable = {f.name for f in df.schema.fields if f.nullable}
    guarded = {f.name for f in target.fields if not f.nullable and f.name in nullable}
    out = None if guarded else _passthrough(df, target)
    if out is None:
        # one projection: the table's column order, a null check for each required column the
        # DataFrame holds as nullable (which also makes it non-nullable: REQUIRED in the files),
        # the field ids as explicit aliases
        out = df.select(
            *[
                _with_id(_not_null(f.name, f.dataType) if f.name in guarded else F.col(_quoted(f.name)), f)
                for f in target.fields
            ]
        )
    ordering = [sort_column(schema, f) for f in requirements.ordering]
    if fields:
        out = out.withColumn(KEY_COLUMN, key_column(schema, fields))
    key = [F.col(KEY_COLUMN)] if fields else []
    if requirements.distribution_mode == "hash" and key:
        out = out.repartition(num_partitions, *key) if num_partitions else out.repartition(*key)
    elif requirements.distribution_mode == "range" and ordering:
        out = (
            out.repartitionByRange(num_partitions, *ordering)
            if num_partitions
            else out.repartitionByRange(*ordering)
        )
    if key or ordering:
        # the key first: Spark's file writer needs rows of one directory together and would
        # otherwise sort by the key itself, losing the table's order within each file
        out = out.sortWithinPartitions(*key, *ordering)
    return out


def write_native(
    df: DataFrame,
    table: Table,
    writer: Any,
    requirements: WriteRequirements,
    num_partitions: int | None = None,
) -> None:
    """Write ``df`` with Spark's Parquet writer and commit it with the data source's ``writer``
    (an ``IcefloeWriter`` made for this write). Raises NativeFallback, with nothing left behind,
    when the files turn out not to be what Iceberg needs."""
    from icefloe.arrow.writer import _options as write_options
    from icefloe.spark.source import IcefloeCommitMessage

    spark = df.sparkSession
    metadata = table.metadata
    options = write_options(metadata, None)
    staging = f"{data_path(metadata)}/spark-{uuid_mod.uuid4()}"
    out = _prepare(df, table, requirements, num_partitions)
    partitioned = bool(metadata.spec().fields)
    w = out.write.mode("errorifexists").option("compression", _CODECS[options.compression])
    w = w.option("parquet.block.size", str(options.row_group_size)).option(
        "parquet.page.size", str(options.page_size)
    )
    w = w.option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    if options.compression == "zstd":
        w = w.option("parquet.compression.codec.zstd.level", str(options.compression_level or 3))
    if partitioned:
        w = w.partitionBy(KEY_COLUMN)
    try:
        with session_confs(spark, _CONFS):
            try:
                w.parquet(staging)
            except Exception as e:
                if NULL_IN_REQUIRED in str(e):
                    column = str(e).split(NULL_IN_REQUIRED, 1)[1].split("'")[1]
                    raise SchemaMismatchError(
                        f"column {column!r} is required but the DataFrame holds a null", column=column
                    ) from None
                raise
        staged = _list_staged(spark, staging)
        schema = metadata.schema()
        order = metadata.sort_order()
        config = MetricsConfig.from_properties(
            metadata.properties, schema, tuple(f.source_id for f in order.fields)
        )
        order_id = order.order_id if requirements.ordering and not order.is_unsorted else 0

        def build(s: _Staged) -> DataFile:
            tokens: list[str] = []
            if partitioned:
                directory = s.rel.rsplit("/", 1)[0]
                if not directory.startswith(KEY_COLUMN + "="):
                    raise NativeFallback(f"{s.rel} is not in a partition directory")
                text = directory[len(KEY_COLUMN) + 1 :]
                tokens = text.split("_")
            return data_file(table, f"{staging}/{s.rel}", s.size, tokens, config, order_id)

        with ThreadPoolExecutor(max_workers=8) as pool:
            files = list(pool.map(build, staged))
    except BaseException:
        delete_staging(spark, staging)
        raise
    try:
        writer.commit([IcefloeCommitMessage(files)])
    except CommitStateUnknownError:
        raise  # the files may be committed: never delete them
    except BaseException:
        delete_staging(spark, staging)  # the commit failed and deleted its files; the rest goes
        raise


ENGINES = ("auto", "native", "source")


def try_native(
    df: DataFrame,
    name: str,
    table: Table,
    mode: str,
    options: Mapping[str, str],
    requirements: WriteRequirements,
    num_partitions: int | None,
    engine: str,
) -> bool:
    """``icefloe.spark.write``'s native path: True when it wrote and committed ``df``; False when
    the data source must write it (``engine="auto"``). ``engine="native"`` raises
    UnsupportedFeatureError instead of falling back."""
    from icefloe.errors import UnsupportedFeatureError, ValidationError
    from icefloe.spark import register

    if engine not in ENGINES:
        raise ValidationError(f"engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "source":
        return False
    spark = df.sparkSession
    problem: str | None = (
        f"mode {mode!r} is handled by the data source"
        if mode not in ("append", "overwrite")
        else native_problem(spark, df, table, options)
    )
    if problem is None:
        source = register(spark)({"path": name, **options})
        # the data source's own checks and commit: branch, WAP, overwrite filter, dynamic mode
        writer = source.writer(df.schema, mode == "overwrite")
        try:
            write_native(df, table, writer, requirements, num_partitions)
            return True
        except NativeFallback as e:
            problem = str(e)
    if engine == "native":
        raise UnsupportedFeatureError(
            f"Spark's Parquet writer cannot write this table: {problem}", hint='use engine="auto"'
        )
    return False
