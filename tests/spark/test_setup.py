"""Getting Spark ready for icefloe: ``start_session``, ``register`` choosing the workers' Python,
``create_table``, and icefloe's errors out of Spark's exceptions."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe
import icefloe.spark
from icefloe.spark.setup import HIDE_TRACEBACK_CONF, icefloe_error

pytestmark = pytest.mark.spark


def test_create_table_from_a_dataframe(spark: Any, spark_catalog: Any, table_name: str) -> None:
    import datetime as dt

    df = spark.createDataFrame(
        [(1, "a", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)), (2, "b", dt.datetime(2024, 1, 2, tzinfo=dt.UTC))],
        "id long, s string, ts timestamp",
    )
    t = icefloe.spark.create_table(spark, table_name, df, partition_by=["day(ts)"], sort_by=["id desc"])
    assert [f.name for f in t.schema().fields] == ["id", "s", "ts"]
    assert str(t.schema().find_field("ts").field_type) == "timestamptz"
    assert "partitioned by day(ts)" in repr(t) and "sorted by id desc" in repr(t)
    df.write.format("icefloe").mode("append").save(table_name)
    assert spark_catalog.load_table(table_name).scan().count() == 2
    again = icefloe.spark.create_table(spark, table_name, df.schema, if_not_exists=True)
    assert again.current_snapshot() is not None
    with pytest.raises(icefloe.TableAlreadyExistsError):
        icefloe.spark.create_table(spark, table_name, df)
    arrow = icefloe.spark.create_table(spark, table_name + "_arrow", pa.schema([("x", pa.int32())]))
    assert [f.name for f in arrow.schema().fields] == ["x"]


def test_errors_come_out_as_icefloe_errors(spark: Any, spark_catalog: Any, table_name: str) -> None:
    spark_catalog.create_table(table_name, schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(icefloe.NoSuchTableError) as e, icefloe.spark.icefloe_errors():
        spark.read.format("icefloe").load("spark.no_such_table").collect()
    assert e.value.message == "table 'spark.no_such_table' does not exist in catalog 'default'"
    assert e.value.hint is not None and e.value.hint.startswith("tables in 'spark':")
    assert type(e.value.__cause__).__name__ == "AnalysisException"
    # the helpers raise icefloe's errors themselves
    bad = spark.createDataFrame([("x",)], "id string")
    with pytest.raises(icefloe.SchemaMismatchError, match="column 'id'"):
        icefloe.spark.write(bad, table_name)
    with pytest.raises(icefloe.ExpressionError, match="nope"):
        icefloe.spark.read(spark, table_name, where="nope > 1", engine="source").collect()
    # other exceptions pass unchanged
    with pytest.raises(ZeroDivisionError), icefloe.spark.icefloe_errors():
        _ = 1 / 0


def test_icefloe_error_reads_spark_messages() -> None:
    text = (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent "
        "call last):\n  File \"x.py\", line 1, in schema\nicefloe.errors.NoSuchTableError: table 'a.b' does "
        "not exist in catalog 'default'\nHint: tables in 'a': c\n SQLSTATE: 38000"
    )
    err = icefloe_error(RuntimeError(text))
    assert isinstance(err, icefloe.NoSuchTableError)
    assert (err.message, err.hint) == ("table 'a.b' does not exist in catalog 'default'", "tables in 'a': c")
    hidden = (
        "Failed: icefloe.errors.CorruptFileError: cannot decode data file 'f': truncated\n\tat org.apache..."
    )
    err = icefloe_error(RuntimeError(hidden))
    assert isinstance(err, icefloe.CorruptFileError) and err.hint is None
    assert icefloe_error(RuntimeError("[SOMETHING] else")) is None


def test_start_session_configures_the_session(spark: Any) -> None:
    before = spark.conf.get(HIDE_TRACEBACK_CONF, None)
    try:
        session = icefloe.spark.start_session(
            catalog="setup_test", catalog_properties={"uri": "sqlite:////nonexistent/x.db"}, log_level="error"
        )
        assert session is spark  # the running session, configured alike
        assert session.conf.get(HIDE_TRACEBACK_CONF) == "true"
        assert session.conf.get("spark.icefloe.catalog.setup_test.uri") == "sqlite:////nonexistent/x.db"
        assert os.environ["PYSPARK_PYTHON"]
        with pytest.raises(icefloe.ValidationError, match="unknown log level"):
            icefloe.spark.start_session(log_level="chatty")
    finally:
        if before is None:
            spark.conf.unset(HIDE_TRACEBACK_CONF)
        else:
            spark.conf.set(HIDE_TRACEBACK_CONF, before)
        spark.conf.unset("spark.icefloe.catalog.setup_test.uri")
        icefloe.spark.register(spark)


_SCRIPT = """
import os, sys
import pyarrow as pa
import icefloe, icefloe.spark
from pyspark.sql import SparkSession

uri, warehouse, which = sys.argv[1], sys.argv[2], sys.argv[3]
cat = icefloe.load_catalog("default", uri=uri, warehouse=warehouse)
cat.create_namespace_if_not_exists("ns")
if not cat.table_exists("ns.t"):
    t = cat.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3]}))
assert "PYSPARK_PYTHON" not in os.environ
if which == "register":
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.icefloe.catalog.default.uri", uri).getOrCreate())
    icefloe.spark.register(spark)
else:
    spark = icefloe.spark.start_session("local[1]", catalog_properties={"uri": uri},
                                        conf={"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                                              "spark.driver.bindAddress": "127.0.0.1"})
    assert spark.conf.get("spark.ui.showConsoleProgress") == "false"
    assert spark.sparkContext.getConf().get("spark.pyspark.python") == sys.executable
print("ROWS", spark.read.format("icefloe").load("ns.t").count())
try:
    spark.read.format("icefloe").load("ns.nope")
except Exception as e:
    print("ERROR", " | ".join(str(e).splitlines()))
spark.stop()
"""


@pytest.mark.slow
@pytest.mark.parametrize("which", ["register", "start_session"])
def test_workers_can_import_icefloe_without_pyspark_python(tmp_path: Path, which: str) -> None:
    """A session made without PYSPARK_PYTHON runs its workers on ``python3`` from the PATH, which
    lacks icefloe; register() (and start_session()) make them run this interpreter."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    r = subprocess.run(
        [sys.executable, str(script), f"sqlite:///{tmp_path / 'c.db'}", (tmp_path / "wh").as_uri(), which],
        cwd=tmp_path,  # a directory without icefloe in it
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ROWS 3" in r.stdout, r.stdout + r.stderr
    error = next(line for line in r.stdout.splitlines() if line.startswith("ERROR"))
    assert "NoSuchTableError" in error
    if which == "start_session":
        # tracebacks hidden: icefloe's message right after Spark's prefix; no stage progress bars
        assert "instance: icefloe.errors.NoSuchTableError: table 'ns.nope' does not exist in catalog" in error
        assert "Traceback" not in error
        assert "[Stage" not in r.stdout + r.stderr
        assert " WARN " not in r.stderr  # Spark's log at ERROR
