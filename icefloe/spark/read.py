"""``icefloe.spark.read``: the fast read path, with column pruning.

Spark's Python data source API never tells a source which columns a query needs, so
``spark.read.format("icefloe")`` reads (and ships through Python) every column. This path does
the planning in Python and the reading in Spark's own vectorized Parquet reader::

    driver: load table -> DataScan(columns, where, snapshot) -> plan_files (partition + metrics pruning)
      -> spark.read.schema(<projection with parquet.field.id metadata>).parquet(*planned files)
         with spark.sql.parquet.fieldId.read.enabled=true (columns resolved by field id: renames,
         columns missing from older files read as nulls)
      -> .filter(<the scan filter as a Spark Column>) -> .select(<requested columns>)

It falls back to the data source (``engine="auto"``) when the Parquet reader cannot give Iceberg
semantics: tasks with delete files, tables with a name mapping (files without field ids),
columns with initial defaults, and uuid/time/nanosecond-timestamp columns; and when the files
live where Spark's Hadoop file systems cannot reach them with the table's settings (object
stores such as s3://, which icefloe's FileIO serves with the catalog's s3.* properties).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st

from icefloe.errors import IcefloeError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundReference,
    and_,
    bind,
    parse,
    unbind,
)
from icefloe.expressions._base import chain_operands
from icefloe.expressions.visitors import rewrite_not
from icefloe.expressions.visitors._visitor import BoundExpressionVisitor, visit
from icefloe.expressions.visitors.referenced_fields import referenced_field_ids
from icefloe.spark._config import catalog_from_options, spark_catalog_conf
from icefloe.spark.source import FILTER
from icefloe.spark.types import to_spark_schema, to_spark_type
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.spec.values import to_python

if TYPE_CHECKING:
    from icefloe.scan.task import FileScanTask
    from icefloe.spec.schema import Schema
    from icefloe.table import DataScan, Table

__all__ = ["Engine", "plan_read", "read", "to_spark_column"]

Engine = Literal["auto", "parquet", "source"]
FIELD_ID_READ_CONF = "spark.sql.parquet.fieldId.read.enabled"


def read(
    spark: SparkSession,
    table: str | Table,
    columns: Sequence[str] | None = None,
    where: str | BooleanExpression | None = None,
    *,
    snapshot_id: int | None = None,
    branch: str | None = None,
    tag: str | None = None,
    as_of_timestamp: int | str | dt.datetime | None = None,
    catalog: str | None = None,
    catalog_properties: dict[str, str] | None = None,
    engine: Engine = "auto",
    metadata_columns: Sequence[str] | None = None,
    planning: str | None = None,
) -> DataFrame:
    """A DataFrame of ``columns`` (all when None; nested paths like ``"a.b"`` allowed) of the rows
    matching ``where`` (icefloe filter syntax), from the current snapshot or the chosen one.

    ``metadata_columns`` (any of ``_file``, ``_pos``, ``_spec_id``, ``_partition``) are appended
    after the columns: each row's data file, its position in that file, the file's partition
    spec id and partition (Iceberg Java's metadata columns). Format v3 tables also have
    ``_row_id`` and ``_last_updated_sequence_number`` (row lineage; read by the data source).

    ``engine="parquet"`` forces Spark's Parquet reader (raising UnsupportedFeatureError when it
    cannot read the table correctly), ``"source"`` the icefloe data source, ``"auto"`` picks
    the Parquet reader whenever it can. Turns on ``spark.sql.parquet.fieldId.read.enabled`` for
    the session (it only affects reads whose schema carries field ids).

    ``planning`` (``"auto"``, ``"local"``, ``"distributed"``; None: the table properties
    ``read.data-planning-mode`` / ``read.delete-planning-mode``) says whether manifests are read on
    the driver or by Spark tasks (:mod:`icefloe.spark._distributed_planning`).
    """
    from icefloe.spark._distributed_planning import check_planning_option, plan_scan
    from icefloe.spark._metadata_columns import check_lineage_columns, check_metadata_columns, lineage_columns

    planning = check_planning_option(planning)
    meta_columns = check_metadata_columns(metadata_columns)
    if isinstance(table, str):
        meta = _read_metadata_table(spark, table, columns, where, snapshot_id, catalog, catalog_properties)
        if meta is not None:
            return meta
    scan = plan_read(
        spark,
        table,
        columns,
        where,
        snapshot_id=snapshot_id,
        branch=branch,
        tag=tag,
        as_of_timestamp=as_of_timestamp,
        catalog=catalog,
        catalog_properties=catalog_properties,
    )
    check_lineage_columns(scan.table.metadata, meta_columns)  # v3 only: a typed error below
    tasks = plan_scan(spark, scan, planning) if engine != "source" else []
    problem = (
        _parquet_problem(scan, tasks, position_deletes=bool(meta_columns))
        if engine != "source"
        else "engine='source' was asked for"
    )
    if problem is None and lineage_columns(meta_columns):
        problem = (
            "the row lineage columns (_row_id, _last_updated_sequence_number) are read by icefloe's reader"
        )
    if problem is None:
        problem = _location_problem(tasks)
    if problem is not None:
        if engine == "parquet":
            raise UnsupportedFeatureError(
                f"Spark's Parquet reader cannot read {scan.table.name} correctly: {problem}",
                hint='use engine="auto" or engine="source"',
            )
        return _read_with_source(spark, scan, catalog, catalog_properties, meta_columns, planning)
    return _read_with_parquet(spark, scan, tasks, meta_columns)


def _read_metadata_table(
    spark: SparkSession,
    name: str,
    columns: Sequence[str] | None,
    where: str | BooleanExpression | None,
    snapshot_id: int | None,
    catalog: str | None,
    catalog_properties: dict[str, str] | None,
) -> DataFrame | None:
    """``ns.t.<metadata table>`` read through the data source, or None for an ordinary table."""
    from icefloe.spark.metadata import resolve_metadata_target

    options = _catalog_options(catalog, catalog_properties)
    if resolve_metadata_target(catalog_from_options(options, spark_catalog_conf(spark)), name) is None:
        return None
    reader = spark.read.format("icefloe")
    for key, value in options.items():
        reader = reader.option(key, value)
    if snapshot_id is not None:
        reader = reader.option("snapshot-id", str(snapshot_id))
    df = reader.load(name)
    if where is not None:
        if not isinstance(where, str):
            raise ValidationError(
                "filter a metadata table with Spark SQL text", hint='where="snapshot_id > 1"'
            )
        df = df.filter(where)
    return df.select(*columns) if columns else df


def plan_read(
    spark: SparkSession,
    table: str | Table,
    columns: Sequence[str] | None,
    where: str | BooleanExpression | None,
    *,
    snapshot_id: int | None = None,
    branch: str | None = None,
    tag: str | None = None,
    as_of_timestamp: int | str | dt.datetime | None = None,
    catalog: str | None = None,
    catalog_properties: dict[str, str] | None = None,
) -> DataScan:
    if branch is not None and tag is not None:
        raise ValidationError("choose at most one of branch and tag")
    if isinstance(table, str):
        options = _catalog_options(catalog, catalog_properties)
        table = catalog_from_options(options, spark_catalog_conf(spark)).load_table(table)
    return table.scan(
        row_filter=where,
        selected_fields=tuple(columns) if columns else ("*",),
        snapshot_id=snapshot_id,
        ref=branch if branch is not None else tag,
        as_of_timestamp=as_of_timestamp,
    )


def _catalog_options(catalog: str | None, catalog_properties: dict[str, str] | None) -> dict[str, str]:
    options = {f"catalog.{k}": v for k, v in (catalog_properties or {}).items()}
    if catalog:
        options["catalog"] = catalog
    return options


# --------------------------------------------------------------------------- eligibility


def _unsupported_type(t: IcebergType) -> IcebergType | None:
    if isinstance(t, UUIDType | TimeType | TimestampNsType | TimestamptzNsType):
        return t
    if isinstance(t, StructType | ListType | MapType):
        for f in t.fields:
            bad = _unsupported_type(f.field_type)
            if bad is not None:
                return bad
    return None


def _has_default(fields: Iterable[NestedField]) -> bool:
    for f in fields:
        if f.initial_default is not None:
            return True
        if isinstance(f.field_type, StructType | ListType | MapType) and _has_default(f.field_type.fields):
            return True
    return False


def _parquet_problem(
    scan: DataScan, tasks: Sequence[FileScanTask], *, position_deletes: bool = False
) -> str | None:
    """Why Spark's Parquet reader would not give Iceberg semantics for this scan, or None.
    ``position_deletes``: Parquet position delete files are applied by an anti-join (the path
    that reads metadata columns)."""
    from icefloe.spark._metadata_columns import parquet_deletes_supported

    if "schema.name-mapping.default" in scan.table.metadata.properties:
        return "the table has a name mapping (files written without field ids)"
    needed = _needed_schema(scan)
    for f in needed.fields:
        bad = _unsupported_type(f.field_type)
        if bad is not None:
            return f"column {f.name!r} has type {bad}, which Spark's Parquet reader reads differently"
    if _has_default(needed.fields):
        return "a column has an initial default value"
    for t in tasks:
        if t.delete_files and not (position_deletes and parquet_deletes_supported([t])):
            return f"{t.file.file_path} has row-level delete files"
        if str(t.file.file_format).lower().rsplit(".", 1)[-1] != "parquet":
            return f"{t.file.file_path} is not a Parquet file"
    return None


# Schemes Spark's own Hadoop file systems read without settings of their own; object stores need
# credentials and endpoints that icefloe's FileIO has (s3.* properties) and Hadoop's s3a does not.
_HADOOP_SCHEMES = ("", "file", "hdfs", "viewfs")


def _location_problem(tasks: Sequence[FileScanTask]) -> str | None:
    for t in tasks:
        path = t.file.file_path
        scheme = path.split("://", 1)[0].lower() if "://" in path else ""
        if scheme not in _HADOOP_SCHEMES and not (len(scheme) == 1 and scheme.isalpha()):
            return f"{path} is on {scheme}://, which icefloe's FileIO reads with the table's settings"
    return None


def _needed_schema(scan: DataScan) -> Schema:
    """The projection plus the columns the filter reads."""
    schema = scan.schema()
    ids = set(referenced_field_ids(bind(schema, scan.row_filter, scan.case_sensitive)))
    projection = scan.projection()
    if not ids:
        return projection
    return schema.select_ids(_leaf_ids(projection) | ids)


def _leaf_ids(schema: Schema) -> set[int]:
    """Ids of the projection's primitive fields (selecting a struct id would select all of it)."""
    out: set[int] = set()

    def walk(fields: Iterable[NestedField]) -> None:
        for f in fields:
            if isinstance(f.field_type, StructType | ListType | MapType):
                walk(f.field_type.fields)
            else:
                out.add(f.field_id)

    walk(schema.fields)
    return out


# --------------------------------------------------------------------------- the two engines


def _read_with_parquet(
    spark: SparkSession, scan: DataScan, tasks: Sequence[FileScanTask], meta_columns: Sequence[str] = ()
) -> DataFrame:
    from icefloe.spark._metadata_columns import metadata_spark_fields, parquet_rows, with_metadata_columns

    projection = scan.projection()
    needed = _needed_schema(scan)
    spark_schema = to_spark_schema(needed, with_field_ids=True)
    paths = list(dict.fromkeys(t.file.file_path for t in tasks))
    if not paths:
        empty = to_spark_schema(projection)
        if meta_columns:
            empty = st.StructType([*empty.fields, *metadata_spark_fields(scan.table.metadata, meta_columns)])
        return spark.createDataFrame([], empty)
    spark.conf.set(FIELD_ID_READ_CONF, "true")
    if meta_columns:
        df = parquet_rows(spark, spark_schema, tasks)
    else:
        df = spark.read.schema(spark_schema).parquet(*paths)
    if not isinstance(scan.row_filter, AlwaysTrue):
        df = df.filter(to_spark_column(scan.row_filter, scan.schema(), scan.case_sensitive))
    if meta_columns:
        df = with_metadata_columns(df, spark, scan.table.metadata, tasks, meta_columns)
    return df.select(*[F.col(_quoted(f.name)) for f in projection.fields], *meta_columns)


def _read_with_source(
    spark: SparkSession,
    scan: DataScan,
    catalog: str | None,
    catalog_properties: dict[str, str] | None,
    meta_columns: Sequence[str] = (),
    planning: str | None = None,
) -> DataFrame:
    from icefloe.spark.source import METADATA_COLUMNS

    reader = spark.read.format("icefloe")
    if meta_columns:
        reader = reader.option(METADATA_COLUMNS, ",".join(meta_columns))
    if planning is not None:
        reader = reader.option("planning", planning)
    for key, value in _catalog_options(catalog, catalog_properties).items():
        reader = reader.option(key, value)
    if scan.snapshot_id is not None:
        reader = reader.option("snapshot-id", str(scan.snapshot_id))
    elif scan.ref is not None:
        kind = scan.table.metadata.refs[scan.ref].ref_type
        reader = reader.option("branch" if str(kind).lower().endswith("branch") else "tag", scan.ref)
    elif scan.as_of_timestamp is not None:
        snap = scan.snapshot()
        if snap is not None:
            reader = reader.option("snapshot-id", str(snap.snapshot_id))
    filter_text, rest = _source_filter(scan)
    if filter_text is not None:
        # the source prunes files and applies the residuals itself, with Iceberg's semantics
        reader = reader.option(FILTER, filter_text)
    df = reader.load(scan.table.name)
    if not isinstance(rest, AlwaysTrue):
        df = df.filter(to_spark_column(rest, scan.schema()))
    projection = scan.projection()
    if projection is scan.schema():
        return df
    return df.select(*[F.col(_quoted(f.name)) for f in projection.fields], *meta_columns)


def _source_filter(scan: DataScan) -> tuple[str | None, BooleanExpression]:
    """The scan filter split for the data source: filter text for the conjuncts that the source
    reads back as the same bound expression, and the rest (bound; ``AlwaysTrue`` when nothing is
    left) for Spark to apply as a Column.

    The text is made from the bound filter, whose literals are in the internal representation
    (dates, times and timestamps of any precision as integers, uuids as their text), so only
    literals that filter text cannot spell (binary and fixed, infinities) stay behind."""
    if isinstance(scan.row_filter, AlwaysTrue):
        return None, AlwaysTrue()
    schema = scan.schema()
    bound = bind(schema, scan.row_filter, scan.case_sensitive)
    text = _round_trip_text(schema, bound)
    if text is not None:
        return text, AlwaysTrue()
    if not isinstance(bound, And):
        return None, bound
    spelled: list[str] = []
    rest: list[BooleanExpression] = []
    for conjunct in chain_operands(bound, cancel_double_not=False):
        part = _round_trip_text(schema, conjunct)
        if part is None:
            rest.append(conjunct)
        else:
            spelled.append(f"({part})")
    return (" and ".join(spelled) if spelled else None), and_(*rest)


def _round_trip_text(schema: Schema, bound: BooleanExpression) -> str | None:
    """``bound`` as filter text that the data source (which binds case-sensitively) binds back
    to an equal expression, or None."""
    text = str(unbind(bound))
    try:
        same = bind(schema, parse(text), True) == bound
    except IcefloeError:
        same = False
    return text if same else None


# --------------------------------------------------------------------------- filters as Spark Columns


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _ToSparkColumn(BoundExpressionVisitor[Column]):
    """Iceberg predicate semantics in Spark (see :mod:`icefloe.expressions._base`), as icefloe's
    own evaluators apply them: comparisons, ``=``, ``in`` and starts-with are false for null and
    for NaN (IEEE 754; Spark orders NaN above every value and would keep it for ``>``), so
    ``!=``, ``not in`` and not-starts-with are true for both; -0.0 equals 0.0."""

    def __init__(self, schema: Schema) -> None:
        self._schema = schema

    def _col(self, ref: BoundReference) -> Column:
        path = self._schema.column_name(ref.field_id)
        return F.col(".".join(_quoted(p) for p in path.split(".")))

    def _compared(self, ref: BoundReference) -> Column:
        """The column as comparisons see it: NaN as null, so that every comparison with it is
        false (true for the negations) exactly as for null. The wrapped column also never lets a
        float comparison reach Spark's Parquet filters, which must not see one: their statistics
        and dictionary tests order -0.0 below 0.0 and skip row groups by bounds that leave NaN
        out (``d = 0.0`` finds no row in a file of -0.0s, ``d != 5`` none in one of NaN and 5)."""
        column = self._col(ref)
        t = ref.field_type
        if isinstance(t, FloatType | DoubleType):
            return F.nanvl(column, F.lit(None).cast(to_spark_type(t)))
        return column

    def _lit(self, ref: BoundReference, value: Any) -> Column:
        return _spark_literal(ref.field_type, value)

    def visit_true(self) -> Column:
        return F.lit(True)

    def visit_false(self) -> Column:
        return F.lit(False)

    def visit_not(self, child_result: Column) -> Column:
        return ~child_result

    def visit_and(self, left_result: Column, right_result: Column) -> Column:
        return left_result & right_result

    def visit_or(self, left_result: Column, right_result: Column) -> Column:
        return left_result | right_result

    @staticmethod
    def _false_on_null(c: Column) -> Column:
        return F.coalesce(c, F.lit(False))

    def visit_is_null(self, ref: BoundReference) -> Column:
        return self._col(ref).isNull()

    def visit_not_null(self, ref: BoundReference) -> Column:
        return self._col(ref).isNotNull()

    def visit_is_nan(self, ref: BoundReference) -> Column:
        return self._false_on_null(F.isnan(self._col(ref)))

    def visit_not_nan(self, ref: BoundReference) -> Column:
        return ~self._false_on_null(F.isnan(self._col(ref)))

    def visit_less_than(self, ref: BoundReference, literal: Any) -> Column:
        return self._false_on_null(self._compared(ref) < self._lit(ref, literal))

    def visit_less_than_or_equal(self, ref: BoundReference, literal: Any) -> Column:
        return self._false_on_null(self._compared(ref) <= self._lit(ref, literal))

    def visit_greater_than(self, ref: BoundReference, literal: Any) -> Column:
        return self._false_on_null(self._compared(ref) > self._lit(ref, literal))

    def visit_greater_than_or_equal(self, ref: BoundReference, literal: Any) -> Column:
        return self._false_on_null(self._compared(ref) >= self._lit(ref, literal))

    def visit_equal(self, ref: BoundReference, literal: Any) -> Column:
        return self._false_on_null(self._compared(ref) == self._lit(ref, literal))

    def visit_not_equal(self, ref: BoundReference, literal: Any) -> Column:
        return ~self.visit_equal(ref, literal)

    def visit_in(self, ref: BoundReference, literals: frozenset[Any]) -> Column:
        # sorted (one type, ordered): the same filter gives the same plan
        values = [self._lit(ref, v) for v in sorted(literals)]
        return self._false_on_null(self._compared(ref).isin(values))

    def visit_not_in(self, ref: BoundReference, literals: frozenset[Any]) -> Column:
        return ~self.visit_in(ref, literals)

    def visit_starts_with(self, ref: BoundReference, literal: Any) -> Column:
        return self._false_on_null(self._col(ref).startswith(F.lit(literal)))

    def visit_not_starts_with(self, ref: BoundReference, literal: Any) -> Column:
        return ~self.visit_starts_with(ref, literal)


def _spark_literal(t: IcebergType, value: Any) -> Column:
    """A Spark literal of ``t``'s Spark type for an internal value of Iceberg type ``t``, exact
    for every value the type holds: dates and timestamps of any year (1 to 9999, where PySpark's
    own date conversion fails before year 1000), decimals at full precision and the column's
    scale, infinities and -0.0, uuids as their canonical text."""
    if isinstance(t, BooleanType):
        return F.lit(bool(value))
    # Spark widens the column to the literal's type where they differ, exactly: binding made the
    # value fit the column (a float32 value for a float column).
    if isinstance(t, IntegerType | LongType):
        return F.lit(int(value))
    if isinstance(t, FloatType | DoubleType):
        return F.lit(float(value))
    if isinstance(t, DecimalType):
        return F.lit(format(value, "f")).cast(st.DecimalType(t.precision, t.scale))
    if isinstance(t, StringType):
        return F.lit(str(value))
    if isinstance(t, UUIDType):
        return F.lit(str(value))  # canonical lowercase text, as the column holds it
    if isinstance(t, FixedType | BinaryType):
        return F.lit(bytes(value))
    if isinstance(t, DateType):
        return F.date_from_unix_date(F.lit(int(value)))  # days since 1970-01-01, proleptic Gregorian
    if isinstance(t, TimestamptzType):
        return F.timestamp_micros(F.lit(int(value)))  # an instant, whatever the session time zone
    if isinstance(t, TimestampType):
        # Wall-clock text: Spark has no micros-to-TIMESTAMP_NTZ function free of the session zone.
        return F.expr(f"TIMESTAMP_NTZ '{to_python(t, value).isoformat(sep=' ')}'")
    if isinstance(t, TimeType):
        return F.expr(f"TIME '{to_python(t, value).isoformat()}'")
    if isinstance(t, TimestampNsType | TimestamptzNsType):
        # Spark holds these columns truncated to microseconds: no literal compares exactly.
        raise UnsupportedFeatureError(
            f"a {t} value cannot be compared exactly in Spark, which reads the column truncated "
            "to microseconds",
            hint="filter with icefloe (the data source's filter option or icefloe.spark.read's where)",
        )
    raise UnsupportedFeatureError(f"no Spark literal for Iceberg type {t}")


def to_spark_column(expr: BooleanExpression, schema: Schema, case_sensitive: bool = True) -> Column:
    """An icefloe filter as a Spark boolean Column with the same results as icefloe's readers
    (Iceberg's semantics for null, NaN and -0.0; see :class:`_ToSparkColumn`). Predicates on
    nanosecond timestamps other than null checks raise UnsupportedFeatureError."""
    return visit(rewrite_not(bind(schema, expr, case_sensitive)), _ToSparkColumn(schema))
