"""A Spark session configured the way icefloe's demo, benchmarks and tests want it: quiet, no UI,
bound to loopback, Python workers on this interpreter; and the conf entries that define an
icefloe catalog for the data source."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["catalog_conf", "session_confs", "spark_session"]

_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def spark_session(master: str = "local[2]", app_name: str = "icefloe-demo", **conf: str) -> Any:
    """A quiet Spark session for the demo and the benchmarks: no UI, bound to loopback, few
    shuffle partitions (the data is small), Python workers on this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # PySpark warns about pandas 3 on import; the demo does not go through pandas
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    from pyspark.sql import SparkSession

    log4j = Path(tempfile.gettempdir()) / "icefloe-spark-log4j2.properties"
    if not log4j.exists():
        log4j.write_text(_LOG4J)

    b = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.as_uri()}")
        .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.as_uri()}")
    )
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def catalog_conf(name: str, props: dict[str, str]) -> dict[str, str]:
    """Spark conf entries that define icefloe catalog ``name`` for the data source."""
    return {f"spark.icefloe.catalog.{name}.{k}": v for k, v in props.items()}


@contextlib.contextmanager
def session_confs(spark: Any, confs: Mapping[str, str]) -> Iterator[None]:
    """``confs`` set on ``spark``'s session conf for the block, the earlier values (or their
    absence) restored after it, also when the block raises."""
    saved = {k: spark.conf.get(k, None) for k in confs}
    try:
        for k, v in confs.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, old in saved.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)
