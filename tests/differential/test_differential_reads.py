"""Differential reads (issue 9): seeded random tables with a model of their rows
(:mod:`icefloe.testing.tables`), random queries, every read path, exact comparison.

The suite runs a bounded slice (``BOUNDED_CASES``, about 3 minutes on 2 cores: 100 Arrow/DuckDB
cases of 30 queries, 20 Spark cases, one JVM for 12 Java cases of 10 queries). A long run is
``--cases N`` (or ``ICEFLOE_DIFF_CASES=N``; N cases for every selected test) with any ``--seed S``
(``ICEFLOE_DIFF_SEED``), e.g.::

    .venv/bin/pytest tests/differential -k "arrow or operations" --cases 2000 --seed 7
    .venv/bin/pytest tests/differential -m spark --cases 100 --seed 7
    .venv/bin/pytest tests/differential -m java --cases 200 --seed 7

``--case K`` (``ICEFLOE_DIFF_CASE=K``) runs case K alone: the replay.

Every failure prints its seed, case number and the command that replays just that case. The
paths, the semantics each must follow and the comparison rules are in ``diff_harness.py`` and
``diff_sql.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import diff_harness as H
import pytest

import icefloe
from icefloe.testing.tables import BuiltTable, TableOptions, build_table

BOUNDED_CASES = {
    "test_arrow_and_duckdb": 100,
    "test_table_operations_commit": 100,
    "test_spark_single_queries": 8,
    "test_spark_dataframe_sequences": 6,
    "test_spark_fast_path": 6,
    "test_java": 12,
}
ARROW_QUERIES = 30
SPARK_SINGLE_QUERIES = 4
SPARK_SEQUENCE_STEPS = 8
FAST_PATH_READS = 2
JAVA_QUERIES = 10

_built: dict[str, BuiltTable] = {}


def _table(catalog: Any, namespace: str, seed: int, number: int, options: TableOptions) -> BuiltTable:
    """The table of case ``number`` in ``catalog`` (built once per run and catalog)."""
    ident = f"{namespace}.s{seed}_c{number}"
    key = f"{id(catalog)}:{ident}"
    if key not in _built:
        if (namespace,) not in catalog.list_namespaces():
            catalog.create_namespace(namespace)
        table_seed = H.Case(seed, number, "").table_seed
        _built[key] = build_table(catalog, ident, table_seed, options)
    return _built[key]


@pytest.fixture(scope="module")
def diff_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    d = tmp_path_factory.mktemp("differential")
    (d / "wh").mkdir()
    cat = icefloe.load_catalog(
        "diff", type="sql", uri=f"sqlite:///{d / 'catalog.db'}", warehouse=(d / "wh").as_uri()
    )
    yield cat
    cat.close()


# ------------------------------------------------------------------------------ Arrow and DuckDB


def test_arrow_and_duckdb(diff_catalog: Any, diff_seed: int, case_number: int) -> None:
    """Arrow scans (to_arrow, to_batches, count; text and expression filters; projections with
    struct fields; limits; snapshots, tags, branches) and DuckDB over their output."""
    case = H.Case(diff_seed, case_number, "test_arrow_and_duckdb")
    built = _table(diff_catalog, "diff", diff_seed, case_number, H.ARROW_OPTIONS)
    report = H.Report(case, built)
    H.run_arrow_duckdb_case(report, built, ARROW_QUERIES)
    report.check()


def test_table_operations_commit(diff_catalog: Any, diff_seed: int, case_number: int) -> None:
    """Every generated operation (appends, deletes and overwrites by random filters, upserts,
    equality deletes, tags, branches, schema and partition evolution) commits without error."""
    case = H.Case(diff_seed, case_number, "test_table_operations_commit")
    built = _table(diff_catalog, "diff", diff_seed, case_number, H.ARROW_OPTIONS)
    report = H.Report(case, built)
    for problem in built.problems:
        report.add("write", problem.split(" -> FAILED ")[0], "FAILED " + problem.split(" -> FAILED ")[-1])
    report.check()


# ------------------------------------------------------------------------------ Spark


@pytest.mark.spark
def test_spark_single_queries(spark: Any, spark_catalog: Any, diff_seed: int, case_number: int) -> None:
    """Each query on a fresh ``spark.read.format("icefloe")`` DataFrame, Spark SQL semantics."""
    case = H.Case(diff_seed, case_number, "test_spark_single_queries")
    built = _table(spark_catalog, "differential", diff_seed, case_number, H.ARROW_OPTIONS)
    report = H.Report(case, built)
    rng = random.Random(case.table_seed ^ 0x5A)
    for _ in range(SPARK_SINGLE_QUERIES):
        H.run_spark_single(report, spark, built, rng)
    report.check()


@pytest.mark.spark
def test_spark_dataframe_sequences(spark: Any, spark_catalog: Any, diff_seed: int, case_number: int) -> None:
    """Several queries on ONE data-source DataFrame: counts, filtered counts, chained filters,
    projections, limits, aggregates, a self-join of two filtered views."""
    case = H.Case(diff_seed, case_number, "test_spark_dataframe_sequences")
    built = _table(spark_catalog, "differential", diff_seed, case_number, H.ARROW_OPTIONS)
    report = H.Report(case, built)
    H.run_spark_sequence(report, spark, built, SPARK_SEQUENCE_STEPS, random.Random(case.table_seed ^ 0x5E))
    report.check()


@pytest.mark.spark
def test_spark_fast_path(spark: Any, spark_catalog: Any, diff_seed: int, case_number: int) -> None:
    """``icefloe.spark.read`` with columns, where and a snapshot or ref, then Spark operations."""
    case = H.Case(diff_seed, case_number, "test_spark_fast_path")
    built = _table(spark_catalog, "differential", diff_seed, case_number, H.ARROW_OPTIONS)
    report = H.Report(case, built)
    rng = random.Random(case.table_seed ^ 0xFA)
    for _ in range(FAST_PATH_READS):
        H.run_fast_path(report, spark, built, rng)
    report.check()


# ------------------------------------------------------------------------------ Iceberg Java


@pytest.fixture(scope="module")
def java_batch(
    tmp_path_factory: pytest.TempPathFactory, diff_seed: int, request: pytest.FixtureRequest
) -> Any:
    """Every Java case's table in one SQLite catalog that Iceberg Java's JdbcCatalog reads, and
    all their queries through ONE JVM."""
    import interop_support as sup

    sup.require_oracle()
    numbers = H.case_numbers(request.config, BOUNDED_CASES["test_java"])
    work = tmp_path_factory.mktemp("differential-java")
    (work / "wh").mkdir()
    cat = icefloe.load_catalog(
        "diffjava", type="sql", uri=f"sqlite:///{work / 'catalog.db'}", warehouse=(work / "wh").as_uri()
    )
    cases: dict[int, tuple[H.Case, BuiltTable, list[H.JavaQuery], str | None]] = {}
    specs = []
    for n in numbers:
        case = H.Case(diff_seed, n, "test_java")
        built = _table(cat, "dj", diff_seed, n, H.java_options())
        skip = H.unsupported_by_java(built)
        queries = [] if skip else H.java_queries(case, built, JAVA_QUERIES)
        cases[n] = (case, built, queries, skip)
        specs += [q.spec("diffjava") for q in queries]
    (work / "spec.json").write_text(
        json.dumps(
            {
                "db": str(work / "catalog.db"),
                "catalog": "diffjava",
                "warehouse": str(work / "wh"),
                "queries": specs,
            }
        )
    )
    script = Path(__file__).with_name("diff_java_queries.py")
    proc = sup.run_oracle_script([str(script), str(work / "spec.json"), str(work / "out.json")])
    if not (work / "out.json").exists():
        raise AssertionError(
            f"diff_java_queries failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    results = json.loads((work / "out.json").read_text())
    cat.close()
    return cases, results


@pytest.mark.oracle
@pytest.mark.java
def test_java(java_batch: Any, case_number: int) -> None:
    """Iceberg Java 1.10 (Spark 3.5 SQL) reads the generated table: rows, limits, aggregates,
    snapshots, tags and branches, against the model with Spark SQL semantics."""
    cases, results = java_batch
    case, built, queries, skip = cases[case_number]
    if skip:
        pytest.skip(skip)
    report = H.Report(case, built)
    for jq in queries:
        H.check_java_result(report, jq, results.get(jq.key, {"error": "no result"}))
    report.check()
