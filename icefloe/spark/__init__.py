"""Apache Spark integration: the ``icefloe`` data source and the fast column-pruning read.

::

    import icefloe.spark
    spark = icefloe.spark.start_session()           # or icefloe.spark.register(an_existing_session)
    icefloe.spark.create_table(spark, "ns.table", df, partition_by=["day(ts)"])
    df = spark.read.format("icefloe").load("ns.table")
    df.write.format("icefloe").mode("append").save("ns.table")
    icefloe.spark.read(spark, "ns.table", columns=["id", "ts"], where="id > 10")
    icefloe.spark.write(df, "ns.table", mode="append")     # distributed and sorted as Java does

This package is the only one in icefloe that imports pyspark.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from icefloe.spark.dml import DmlResult, MergeBuilder, MergeCardinalityError, SparkTable, table
from icefloe.spark.read import read as _read
from icefloe.spark.setup import create_table, icefloe_error, icefloe_errors, start_session, use_this_python
from icefloe.spark.source import IcefloeDataSource
from icefloe.spark.sql import sql
from icefloe.spark.types import to_iceberg_schema, to_spark_schema
from icefloe.spark.write import write as _write

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DmlResult",
    "IcefloeDataSource",
    "MergeBuilder",
    "MergeCardinalityError",
    "SparkTable",
    "create_table",
    "icefloe_error",
    "icefloe_errors",
    "read",
    "register",
    "sql",
    "start_session",
    "table",
    "to_iceberg_schema",
    "to_spark_schema",
    "write",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _raising_icefloe_errors(f: Callable[_P, _R]) -> Callable[_P, _R]:
    """``f`` raising the icefloe error inside a Spark exception as itself (see icefloe_errors)."""

    @functools.wraps(f)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with icefloe_errors():
            return f(*args, **kwargs)

    return wrapper


read = _raising_icefloe_errors(_read)
write = _raising_icefloe_errors(_write)

PARTITION_OVERWRITE_CONF = "spark.sql.sources.partitionOverwriteMode"
TIME_TYPE_CONF = "spark.sql.timeType.enabled"


def register(spark: SparkSession) -> type[IcefloeDataSource]:
    """Register the ``icefloe`` data source with ``spark`` and return the registered class.

    Python data sources run in worker processes that cannot read the session conf, so this call
    captures ``spark.icefloe.catalog.*`` and ``spark.sql.sources.partitionOverwriteMode`` now:
    call it again after changing them. Unless ``spark.pyspark.python`` or ``PYSPARK_PYTHON``
    says otherwise, the workers it starts run this interpreter, which can import icefloe.
    The source takes no pushed filters (see :mod:`icefloe.spark.source`), so
    ``spark.sql.python.filterPushdown.enabled`` is left as it is.

    Iceberg ``time`` columns are Spark ``TIME``, which Spark 4.1+ supports only with
    ``spark.sql.timeType.enabled``: without it, reading works but ``count()``, ``groupBy`` and
    other Dataset operations on a DataFrame with a time column fail with
    ``UNSUPPORTED_TIME_TYPE``. So this call turns the conf on for the session unless it was set
    explicitly (see docs/spark.md for what else it changes).
    """
    from icefloe.spark._config import spark_catalog_conf

    # workers run `python3` from the PATH unless told otherwise, which rarely has icefloe
    use_this_python(spark)
    if spark.conf.get(TIME_TYPE_CONF, None) is None:
        spark.conf.set(TIME_TYPE_CONF, "true")

    mode = (spark.conf.get(PARTITION_OVERWRITE_CONF, "static") or "static").lower()
    # A class built here (not importable by name) is pickled by value, captured settings included.
    registered = type(
        "RegisteredIcefloeDataSource",
        (IcefloeDataSource,),
        {
            "spark_conf": spark_catalog_conf(spark),
            "partition_overwrite_mode": mode,
            "__module__": "icefloe.spark._registered",
        },
    )
    spark.dataSource.register(registered)
    return registered
