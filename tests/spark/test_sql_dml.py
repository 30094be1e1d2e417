"""DELETE, UPDATE and MERGE statements through ``icefloe.spark.sql``, in copy-on-write and
merge-on-read, checked three ways:

1. against the serial model (``dml_model.SCENARIOS``);
2. against Iceberg Java 1.10 on Spark 3.5 running the same statement text on a copy of the table
   (the table icefloe started from, registered in Java's own catalog), same final rows;
3. Iceberg Java reads every table icefloe wrote and gets the same rows.

The icefloe side runs once per module; the Java side is one JVM for every scenario.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import interop_support as sup
from dml_model import COLUMNS, SCENARIOS, SCHEMA, SOURCE_DDL, arrow, key, source_rows, target_rows

import icefloe.spark

MODES = ("copy-on-write", "merge-on-read")


@pytest.fixture(scope="module")
def scenario_runs(spark: Any, spark_catalog: Any) -> list[dict[str, Any]]:
    """Every scenario in both modes, run by icefloe.spark.sql on a fresh table each."""
    src = [tuple(r[c] for c in [*COLUMNS, "op"]) for r in source_rows()]
    spark.createDataFrame(src, SOURCE_DDL).createOrReplaceTempView("src")
    runs = []
    for mode in MODES:
        for n, sc in enumerate(SCENARIOS):
            name = f"spark.sqldml_{mode[0]}{n}_{sc.name}"
            props = {f"write.{c}.mode": mode for c in ("delete", "update", "merge")}
            t = spark_catalog.create_table(
                name, schema=SCHEMA, partition_by=list(sc.partition_by), properties=props
            )
            t.append(arrow(target_rows()[:20]))
            t.append(arrow(target_rows()[20:]))
            start = spark_catalog.load_table(name).metadata_location
            statement = sc.sql.format(t=name)
            out = icefloe.spark.sql(spark, statement).collect()
            final = spark_catalog.load_table(name)
            runs.append(
                {
                    "name": f"{mode}/{sc.name}",
                    "table": name,
                    "mode": mode,
                    "scenario": sc,
                    "statement": statement,
                    "start_metadata": start,
                    "final_metadata": final.metadata_location,
                    "rows": final.scan().to_arrow().to_pylist(),
                    "result": out[0].asDict(),
                    "snapshots": len(final.snapshots()),
                }
            )
    spark.catalog.dropTempView("src")
    return runs


def test_scenarios_match_the_model(scenario_runs: list[dict[str, Any]]) -> None:
    problems = []
    for run in scenario_runs:
        want = run["scenario"].model(target_rows(), source_rows())
        if key(run["rows"]) != key(want):
            problems.append(
                f"{run['name']}: {run['statement']}\n  got  {key(run['rows'])}\n  want {key(want)}"
            )
        result = run["result"]
        assert result["num_affected_rows"] == (
            result["num_updated_rows"] + result["num_deleted_rows"] + result["num_inserted_rows"]
        )
        assert run["snapshots"] == 3, run["name"]  # two appends and the statement: one commit
    assert not problems, "\n".join(problems)


def test_modes_write_what_they_say(scenario_runs: list[dict[str, Any]], spark_catalog: Any) -> None:
    for run in scenario_runs:
        t = spark_catalog.load_table(run["table"])
        props = t.current_snapshot().summary.props
        if run["mode"] == "copy-on-write":
            assert int(props.get("added-delete-files", "0")) == 0, run["name"]
        elif not run["scenario"].name.startswith("delete"):
            # merge-on-read rewrites nothing (a DELETE may still drop whole files by metadata)
            assert int(props.get("deleted-data-files", "0")) == 0, run["name"]
            if run["scenario"].name != "merge_insert_only":
                assert int(props.get("added-position-delete-files", "0")) > 0, run["name"]


@pytest.mark.oracle
@pytest.mark.java
def test_iceberg_java_agrees(scenario_runs: list[dict[str, Any]], tmp_path: Path) -> None:
    """Iceberg Java's MERGE/UPDATE/DELETE of the same text on the same starting table leaves the
    same rows; and Java reads the tables icefloe wrote."""
    sup.require_oracle()
    jobs = []
    for run in scenario_runs:
        schema = sup.schema_json(run["final_metadata"])
        jobs.append(
            {
                "name": run["name"],
                "table": run["table"],
                "start_metadata": run["start_metadata"],
                "source_rows": [[r[c] for c in [*COLUMNS, "op"]] for r in source_rows()],
                "statements": [run["statement"]],
                "schema": schema,
                "icefloe_metadata": run["final_metadata"],
            }
        )
    spec = {
        "warehouse": str(tmp_path / "java-wh"),
        "catalog_db": str(tmp_path / "java-catalog.db"),
        "source_ddl": SOURCE_DDL,
        "jobs": jobs,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    script = Path(__file__).resolve().parent / "java_dml.py"
    proc = sup.run_oracle_script([str(script), str(tmp_path / "spec.json"), str(tmp_path / "out.json")], 1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    problems = []
    for run, job in zip(scenario_runs, jobs, strict=True):
        res = out[run["name"]]
        if res["errors"]:
            problems.append(f"{run['name']}: {res['errors']}")
            continue
        ours = sup.canon_texts(job["schema"], run["rows"])
        java = sorted(res["java"])
        if sorted(ours.elements()) != java:
            mine = sorted(ours.elements())
            problems.append(
                f"{run['name']}: Java's {run['statement']!r} differs:\n  icefloe {mine}\n  java    {java}"
            )
        if sorted(res["icefloe_read_by_java"]) != sorted(ours.elements()):
            problems.append(f"{run['name']}: Java reads icefloe's table differently")
    assert not problems, "\n".join(problems)
