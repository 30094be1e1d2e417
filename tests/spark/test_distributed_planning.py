"""Distributed planning (issue 17, part 3): manifests read and filtered by Spark tasks give exactly
the scan tasks driver planning gives, on a table with several manifests per snapshot, two
partition specs, position and equality deletes, and time travel to every snapshot; ``auto``
distributes by the count of manifests left after partition-summary pruning; bad modes are typed
errors; ``icefloe.spark.read`` and the data source read the same rows either way."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import icefloe
import icefloe.spark
from icefloe.arrow.deletes import write_equality_deletes, write_position_deletes
from icefloe.errors import ConfigError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import BooleanExpression, parse
from icefloe.manifest import ManifestContent, read_manifest_list
from icefloe.scan.planner import plan_files
from icefloe.scan.task import FileScanTask
from icefloe.spark._distributed_planning import (
    ManifestGroupPartition,
    choose_planning,
    plan_files_distributed,
    planned_group,
    source_partitions,
)
from icefloe.spec.properties import (
    DATA_PLANNING_MODE,
    DEFAULT_DISTRIBUTED_MIN_MANIFESTS,
    DELETE_PLANNING_MODE,
    DISTRIBUTED_MIN_MANIFESTS,
)
from icefloe.table import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()), pa.field("v", pa.float64())]
)
FILTERS = [
    None,
    "id < 25",
    "cat = 'b'",
    "id >= 40 and cat != 'a'",
    "v > 30.5",
    "id in (1, 15, 55, 71)",
    "cat is null or id > 70",
]


def _rows(ids: list[int], cats: list[str | None]) -> pa.Table:
    return pa.table(
        {"id": ids, "cat": [cats[i % len(cats)] for i in range(len(ids))], "v": [i + 0.5 for i in ids]},
        schema=SCHEMA,
    )


def _positions(path: str, ids: set[int]) -> list[int]:
    col = pq.read_table(path, columns=["id"]).column("id").to_pylist()
    return [i for i, v in enumerate(col) if v in ids]


@pytest.fixture(scope="module")
def varied(spark_catalog: icefloe.Catalog) -> Table:
    """Eight snapshots: appends of two partitions each (one manifest, two files per append), a
    position delete and an equality delete under spec 0, a spec change to (cat, bucket(4, id)),
    appends and a position delete under spec 1."""
    t = spark_catalog.create_table(f"spark.dplan_{uuid.uuid4().hex[:8]}", schema=SCHEMA, partition_by=["cat"])
    for i in range(4):
        t.append(_rows(list(range(i * 10, i * 10 + 10)), ["a", "b"] if i % 2 == 0 else ["c", None]))
    t = t.refresh()
    files = {task.file.partition[0]: task.file for task in t.scan(row_filter="id < 10").plan_files()}
    spec_id = t.spec().spec_id
    pos = write_position_deletes(
        t.io,
        t.metadata,
        {files["a"].file_path: _positions(files["a"].file_path, {2, 4})},
        spec_id=spec_id,
        partition=("a",),
    )
    eq = write_equality_deletes(
        t.io,
        t.metadata,
        pa.table({"id": pa.array([13, 15, 31], pa.int64())}),
        ["id"],
        spec_id=spec_id,
        partition=("c",),
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=pos + eq)
    t = t.refresh()
    with t.update_spec() as u:
        u.add_field("bucket(4, id)")
    t = t.refresh()
    for i in range(4, 7):
        t.append(_rows(list(range(i * 10, i * 10 + 10)), ["a", "b", "c"]))
    t = t.refresh()
    new = next(task.file for task in t.scan(row_filter="id >= 60").plan_files() if task.file.spec_id == 1)
    ids = set(pq.read_table(new.file_path, columns=["id"]).column("id").to_pylist())
    pos1 = write_position_deletes(
        t.io,
        t.metadata,
        {new.file_path: _positions(new.file_path, {min(ids)})},
        spec_id=1,
        partition=new.partition,
    )
    with t.transaction() as tx:
        tx.row_delta(add_delete_files=pos1)
    return t.refresh()


def _local(t: Table, snapshot_id: int | None, row_filter: str | None) -> list[FileScanTask]:
    scan = t.scan(row_filter=row_filter, snapshot_id=snapshot_id)
    return plan_files(t.io, t.metadata, scan.snapshot(), scan.row_filter, schema=scan.schema())


def _distributed(spark: Any, t: Table, snapshot_id: int | None, row_filter: str | None) -> list[FileScanTask]:
    scan = t.scan(row_filter=row_filter, snapshot_id=snapshot_id)
    tasks, choice = plan_files_distributed(
        spark,
        t.io,
        t.metadata,
        scan.snapshot(),
        scan.row_filter,
        schema=scan.schema(),
        planning="distributed",
    )
    assert choice is not None and choice.distribute_data
    return tasks


def test_the_table_has_what_the_equality_tests_need(varied: Table) -> None:
    tasks = varied.scan().plan_files()
    assert {t.file.spec_id for t in tasks} == {0, 1}
    kinds = {int(d.content) for t in tasks for d in t.delete_files}
    assert kinds == {1, 2}  # position and equality deletes apply to some files
    assert len(varied.snapshots()) == 9


@pytest.mark.parametrize("row_filter", FILTERS)
def test_distributed_plan_equals_driver_plan_at_the_current_snapshot(
    spark: Any, varied: Table, row_filter: str | None
) -> None:
    local = _local(varied, None, row_filter)
    assert local, "every filter keeps some file"
    assert _distributed(spark, varied, None, row_filter) == local  # same tasks, same order


def test_distributed_plan_equals_driver_plan_at_every_snapshot(spark: Any, varied: Table) -> None:
    for i, snap in enumerate(varied.snapshots()):
        row_filter = (None, "id >= 40 and cat != 'a'", "v > 30.5")[i % 3]
        sid = snap.snapshot_id
        assert _distributed(spark, varied, sid, row_filter) == _local(varied, sid, row_filter), (
            sid,
            row_filter,
        )


# --------------------------------------------------------------------------- the data source's groups

_COLUMN_FILTERS: list[Callable[[int], str]] = [
    lambda n: f"id < {n}",
    lambda n: f"id >= {n}",
    lambda n: f"v > {n}.5",
    lambda n: f"id = {n}",
    lambda n: f"cat = '{'abc'[n % 3]}'",
    lambda n: f"cat != '{'abc'[n % 3]}'",
    lambda n: "cat is null",
]


@st.composite
def _filters(draw: st.DrawFn) -> BooleanExpression | None:
    parts = draw(
        st.lists(st.tuples(st.sampled_from(_COLUMN_FILTERS), st.integers(0, 75)), min_size=0, max_size=3)
    )
    if not parts:
        return None
    joiner = draw(st.sampled_from([" and ", " or "]))
    return parse(joiner.join(f"({make(n)})" for make, n in parts))


def _key(t: FileScanTask) -> tuple[str, int]:
    return t.file.file_path, t.start


@given(
    row_filter=_filters(), snapshot_index=st.integers(0, 8), files_per_group=st.sampled_from([1, 2, 5, 64])
)
def test_source_groups_planned_on_executors_hold_the_driver_plan(
    varied: Table, row_filter: BooleanExpression | None, snapshot_index: int, files_per_group: int
) -> None:
    """The data source hands data-manifest groups to its read tasks; planned where they are read
    (here in-process, the same function), their tasks together are the driver's plan."""
    snap = varied.snapshots()[snapshot_index]
    scan = varied.scan(row_filter=row_filter, snapshot_id=snap.snapshot_id)
    local = plan_files(varied.io, varied.metadata, snap, scan.row_filter, schema=scan.schema())
    parts = source_partitions(
        metadata=varied.metadata,
        io_properties=dict(varied.io.properties),
        snapshot_id=snap.snapshot_id,
        schema=scan.schema(),
        row_filter=scan.row_filter,
        planning="distributed",
        split_size=files_per_group,
        open_file_cost=1,
    )
    if parts is None:  # every data manifest was pruned by its partition summaries
        assert local == []
        return
    assert all(isinstance(p, ManifestGroupPartition) for p in parts)
    got = [
        t
        for p in parts
        for t in planned_group(
            p,
            metadata=varied.metadata,
            io=varied.io,
            io_properties=dict(varied.io.properties),
            schema=scan.schema(),
            row_filter=scan.row_filter,
        )
    ]
    assert sorted(got, key=_key) == sorted(local, key=_key)


# --------------------------------------------------------------------------- choosing the mode


def test_auto_distributes_from_the_threshold_on() -> None:
    props = {DISTRIBUTED_MIN_MANIFESTS: "10"}
    assert not choose_planning(props, None, 9, 0).distributed
    assert choose_planning(props, None, 10, 0).distribute_data
    choice = choose_planning(props, None, 3, 12)
    assert choice.distribute_deletes and not choice.distribute_data
    default = choose_planning({}, None, DEFAULT_DISTRIBUTED_MIN_MANIFESTS - 1, 0)
    assert not default.distributed
    assert choose_planning({}, None, DEFAULT_DISTRIBUTED_MIN_MANIFESTS, 0).distributed


def test_modes_from_properties_and_the_option() -> None:
    props = {DATA_PLANNING_MODE: "distributed", DELETE_PLANNING_MODE: "LOCAL"}
    choice = choose_planning(props, None, 1, 1)
    assert choice.distribute_data and not choice.distribute_deletes
    assert not choose_planning(props, "local", 5000, 5000).distributed  # the option wins over both
    both = choose_planning({}, "Distributed", 1, 1)
    assert both.distribute_data and both.distribute_deletes
    assert not choose_planning({}, "distributed", 0, 0).distributed  # nothing to read


def test_bad_modes_are_typed_errors(varied: Table) -> None:
    with pytest.raises(ValidationError, match="not a planning mode"):
        choose_planning({}, "remote", 1, 1)
    with pytest.raises(ConfigError, match=DATA_PLANNING_MODE):
        choose_planning({DATA_PLANNING_MODE: "bogus"}, None, 1, 1)
    with pytest.raises(ConfigError, match=DISTRIBUTED_MIN_MANIFESTS):
        choose_planning({DISTRIBUTED_MIN_MANIFESTS: "0"}, None, 1, 1)
    before = varied.metadata_location
    for key, value in ((DELETE_PLANNING_MODE, "always"), (DISTRIBUTED_MIN_MANIFESTS, "many")):
        with pytest.raises(ConfigError, match=key), varied.transaction() as tx:
            tx.set_properties(**{key: value})
    assert varied.refresh().metadata_location == before


class _ConnectSession:
    """A session without a SparkContext, as Spark Connect's."""

    @property
    def sparkContext(self) -> Any:
        raise RuntimeError("Spark Connect sessions have no SparkContext")


def test_a_session_without_spark_context_plans_locally_or_says_why(varied: Table) -> None:
    scan = varied.scan(row_filter="id >= 40")
    args = (varied.io, varied.metadata, scan.snapshot(), scan.row_filter)
    tasks, choice = plan_files_distributed(_ConnectSession(), *args, schema=scan.schema(), planning="auto")
    assert choice is not None and not choice.distributed
    assert tasks == scan.plan_files()
    with pytest.raises(UnsupportedFeatureError, match="SparkContext"):
        plan_files_distributed(_ConnectSession(), *args, schema=scan.schema(), planning="distributed")


# --------------------------------------------------------------------------- through Spark


def _planning_stages(spark: Any, action: Callable[[], Any]) -> int:
    """How many Spark stages ``action`` ran for manifest planning."""
    sc = spark.sparkContext
    group = f"dplan-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "distributed planning test")
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    stages = [
        tracker.getStageInfo(s)
        for j in tracker.getJobIdsForGroup(group)
        for s in tracker.getJobInfo(j).stageIds
    ]
    return sum(1 for s in stages if s is not None and "spark/_distributed_planning.py" in s.name)


def _rows_of(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("where", ["id >= 40 and cat != 'a'"])
def test_spark_read_with_deletes_reads_the_same_rows_either_way(
    spark: Any, varied: Table, where: str | None
) -> None:
    local = _rows_of(icefloe.spark.read(spark, varied.name, where=where, planning="local"))
    expected = sorted(tuple(r.values()) for r in varied.scan(row_filter=where).to_arrow().to_pylist())
    assert local == expected
    distributed: list[Any] = []
    n = _planning_stages(
        spark,
        lambda: distributed.extend(
            _rows_of(icefloe.spark.read(spark, varied.name, where=where, planning="distributed"))
        ),
    )
    assert distributed == expected
    assert n >= 1


def test_auto_follows_the_table_threshold(spark: Any, spark_catalog: icefloe.Catalog) -> None:
    t = spark_catalog.create_table(
        f"spark.dplan_auto_{uuid.uuid4().hex[:8]}", schema=SCHEMA, partition_by=["cat"]
    )
    for i in range(3):
        t.append(_rows([i * 2, i * 2 + 1], ["ace"[i], "bdf"[i]]))  # two partitions (files) per manifest
    name = t.name
    expected = sorted(tuple(r.values()) for r in t.refresh().scan().to_arrow().to_pylist())
    cluster_cores = spark.sparkContext.defaultParallelism

    def plan(where: str | None = None, driver_cores: int = 1) -> Any:
        t.refresh()
        scan = t.scan(row_filter=where)
        tasks, choice = plan_files_distributed(
            spark,
            t.io,
            t.metadata,
            scan.snapshot(),
            scan.row_filter,
            schema=scan.schema(),
            planning=None,
            driver_cores=driver_cores,
        )
        assert tasks == scan.plan_files()
        return choice

    def read() -> None:
        assert _rows_of(icefloe.spark.read(spark, name)) == expected

    assert _planning_stages(spark, plan) == 0  # 3 manifests, far below the default threshold
    with t.refresh().transaction() as tx:
        tx.set_properties(**{DISTRIBUTED_MIN_MANIFESTS: "3"})
    assert _planning_stages(spark, plan) == 1  # a cluster wider than a one-core driver
    # a filter that prunes two manifests by their partition summaries leaves one: local again
    assert _planning_stages(spark, lambda: plan("cat = 'a'")) == 0
    # a driver with as many cores as the cluster plans locally (Iceberg Java's rule for auto)
    assert not plan(driver_cores=cluster_cores).distributed
    wider = cluster_cores > (os.cpu_count() or 1)
    assert _planning_stages(spark, read) == (1 if wider else 0)
    # the data source has no SparkContext to compare with: auto follows the threshold alone
    df = spark.read.format("icefloe").option("split-size", "1").option("file-open-cost", "1").load(name)
    assert _rows_of(df) == expected
    assert df.rdd.getNumPartitions() == 3  # one per data manifest; planned locally: one per file
    local = spark.read.format("icefloe").option("split-size", "1").option("file-open-cost", "1")
    assert local.option("planning", "local").load(name).rdd.getNumPartitions() == 6
    with pytest.raises(ValidationError, match="not a planning mode"):
        icefloe.spark.read(spark, name, planning="remote")


def test_data_source_plans_on_its_read_tasks(spark: Any, varied: Table) -> None:
    def load(planning: str, where: str | None = None) -> Any:
        reader = (
            spark.read.format("icefloe")
            .option("planning", planning)
            .option("split-size", "1")
            .option("file-open-cost", "1")
        )
        if where is not None:
            reader = reader.option("filter", where)
        return reader.load(varied.name)

    local, distributed = load("local"), load("distributed")
    expected = sorted(tuple(r.values()) for r in varied.scan().to_arrow().to_pylist())
    assert _rows_of(distributed) == _rows_of(local) == expected  # deletes applied either way
    # one read partition per file when planned on the driver, per data manifest on executors
    n_files = len(varied.scan().plan_files())
    snapshot = varied.current_snapshot()
    assert snapshot is not None
    data_manifests = sum(
        1 for m in read_manifest_list(varied.io, snapshot.manifest_list) if m.content == ManifestContent.DATA
    )
    assert local.rdd.getNumPartitions() == n_files
    assert distributed.rdd.getNumPartitions() == data_manifests
    where = "id >= 40 and cat != 'a'"
    filtered = sorted(tuple(r.values()) for r in varied.scan(row_filter=where).to_arrow().to_pylist())
    assert _rows_of(load("distributed", where)) == filtered
    with pytest.raises(Exception, match="not a planning mode"):
        load("remote").collect()
