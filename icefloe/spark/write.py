"""``icefloe.spark.write``: a DataFrame write that honours the table's distribution and ordering.

Spark's Python data source API cannot ask Spark to distribute or sort the rows it hands to the
writer (Iceberg Java's source does, through ``RequiresDistributionAndOrdering``). So
``df.write.format("icefloe")`` writes each Spark partition as it comes: every task sorts its
files by the table's sort order (icefloe's Arrow writer does that), but the tasks' key ranges
overlap. This helper applies on the DataFrame what Java asks of Spark, then writes through the
data source::

    driver: load the table -> distribution mode (Iceberg Java's rule, below)
      none  -> df
      hash  -> df.repartition(<partition values>)                 rows of a partition together
      range -> df.repartitionByRange(<ordering>)                  disjoint key ranges per task
      -> .sortWithinPartitions(<ordering>) when there is an ordering
      -> df.write.format("icefloe").mode(mode).options(...).save(table)

The ordering is Java's ``SortOrderUtil.buildSortOrder``: the partition fields (ascending, nulls
first) that the table's sort order does not already cluster by, then the sort order's fields.
The distribution mode is, highest precedence first, the ``distribution_mode`` argument (or the
``distribution-mode`` write option), the session conf ``spark.sql.iceberg.distribution-mode``,
the table property ``write.distribution-mode``, and else Java's default: ``range`` when the
table has a sort order, ``hash`` when it is partitioned, ``none`` otherwise. As in Java's
``SparkWriteConf``, ``hash`` on an unpartitioned table and ``range`` on an unpartitioned,
unsorted table become ``none``.

Partition and sort values are Spark expressions computing the Iceberg transforms exactly:
Spark built-ins for identity, ``year``/``month``/``day``/``hour`` (on UTC for timestamptz, on the
wall clock for timestamp) and ``truncate`` of integers, strings and binary; an Arrow UDF running
icefloe's own transforms for ``bucket`` (Iceberg's murmur3, not Spark's ``hash``) and for
``truncate`` of decimals.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icefloe.errors import ConfigError
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
)
from icefloe.transforms import BucketTransform, Transform, TransformKind, TruncateTransform

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.schema import Schema
    from icefloe.spec.sort_order import SortOrder
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table import Table

__all__ = [
    "DISTRIBUTION_MODES",
    "DISTRIBUTION_MODE_CONF",
    "DISTRIBUTION_MODE_OPTION",
    "DISTRIBUTION_MODE_PROP",
    "WriteRequirements",
    "required_ordering",
    "transform_column",
    "write",
    "write_requirements",
]

DISTRIBUTION_MODE_PROP = "write.distribution-mode"
DISTRIBUTION_MODE_OPTION = "distribution-mode"
DISTRIBUTION_MODE_CONF = "spark.sql.iceberg.distribution-mode"
DISTRIBUTION_MODES = ("none", "hash", "range")

_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = 86_400_000_000


@dataclass(frozen=True)
class WriteRequirements:
    """What a write asks of Spark: the distribution mode in effect, the partition fields rows
    are clustered by (``hash``), and the ordering (``range`` distributes by it; every mode sorts
    within tasks by it)."""

    distribution_mode: str
    clustering: tuple[tuple[int, Transform], ...]
    ordering: tuple[SortField, ...]


def _mode(value: str, where: str) -> str:
    mode = value.strip().lower()
    if mode not in DISTRIBUTION_MODES:
        raise ConfigError(
            f"{where} {value!r} is not a distribution mode",
            hint="use " + ", ".join(repr(m) for m in DISTRIBUTION_MODES),
            value=value,
        )
    return mode


def write_requirements(
    metadata: TableMetadata, requested: str | None = None, session_mode: str | None = None
) -> WriteRequirements:
    """Iceberg Java's ``SparkWriteConf.distributionMode`` and ``SparkWriteUtil.writeRequirements``
    for a batch append or overwrite: ``requested`` (argument or write option) > ``session_mode``
    (``spark.sql.iceberg.distribution-mode``) > the table property > Java's default."""
    spec, order = metadata.spec(), metadata.sort_order()
    partitioned = any(not f.transform.is_void for f in spec.fields) if spec.fields else False
    text, where = requested, "distribution_mode"
    if text is None:
        text, where = session_mode, DISTRIBUTION_MODE_CONF
    if text is None:
        text, where = (
            metadata.properties.get(DISTRIBUTION_MODE_PROP),
            f"table property {DISTRIBUTION_MODE_PROP}",
        )
    if text is None:
        mode = "range" if not order.is_unsorted else "hash" if partitioned else "none"
    else:
        mode = _mode(text, where)
        if (mode == "range" and not partitioned and order.is_unsorted) or (
            mode == "hash" and not partitioned
        ):
            mode = "none"
    clustering = tuple((f.source_id, f.transform) for f in spec.fields if not f.transform.is_void)
    return WriteRequirements(mode, clustering if mode == "hash" else (), required_ordering(spec, order))


def required_ordering(spec: PartitionSpec, order: SortOrder) -> tuple[SortField, ...]:
    """Java's ``SortOrderUtil.buildSortOrder``: the partition fields the sort order's prefix does
    not already cluster by (ascending, nulls first), then the sort order's own fields."""
    required = {(f.source_id, str(f.transform)): f for f in spec.fields if not f.transform.is_void}
    # a partition field another one satisfies (days(ts) next to hours(ts)) needs no clustering
    for a in spec.fields:
        for b in spec.fields:
            if a != b and a.source_id == b.source_id and a.transform.satisfies_order_of(b.transform):
                required.pop((b.source_id, str(b.transform)), None)
    for sf in order.fields:
        key = (sf.source_id, str(sf.transform))
        if key in required:
            required.pop(key)
            continue
        for pf in spec.fields:
            if pf.source_id == sf.source_id and sf.transform.satisfies_order_of(pf.transform):
                required.pop((pf.source_id, str(pf.transform)), None)
        break
    prefix = tuple(SortField(pf.source_id, pf.transform) for pf in required.values())
    return prefix + tuple(order.fields)


# --------------------------------------------------------------------------- Spark expressions


def _quoted(schema: Schema, field_id: int) -> str:
    """The column's dotted path with every part back-quoted (names may hold dots)."""
    ids = [field_id]
    parent = schema.parent_id(field_id)
    while parent is not None:
        ids.append(parent)
        parent = schema.parent_id(parent)
    parts = []
    for fid in reversed(ids):
        parts.append("`" + schema.find_field(fid).name.replace("`", "``") + "`")
    return ".".join(parts)


def _floor_div(value: Column, divisor: int) -> Column:
    from pyspark.sql import functions as F

    # exact: the difference is a multiple of divisor, and the double quotient is far from .5
    return F.round((value - F.pmod(value, F.lit(divisor))) / F.lit(divisor)).cast("long")


def _udf_transform(transform: Transform, source_type: IcebergType) -> Any:
    """An Arrow UDF computing ``transform`` with icefloe's own vectorized transforms."""
    from pyspark.sql.pandas.functions import arrow_udf

    from icefloe.spark.types import to_spark_schema
    from icefloe.spec.schema import Schema as IcebergSchema
    from icefloe.spec.types import NestedField

    result = transform.result_type(source_type)
    one = IcebergSchema(NestedField(1, "v", source_type, False))
    result_type = to_spark_schema(IcebergSchema(NestedField(1, "r", result, False))).fields[0].dataType

    def apply(values: pa.Array) -> pa.Array:
        from icefloe.arrow.spark_layout import from_spark_batch
        from icefloe.arrow.transforms import transform_arrow

        batch = from_spark_batch(pa.RecordBatch.from_arrays([values], names=["v"]), one)
        out = transform_arrow(transform, source_type, batch.column(0))
        return out.cast(pa.int32()) if pa.types.is_date32(out.type) else out

    with warnings.catch_warnings():
        # PySpark checks the pandas version when it makes any vectorized UDF; an Arrow UDF
        # never goes through pandas
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        # the stubs know only the functionType= form, which PySpark warns about; type hints it is
        make_udf: Any = arrow_udf
        return make_udf(apply, result_type)


def transform_column(schema: Schema, source_id: int, transform: Transform) -> Column:
    """A Spark Column with the Iceberg ``transform`` of column ``source_id``, value for value."""
    from pyspark.sql import functions as F

    source_type = schema.find_type(source_id)
    column = F.col(_quoted(schema, source_id))
    kind = transform.kind
    if kind is TransformKind.IDENTITY:
        return column
    if kind is TransformKind.VOID:
        return F.lit(None)
    if transform.is_temporal:
        return _temporal_column(column, source_type, kind)
    if isinstance(transform, TruncateTransform):
        width = transform.width
        if isinstance(source_type, IntegerType | LongType):
            # in long arithmetic: an int near its minimum would overflow (an error in ANSI mode)
            as_long = column.cast("long")
            return as_long - F.pmod(as_long, F.lit(width).cast("long"))
        if isinstance(source_type, StringType | BinaryType | FixedType):
            return F.substring(column, 1, width)
    if isinstance(transform, BucketTransform | TruncateTransform) or isinstance(source_type, DecimalType):
        udf = _udf_transform(transform, source_type)
        return udf(column)  # type: ignore[no-any-return]
    raise ConfigError(f"no Spark expression for {transform} of {source_type}")  # pragma: no cover


def _temporal_column(column: Column, source_type: IcebergType, kind: TransformKind) -> Column:
    from pyspark.sql import functions as F

    if isinstance(source_type, DateType):
        days = F.unix_date(column)
        date = column
    elif isinstance(source_type, TimestampType | TimestampNsType):
        # wall clock (Spark's TimestampNTZType): its date and hour need no time zone
        date = column.cast("date")
        days = F.unix_date(date)
        if kind is TransformKind.HOUR:
            return (days.cast("long") * 24 + F.hour(column)).cast("int")
    else:
        # an instant (Spark's TimestampType): the UTC day and hour, whatever the session zone
        micros = F.unix_micros(column)
        if kind is TransformKind.HOUR:
            return _floor_div(micros, _MICROS_PER_HOUR).cast("int")
        days = _floor_div(micros, _MICROS_PER_DAY).cast("int")
        date = F.date_from_unix_date(days)
    if kind is TransformKind.DAY:
        return days.cast("int")
    years = F.year(date) - 1970
    if kind is TransformKind.YEAR:
        return years.cast("int")
    return (years * 12 + F.month(date) - 1).cast("int")


def sort_column(schema: Schema, field: SortField) -> Column:
    """``field`` as a Spark sort expression (direction and null order included)."""
    column = transform_column(schema, field.source_id, field.transform)
    first = field.null_order is NullOrder.NULLS_FIRST
    if field.direction is SortDirection.DESC:
        return column.desc_nulls_first() if first else column.desc_nulls_last()
    return column.asc_nulls_first() if first else column.asc_nulls_last()


# --------------------------------------------------------------------------- the helper


def distribute(
    df: DataFrame, metadata: TableMetadata, requirements: WriteRequirements, num_partitions: int | None = None
) -> DataFrame:
    """``df`` distributed and sorted within partitions as ``requirements`` say."""
    schema = metadata.schema()
    ordering = [sort_column(schema, f) for f in requirements.ordering]
    if requirements.distribution_mode == "hash":
        keys = [transform_column(schema, sid, t) for sid, t in requirements.clustering]
        df = df.repartition(num_partitions, *keys) if num_partitions else df.repartition(*keys)
    elif requirements.distribution_mode == "range" and ordering:
        df = (
            df.repartitionByRange(num_partitions, *ordering)
            if num_partitions
            else df.repartitionByRange(*ordering)
        )
    if ordering:
        df = df.sortWithinPartitions(*ordering)
    return df


def write(
    df: DataFrame,
    table: str,
    mode: str = "append",
    *,
    distribution_mode: str | None = None,
    options: Mapping[str, str] | None = None,
    catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    num_partitions: int | None = None,
    engine: str = "auto",
) -> WriteRequirements:
    """Write ``df`` to ``table`` (``"ns.t"``) with ``mode`` (``append`` or ``overwrite``) through
    the ``icefloe`` data source, distributed and sorted as Iceberg Java would (module docstring).
    ``options`` are the data source's write options (``overwrite-filter``, ``branch``, ...;
    ``distribution-mode`` too). ``num_partitions`` sets the number of Spark partitions of a hash
    or range distribution (default ``spark.sql.shuffle.partitions``). Returns what was applied.
    ``engine="auto"`` lets Spark's own Parquet writer write the files when it can write them as
    Iceberg needs (``icefloe.spark._native_write``: local/HDFS tables, flat and struct columns)
    and commits them as the data source does; ``"native"`` insists on that, ``"source"`` always
    writes through the data source.
    """
    from icefloe.spark import register
    from icefloe.spark._config import catalog_from_options, spark_catalog_conf

    spark = df.sparkSession
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    if catalog is not None:
        opts["catalog"] = catalog
    for k, v in (catalog_properties or {}).items():
        opts[f"catalog.{k}"] = str(v)
    requested = (
        distribution_mode if distribution_mode is not None else opts.pop(DISTRIBUTION_MODE_OPTION, None)
    )
    opts.pop(DISTRIBUTION_MODE_OPTION, None)
    loaded: Table = catalog_from_options(opts, spark_catalog_conf(spark)).load_table(table)
    requirements = write_requirements(
        loaded.metadata, requested, spark.conf.get(DISTRIBUTION_MODE_CONF, None)
    )
    from icefloe.spark._native_write import try_native

    if try_native(df, table, loaded, mode, opts, requirements, num_partitions, engine):
        return requirements
    out = distribute(df, loaded.metadata, requirements, num_partitions)
    register(spark)
    writer = out.write.format("icefloe").mode(mode)
    for k, v in opts.items():
        writer = writer.option(k, v)
    writer.save(table)
    return requirements
