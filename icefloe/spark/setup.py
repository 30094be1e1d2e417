"""Getting a Spark session ready for icefloe: :func:`start_session` (a quiet session whose Python
workers can import icefloe, with the data source registered), :func:`create_table` (Spark has no
``CREATE TABLE`` for Python data sources), and :func:`icefloe_errors` / :func:`icefloe_error`
(the icefloe error inside a Spark exception, with its own type, message and hint).

::

    spark = icefloe.spark.start_session(catalog_properties={"uri": "sqlite:///cat.db",
                                                            "warehouse": "file:///wh"})
    icefloe.spark.create_table(spark, "sales.orders", df, partition_by=["day(ts)"])
    with icefloe.spark.icefloe_errors():          # NoSuchTableError instead of AnalysisException
        df.write.format("icefloe").mode("append").save("sales.orders")
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import icefloe.errors as errors_module
from icefloe.errors import IcefloeError, ValidationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from icefloe.spec.schema import Schema
    from icefloe.table import Table

__all__ = ["create_table", "icefloe_error", "icefloe_errors", "start_session", "use_this_python"]

PYSPARK_PYTHON_CONF = "spark.pyspark.python"
HIDE_TRACEBACK_CONF = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"
_LOG_LEVELS = ("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")

_LOG4J = """rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
"""


def use_this_python(spark: SparkSession) -> bool:
    """Make the Python workers of ``spark`` run this interpreter (the one that imports icefloe)
    unless ``spark.pyspark.python`` or ``PYSPARK_PYTHON`` chose one: without it they run
    ``python3`` from the PATH, which usually lacks icefloe (``ModuleNotFoundError`` in a worker).
    Returns whether it changed anything. :func:`icefloe.spark.register` calls it."""
    sc = spark.sparkContext
    if sc.getConf().get(PYSPARK_PYTHON_CONF) or os.environ.get("PYSPARK_PYTHON"):
        return False
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # The context read PYSPARK_PYTHON when it started; functions registered from now on (the
    # data source among them) carry this interpreter to their workers.
    sc.pythonExec = sys.executable
    return True


def _log4j_file(level: str) -> Path:
    path = Path(tempfile.gettempdir()) / f"icefloe-spark-log4j2-{level.lower()}.properties"
    if not path.exists():
        path.write_text(_LOG4J.format(level=level.lower()))
    return path


def start_session(
    master: str | None = None,
    app_name: str = "icefloe",
    *,
    catalog: str = "default",
    catalog_properties: Mapping[str, str] | None = None,
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
    hide_python_tracebacks: bool = True,
) -> SparkSession:
    """A Spark session ready for icefloe (the existing one, when there is one, configured alike).

    - Python workers run this interpreter (``spark.pyspark.python`` and ``PYSPARK_PYTHON`` set to
      ``sys.executable`` unless already set), so they can import icefloe;
    - quiet: no console progress bars mixed into the output (``spark.ui.showConsoleProgress``),
      Spark's log at ``log_level`` (``ERROR``; ``WARN`` shows Spark's warnings too), PySpark's
      pandas-version warning silenced;
    - errors of the data source show icefloe's message and hint, not a Python traceback
      (``spark.sql.execution.pyspark.udf.hideTraceback.enabled``; ``hide_python_tracebacks=False``
      keeps the tracebacks, which also applies to your own UDFs);
    - ``catalog_properties`` define the icefloe catalog ``catalog``
      (``spark.icefloe.catalog.<catalog>.<property>``), which ``~/.icefloe.yaml`` and
      ``ICEFLOE_CATALOG__*`` variables can define as well;
    - the ``icefloe`` data source is registered (:func:`icefloe.spark.register`).

    ``master`` (``"local[4]"``, ``"spark://host:7077"``, ...) and ``conf`` go to the builder; when
    ``master`` is None, spark-submit's or Spark's default applies.
    """
    level = log_level.upper()
    if level not in _LOG_LEVELS:
        raise ValidationError(f"unknown log level {log_level!r}", hint=f"use one of {', '.join(_LOG_LEVELS)}")
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from icefloe.spark import register

    settings: dict[str, str] = {
        "spark.ui.showConsoleProgress": "false",
        HIDE_TRACEBACK_CONF: "true" if hide_python_tracebacks else "false",
    }
    if not os.environ.get("PYSPARK_PYTHON") or os.environ["PYSPARK_PYTHON"] == sys.executable:
        settings[PYSPARK_PYTHON_CONF] = sys.executable
    log4j = f"-Dlog4j2.configurationFile={_log4j_file(level).as_uri()}"
    settings["spark.driver.extraJavaOptions"] = log4j
    for name, value in (catalog_properties or {}).items():
        settings[f"spark.icefloe.catalog.{catalog}.{name}"] = str(value)
    settings.update({str(k): str(v) for k, v in (conf or {}).items()})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(level)
    for key in (HIDE_TRACEBACK_CONF, *(k for k in settings if k.startswith("spark.icefloe."))):
        spark.conf.set(key, settings[key])  # an existing session takes the runtime settings too
    register(spark)
    return spark


# --------------------------------------------------------------------------- creating tables


def create_table(
    spark: SparkSession,
    table: str,
    schema: DataFrame | StructType | Schema | Any,
    *,
    partition_by: Sequence[str] | None = None,
    sort_by: Sequence[str] | None = None,
    properties: Mapping[str, str] | None = None,
    location: str | None = None,
    catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    if_not_exists: bool = False,
) -> Table:
    """Create ``table`` (``"ns.t"``) with the columns of ``schema`` (a DataFrame, its
    ``df.schema``, an icefloe Schema or a pyarrow schema), partitioned by ``partition_by``
    (``["day(ts)", "bucket(16, id)"]``) and sorted by ``sort_by`` (``["id", "ts desc"]``), in the
    catalog the data source uses (``catalog`` / ``catalog_properties`` as in
    :func:`icefloe.spark.read`). Spark's own ``CREATE TABLE`` and ``df.writeTo(...).create()``
    need a JVM catalog, which a Python data source cannot provide; write the rows afterwards with
    ``icefloe.spark.write(df, table)`` or ``df.write.format("icefloe").mode("append")``.

    With ``if_not_exists`` an existing table is returned as it is (its schema is not compared)."""
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql.types import StructType as SparkStructType

    from icefloe.errors import TableAlreadyExistsError
    from icefloe.spark._config import catalog_from_options, spark_catalog_conf
    from icefloe.spark.types import to_iceberg_schema

    if isinstance(schema, SparkDataFrame):
        schema = schema.schema
    if isinstance(schema, SparkStructType):
        schema = to_iceberg_schema(schema)
    options: dict[str, str] = {} if catalog is None else {"catalog": catalog}
    for k, v in (catalog_properties or {}).items():
        options[f"catalog.{k}"] = str(v)
    cat = catalog_from_options(options, spark_catalog_conf(spark))
    try:
        created = cat.create_table(
            table, schema=schema, partition_by=list(partition_by) if partition_by else None,
            location=location, properties=properties,
        )
    except TableAlreadyExistsError:
        if if_not_exists:
            return cat.load_table(table)
        raise
    if sort_by:
        try:
            created.replace_sort_order(*sort_by)
        except BaseException:
            cat.drop_table(table, purge=True)
            raise
    return created


# --------------------------------------------------------------------------- errors

# "icefloe.errors.NoSuchTableError: table 'ns.t' does not exist ...\nHint: ..." as the data
# source's worker reports it, inside Spark's own message (AnalysisException, PythonException,
# Py4JJavaError with a JVM stack trace)
_ERROR = re.compile(
    r"icefloe\.errors\.(?P<kind>[A-Za-z]+Error): (?P<message>.*?)"
    r"(?:\nHint: (?P<hint>.*?))?"
    r"(?=\n\s*SQLSTATE|\s+SQLSTATE: |\n\s+at |\n\tat |\n\nThe above exception|\n\nDuring handling"
    r"|\nJVM stacktrace|\Z)",
    re.DOTALL,
)


def _texts(exc: BaseException) -> Iterator[str]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield str(e)
        for attr in ("desc", "stackTrace"):
            value = getattr(e, attr, None)
            if isinstance(value, str):
                yield value
        java = getattr(e, "java_exception", None)
        if java is not None:
            try:
                text = str(java.toString())
            except Exception:  # a closed gateway: the Python side's text is all there is
                text = ""
            yield text
        todo.extend([e.__cause__, e.__context__])


def icefloe_error(exc: BaseException) -> IcefloeError | None:
    """The icefloe error a Spark exception carries (raised by the data source in a Python worker
    and reported by Spark as ``AnalysisException``, ``PythonException``, ...), rebuilt with its
    own type, message and hint; ``exc`` itself when it is one; None when there is none."""
    if isinstance(exc, IcefloeError):
        return exc
    for text in _texts(exc):
        matches = list(_ERROR.finditer(text))
        if not matches:
            continue
        m = matches[-1]  # the innermost: the one the worker raised last
        cls = getattr(errors_module, m.group("kind"), None)
        if not (isinstance(cls, type) and issubclass(cls, IcefloeError)):
            cls = IcefloeError
        message = m.group("message").strip()
        hint = m.group("hint").strip() if m.group("hint") else None
        error = cls(message, hint=hint, spark_error=type(exc).__name__)
        return error
    return None


@contextmanager
def icefloe_errors() -> Iterator[None]:
    """Re-raise an icefloe error that reaches the block inside a Spark exception as itself
    (``NoSuchTableError``, ``SchemaMismatchError``, ... with icefloe's message and hint), chained
    to the Spark exception; other exceptions pass unchanged::

        with icefloe.spark.icefloe_errors():
            spark.read.format("icefloe").load("ns.t").collect()
    """
    try:
        yield
    except IcefloeError:
        raise
    except Exception as e:
        error = icefloe_error(e)
        if error is None:
            raise
        raise error from e
