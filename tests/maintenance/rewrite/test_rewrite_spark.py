"""The Spark runner against the local one: the same plan rewritten by Spark tasks gives the same
rows, comparable files (sorted, clustered, the same counts) and the same commits."""

from __future__ import annotations

import os
from typing import Any

import pyarrow.parquet as pq
import pytest
from rewrite_checks import (
    MOR,
    check_snapshots_intact,
    data_files,
    delete_files,
    every_snapshot_rows,
    make_table,
    orphans,
    rows,
    table_rows,
)

from icefloe.errors import IcefloeError
from icefloe.io.local import local_path
from icefloe.manifest import ManifestContent, read_manifest, read_manifest_list

pytestmark = pytest.mark.spark


def _pair(catalog: Any, name: str, **kwargs: Any) -> tuple[Any, Any]:
    local = make_table(catalog, f"{name}_local", **kwargs)
    spark = make_table(catalog, f"{name}_spark", **kwargs)
    return local, spark


def _evolve_and_delete(*tables: Any) -> None:
    for t in tables:
        t.delete("id in (1, 2, 3, 60, 61, 250)")
        with t.update_spec() as u:
            u.add_field("bucket(2, id)")
        t.append(rows(range(800, 840)))


@pytest.mark.parametrize("target", ["6000", None], ids=["several-files", "one-file"])
@pytest.mark.parametrize(
    ("strategy", "kwargs"),
    [("binpack", {}), ("sort", {"sort_order": "v desc, id"}), ("zorder", {"zorder_columns": ["id", "v"]})],
)
def test_spark_rewrites_like_the_local_runner(
    catalog: Any, spark: Any, strategy: str, kwargs: dict[str, Any], target: str | None
) -> None:
    # several output files per group: sort and z-order range-partition on Spark; one file: a
    # task sorts the group with Arrow
    name = f"{strategy}_{'n' if target else 'one'}"
    local, on_spark = _pair(catalog, name, files=8, rows_per_file=120, properties=MOR)
    _evolve_and_delete(local, on_spark)
    before = every_snapshot_rows(on_spark)
    expected = table_rows(on_spark)
    assert table_rows(local) == expected
    options = {"rewrite-all": "true", **({"target-file-size-bytes": target} if target else {})}
    r_local = local.maintenance.rewrite_data_files(strategy, options=options, **kwargs)
    r_spark = on_spark.maintenance.rewrite_data_files(strategy, options=options, spark=spark, **kwargs)
    assert table_rows(local) == table_rows(on_spark) == expected
    assert r_spark.rewritten_data_files_count == r_local.rewritten_data_files_count
    assert [r.info for r in r_spark.rewrite_results] == [r.info for r in r_local.rewrite_results]
    n_local, n_spark = len(data_files(local)), len(data_files(on_spark))
    assert abs(n_local - n_spark) <= max(2, n_local // 4), (n_local, n_spark)
    assert {f.spec_id for f in data_files(on_spark)} == {on_spark.spec().spec_id}
    assert delete_files(on_spark) == delete_files(local) == []
    if strategy == "sort":
        for f in data_files(on_spark):
            v = pq.read_table(local_path(f.file_path), columns=["v"]).column("v").to_pylist()
            assert v == sorted(v, reverse=True)
    check_snapshots_intact(on_spark, before)
    assert orphans(on_spark) == set()


def test_spark_zorder_prunes_like_local(catalog: Any, spark: Any) -> None:
    local, on_spark = _pair(catalog, "zprune", files=10, rows_per_file=200, partition_by=[], part="x")
    options = {"rewrite-all": "true", "target-file-size-bytes": "4000"}
    local.maintenance.rewrite_data_files("zorder", zorder_columns=["id", "v"], options=options)
    on_spark.maintenance.rewrite_data_files(
        "zorder", zorder_columns=["id", "v"], options=options, spark=spark
    )
    for where in ("id < 300", "v < 3"):
        n_local = len(local.scan(row_filter=where).plan_files())
        n_spark = len(on_spark.scan(row_filter=where).plan_files())
        assert n_spark <= max(n_local + 1, 2 * n_local), (where, n_local, n_spark)
    assert table_rows(local) == table_rows(on_spark)


def test_spark_position_deletes_and_manifests(catalog: Any, spark: Any) -> None:
    local, on_spark = _pair(catalog, "deletesman", files=6, properties=MOR)
    for t in (local, on_spark):
        for i in (1, 3, 5, 7, 9, 2):
            t.delete(f"id = {i}")
    expected = table_rows(on_spark)
    r_local = local.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"})
    r_spark = on_spark.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"}, spark=spark)
    assert [(r.info, r.added_records_count) for r in r_spark.rewrite_results] == [
        (r.info, r.added_records_count) for r in r_local.rewrite_results
    ]
    assert table_rows(on_spark) == expected
    before = every_snapshot_rows(on_spark)
    m_local = local.maintenance.rewrite_manifests()
    m_spark = on_spark.maintenance.rewrite_manifests(spark=spark, options={"use-caching": "true"})
    assert len(m_spark.rewritten_manifests) == len(m_local.rewritten_manifests)
    assert len(m_spark.added_manifests) == len(m_local.added_manifests)

    def entries(t: Any) -> set[tuple[Any, ...]]:
        snap = t.current_snapshot()
        return {
            (e.data_file.file_path.split("/")[-2], e.status, e.data_file.record_count)
            for m in read_manifest_list(t.io, snap.manifest_list)
            if m.content == ManifestContent.DATA
            for e in read_manifest(t.io, m)
        }

    assert entries(on_spark) == entries(local)
    check_snapshots_intact(on_spark, before)
    assert table_rows(on_spark) == expected
    assert orphans(on_spark) == set()


@pytest.mark.parametrize("target", ["3000", None], ids=["several-files", "one-file"])
@pytest.mark.parametrize("strategy", ["binpack", "sort"])
def test_a_failed_spark_group_leaves_nothing(
    catalog: Any, spark: Any, strategy: str, target: str | None
) -> None:
    t = make_table(catalog, f"sparkfail_{strategy}_{'n' if target else 'one'}", files=6)
    location = t.metadata_location
    victim = next(f for f in data_files(t) if f.partition == ("b",))
    kwargs = {"sort_order": "id"} if strategy == "sort" else {}
    from icefloe.maintenance.rewrite_data_files import RewriteDataFiles

    sizes = {"target-file-size-bytes": target} if target else {}
    action = RewriteDataFiles(t, strategy, options={"rewrite-all": "true", **sizes}, spark=spark, **kwargs)
    plan = action.plan()
    os.remove(local_path(victim.file_path))  # lost from storage: group b cannot be read
    with pytest.raises(IcefloeError):
        action.execute(plan)
    assert t.refresh().metadata_location == location
    assert orphans(t) == set()
    partial = RewriteDataFiles(
        t,
        strategy,
        options={"rewrite-all": "true", "partial-progress.enabled": "true", **sizes},
        spark=spark,
        **kwargs,
    )
    result = partial.execute(partial.plan())
    assert [r.info.partition for r in result.rewrite_results] == [("a",)]
    assert [f.info.partition for f in result.rewrite_failures] == [("b",)]
    assert orphans(t) == set()


def test_spark_v3_conversion_of_position_deletes_runs_on_the_driver(catalog: Any, spark: Any) -> None:
    """With ``spark=`` a v3 table's v2 position delete files still become deletion vectors (read
    on the driver: the conversion reads only delete files)."""
    t = make_table(catalog, "v3_convert", files=4, properties={**MOR, "format-version": "2"})
    for i in (1, 2, 51, 52):
        t.delete(f"id = {i}")
    t.upgrade_format_version(3)
    t = t.refresh()
    expected = table_rows(t)
    result = t.maintenance.rewrite_position_delete_files(options={"rewrite-all": "true"}, spark=spark)
    assert result.added_delete_files_count > 0
    formats = {d.file_format.value for task in t.scan().plan_files() for d in task.delete_files}
    assert formats == {"PUFFIN"}
    assert table_rows(t) == expected
