"""The Spark runner (manifests read and directories listed on executors) gives the local
runner's answers: the same expired snapshots and files, the same orphans, the same errors."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from cleanup_checks import SCHEMA, assert_intact, files_under, local, referenced, rows
from test_expire_snapshots import build_history
from test_orphan_files import plant

from icefloe.errors import FileIOError

pytestmark = pytest.mark.spark


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def as_sets(files: Any) -> dict[str, set[str]]:
    return {k: set(v) for k, v in files.items()}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_expiry_on_spark_equals_local(catalog: Any, spark: Any, mode: str) -> None:
    t = build_history(catalog, mode)
    older_than = now_ms() + 1
    local_dry = t.maintenance.expire_snapshots(older_than=older_than, retain_last=1, dry_run=True)
    spark_dry = t.maintenance.expire_snapshots(
        older_than=older_than, retain_last=1, dry_run=True, spark=spark
    )
    assert spark_dry.expired_snapshot_ids == local_dry.expired_snapshot_ids
    assert as_sets(spark_dry.files) == as_sets(local_dry.files)
    assert local_dry.deleted_data_files_count > 0
    on_disk = files_under(t.location)
    result = t.maintenance.expire_snapshots(older_than=older_than, retain_last=1, spark=spark)
    assert as_sets(result.files) == as_sets(local_dry.files)
    assert on_disk - files_under(t.location) == {local(p) for p in result.deleted_files}
    assert_intact(t)


def test_orphans_on_spark_equal_local(catalog: Any, spark: Any) -> None:
    t = build_history(catalog)
    root = local(t.location)
    # more than 10 directories at one level: the driver hands them to the executors
    planted = {plant(f"{root}/data/cat=p{i}/deep/lost-{i}.parquet") for i in range(14)}
    planted |= {plant(f"{root}/metadata/lost.avro"), plant(f"{root}/lost.txt")}
    hidden = plant(f"{root}/data/cat=p1/_tmp/hidden.parquet")
    plant(f"{root}/data/cat=p2/young.parquet", age_days=0.5)
    local_dry = t.maintenance.remove_orphan_files(dry_run=True)
    spark_dry = t.maintenance.remove_orphan_files(dry_run=True, spark=spark)
    assert {local(p) for p in local_dry} == planted
    assert set(spark_dry) == set(local_dry)
    result = t.maintenance.remove_orphan_files(spark=spark)
    assert set(result) == set(local_dry)
    assert not any(os.path.exists(p) for p in planted)
    assert_intact(t)
    time.sleep(0.01)
    t.maintenance.remove_orphan_files(older_than=now_ms(), spark=spark)
    assert files_under(t.location) == referenced(t) | {hidden}


@pytest.mark.parametrize("driver_only_max_files", [20_000, 0], ids=["driver", "executors"])
def test_small_trees_are_compared_on_the_driver_with_the_same_answer(
    catalog: Any, spark: Any, monkeypatch: pytest.MonkeyPatch, driver_only_max_files: int
) -> None:
    import icefloe.spark.reachability as reach

    monkeypatch.setattr(reach, "DRIVER_ONLY_MAX_FILES", driver_only_max_files)
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    t = build_history(catalog)
    root = local(t.location)
    planted = {plant(f"{root}/data/lost-{i}.parquet") for i in range(3)} | {plant(f"{root}/metadata/x.avro")}
    assert {local(p) for p in t.maintenance.remove_orphan_files(dry_run=True)} == planted
    result = t.maintenance.remove_orphan_files(spark=spark)
    assert {local(p) for p in result} == planted and not any(os.path.exists(p) for p in planted)
    assert_intact(t)
    spark_jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup()) - jobs_before
    assert (spark_jobs == 0) == (driver_only_max_files > 0)


@pytest.mark.parametrize("driver_only_max_files", [20_000, 0], ids=["driver", "executors"])
def test_unreadable_manifests_stop_spark_orphan_removal_too(
    catalog: Any, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver_only_max_files: int
) -> None:
    import icefloe.spark.reachability as reach

    monkeypatch.setattr(reach, "DRIVER_ONLY_MAX_FILES", driver_only_max_files)
    t = catalog.create_table("ns.t", schema=SCHEMA)
    t.append(rows(1))
    lost = plant(f"{local(t.location)}/data/lost.parquet")
    snapshot = t.current_snapshot()
    assert snapshot is not None
    os.remove(local(snapshot.manifest_list))
    with pytest.raises(FileIOError, match="cannot be read"):
        t.maintenance.remove_orphan_files(spark=spark)
    assert os.path.exists(lost)
