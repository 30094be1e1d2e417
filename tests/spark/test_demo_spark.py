"""The main job on Spark at a tiny scale, in the suite's shared session: ingest, queries, the late
batch and time travel through the icefloe data source, with the demo's own cross-checks (Q6 against
the source Parquet, every source row readable, time travel returning the earlier answer); then the
rest of the table's life, each stage's effect on the table checked from the catalog (MERGE,
schema and partition changes, compaction, expiry, orphans, rollback, time travel to a tag), and
the ``icefloe`` commands the demo prints, run against its catalog."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

import icefloe
from icefloe.cli._demo_life import LifeResult, cli_catalog_args
from icefloe.cli._demo_spark import run_spark
from icefloe.cli.demo import _catalog_properties
from icefloe.spec.types import StringType


def _require_tpchgen() -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")


@dataclass
class DemoRun:
    workdir: Path
    out: str
    life: LifeResult

    def catalog(self) -> icefloe.Catalog:
        return icefloe.load_catalog("demo", **_catalog_properties(self.workdir))


@pytest.fixture(scope="module")
def demo_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """One run of the whole demo at a tiny scale, shared by the tests of this module."""
    _require_tpchgen()
    workdir = tmp_path_factory.mktemp("demo")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        life = run_spark(workdir, 0.005, fresh=True, spark=spark)
    (workdir / "demo-output.txt").write_text(out.getvalue())  # to read when a test fails
    return DemoRun(workdir, out.getvalue(), life)


def _local(uri: str) -> Path:
    assert uri.startswith("file://")
    return Path(uri[len("file://") :])


def test_spark_demo_first_half(demo_run: DemoRun) -> None:
    """Ingest, queries, the late batch and time travel, with the demo's own cross-checks."""
    out = demo_run.out
    assert "Q6 now matches Q6 computed directly on the source Parquet" in out
    assert "every source row is readable" in out
    assert "tpch.orders: 1 snapshots" in out
    with demo_run.catalog() as cat:
        orders = cat.load_table("tpch.orders")
        assert str(orders.spec().fields[0].transform) == "bucket[16]"
        lineitem = cat.load_table("tpch.lineitem")
        tagged = lineitem.snapshot_by_id(demo_run.life.tag_snapshot_id)
        # the tag is the late batch: an append into the months the first append already filled
        assert tagged.summary.operation.value == "append"
        assert int(tagged.summary.properties["added-records"]) > 0
        assert [str(f.transform) for f in lineitem.specs()[0].fields] == ["month"]


def test_spark_demo_stages_change_the_table_as_printed(demo_run: DemoRun) -> None:
    life, out = demo_run.life, demo_run.out
    # every stage ran, in order, and printed what it did
    titles = [line[4:] for line in out.splitlines() if line.startswith("==> ")]
    wanted = [
        "late batch",
        "tag the ingested table",
        "change-data MERGE",
        "schema change",
        "partition change",
        "a writer crashes",
        "health report before maintenance",
        "compaction on Spark",
        "snapshot expiry",
        "orphan cleanup",
        "health report after maintenance",
        "a bad batch",
        "time travel: tag",
        "metadata tables",
    ]
    positions = [next(i for i, t in enumerate(titles) if t.startswith(w)) for w in wanted]
    assert positions == sorted(positions)
    assert out.count("    table now: ") == 7
    # the snapshots the stages committed, in order
    assert [op for _, op in life.snapshots] == ["overwrite", "append", "append", "replace", "append"]

    # the change-data MERGE: each kind of change, counted as the batch has it, merge-on-read
    m = life.merge_result
    assert m.mode == "merge-on-read" and m.delete_files_added > 0
    assert (m.rows_updated, m.rows_inserted, m.rows_deleted) == (
        life.merge["updates"],
        life.merge["inserts"],
        life.merge["deletes"],
    )
    assert min(life.merge.values()) > 0
    assert m.files_planned < 20  # the l_shipdate range of the ON condition pruned the other months

    with demo_run.catalog() as cat:
        t = cat.load_table("tpch.lineitem")
        # schema change, then rows that use it; partition change month -> year
        assert t.schema().find_field("l_carrier").field_type == StringType()
        assert [str(f.transform) for f in t.spec().fields] == ["year"]
        assert t.spec().spec_id != 0 and len(t.specs()) == 2
        assert life.carrier_rows > 0 and life.year_rows > 0
        carriers = t.scan(row_filter="l_carrier is not null", selected_fields=("l_carrier",)).to_arrow()
        assert carriers.num_rows == life.carrier_rows + life.year_rows

        # compaction: fewer files, no delete file left, everything in the current spec
        c = life.compaction
        assert life.files_after_compaction < life.files_before_compaction
        assert c.rewritten_data_files_count > c.added_data_files_count > 0
        assert c.removed_delete_files_count > 0
        files = t.inspect.files()
        assert set(files["content"].to_pylist()) == {0}
        assert set(files["spec_id"].to_pylist()) == {t.spec().spec_id}

        # expiry removed every snapshot but the tag's, the current one and the bad batch
        snapshot_ids = {s.snapshot_id for s in t.snapshots()}
        assert len(life.expired_snapshot_ids) == 4  # the first append, MERGE, two appends
        assert not snapshot_ids & set(life.expired_snapshot_ids)
        assert snapshot_ids == {life.tag_snapshot_id, life.pre_bad_snapshot_id, life.bad_snapshot_id}
        assert [s.summary.operation.value for s in t.snapshots()] == ["append", "replace", "append"]

        # the orphan is gone, and no file any snapshot references is
        assert life.orphans_removed == (life.orphan,)
        assert not _local(life.orphan).exists()
        referenced = set(t.inspect.all_files()["file_path"].to_pylist())
        referenced |= set(t.inspect.all_manifests()["path"].to_pylist())
        referenced |= {s.manifest_list for s in t.snapshots()}
        assert referenced and all(_local(p).exists() for p in referenced)
        data_dir = _local(t.location) / "data"
        on_disk = {f"file://{p}" for p in data_dir.rglob("*") if p.is_file()}
        assert on_disk == set(t.inspect.all_data_files()["file_path"].to_pylist())

        # the bad batch was found and rolled back: main is where it was before the batch
        assert life.bad_rows > 0
        assert t.current_snapshot().snapshot_id == life.pre_bad_snapshot_id  # type: ignore[union-attr]
        assert t.snapshot_by_id(life.bad_snapshot_id).parent_snapshot_id == life.pre_bad_snapshot_id
        assert t.scan(row_filter="l_quantity <= 0").count() == 0
        assert t.scan(snapshot_id=life.bad_snapshot_id, row_filter="l_quantity <= 0").count() == life.bad_rows
        assert {name: ref.snapshot_id for name, ref in t.refs().items()} == {
            "main": life.pre_bad_snapshot_id,
            "ingested": life.tag_snapshot_id,
        }

        # time travel to the tag still reads the rows as they were, in the schema of then
        tagged = t.snapshot_by_id(life.tag_snapshot_id)
        then = t.scan(ref="ingested").to_arrow()
        assert then.num_rows == int(tagged.summary.properties["total-records"])
        assert "l_carrier" not in then.column_names
        assert t.scan().count() == then.num_rows - life.merge["deletes"] + life.merge["inserts"] + (
            life.carrier_rows + life.year_rows
        )

    # health: the MERGE's deletes are a finding before maintenance, none is left after
    before, after = life.health_before, life.health_after
    assert before is not None and after is not None
    assert before.finding("delete_ratio") is not None and before.delete_files > 0
    assert after.delete_files == 0 and after.healthy
    assert after.data_files < before.data_files
    assert "fix: icefloe compact tpch.lineitem" in out


def test_icefloe_commands_work_against_the_demo_catalog(demo_run: DemoRun) -> None:
    """The commands the demo prints at the end (and a few more) run against its catalog."""
    from click.testing import CliRunner

    from icefloe.cli._app import cli

    props = _catalog_properties(demo_run.workdir)
    global_args = cli_catalog_args(props)
    assert "Go on from here with the icefloe command" in demo_run.out
    for command in demo_run.life.cli_commands:
        assert shlex.join([*global_args, *command]) in demo_run.out
    runner = CliRunner()

    def run(*args: str) -> str:
        r = runner.invoke(cli, [*global_args, *args])
        assert r.exit_code == 0, (args, r.output, r.stderr)
        return r.stdout

    outputs = {" ".join(c[:1]): run(*c) for c in demo_run.life.cli_commands}
    assert "l_carrier" in outputs["describe"] and "year(l_shipdate)" in outputs["describe"]
    assert "ingested" in outputs["refs"]
    assert "DHL" in outputs["query"]
    assert "tpch.lineitem" in outputs["health"]
    snapshots = json.loads(run("snapshots", "tpch.lineitem", "--json"))
    assert len(snapshots) == 3
    assert "tpch.lineitem" in run("tables", "tpch") and "tpch.orders" in run("tables", "tpch")
    assert run("files", "tpch.lineitem").strip() and run("partitions", "tpch.lineitem").strip()
    assert "Usage" in run("--help")


@pytest.mark.s3
@pytest.mark.postgres
def test_spark_demo_on_s3_with_a_postgres_catalog(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    """The same job with its tables on S3 (SeaweedFS on loopback) and its catalog in PostgreSQL:
    Spark's executors write and read every data file through icefloe's FileIO on the object store."""
    _require_tpchgen()
    s3 = request.getfixturevalue("seaweedfs_server")
    pg = request.getfixturevalue("postgres_server")
    warehouse = s3.warehouse(f"demo-{uuid.uuid4().hex[:8]}")
    props = {
        "type": "sql",
        "uri": pg.create_schema(f"demo_{uuid.uuid4().hex[:8]}"),
        "warehouse": warehouse,
        **s3.file_io_properties(),
    }
    run_spark(tmp_path, 0.005, fresh=True, spark=spark, catalog=props)
    out = capsys.readouterr().out
    assert "Q6 now matches Q6 computed directly on the source Parquet" in out
    assert "every source row is readable" in out
    assert f"warehouse: {warehouse}" in out
    assert pg.password not in out

    cat = icefloe.load_catalog("demo", **props)  # the demo's catalog name keys its rows
    try:
        lineitem = cat.load_table("tpch.lineitem")
        assert len(lineitem.snapshots()) == 3  # the tag's, main's, the rolled-back batch's
        files = lineitem.inspect.all_data_files()["file_path"].to_pylist()
        assert files and all(f.startswith(f"{warehouse}/tpch/lineitem/data/") for f in files)
        listed = s3.filesystem().get_file_info(
            pafs.FileSelector(warehouse[len("s3://") :] + "/tpch/lineitem/data", recursive=True)
        )
        assert {f"s3://{i.path}" for i in listed if i.type == pafs.FileType.File} == set(files)
        assert not (tmp_path / "warehouse").exists() and not (tmp_path / "catalog.db").exists()
    finally:
        cat.close()
