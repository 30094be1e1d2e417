"""Branches, tags, rollback, cherry-pick and the maintenance commands."""

from __future__ import annotations

import os
import time
from pathlib import Path

import icefloe
from tests.cli.conftest import Invoke, as_json, rows


def test_branch_and_tag(icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog) -> None:
    snaps = [s.snapshot_id for s in orders.snapshots()]
    out = as_json(icefloe_cli("tag", "sales.orders", "v1", "--snapshot", str(snaps[1]), "--json"))
    assert out == {"table": "sales.orders", "tag": "v1", "action": "created", "snapshot_id": snaps[1]}
    icefloe_cli("branch", "sales.orders", "dev")
    icefloe_cli("tag", "sales.orders", "v1", "--replace", "--snapshot", str(snaps[2]))
    refs = {r["name"]: r for r in as_json(icefloe_cli("refs", "sales.orders", "--json"))}
    assert refs["v1"]["type"] == "TAG" and refs["v1"]["snapshot_id"] == snaps[2]
    assert refs["dev"]["type"] == "BRANCH" and refs["dev"]["snapshot_id"] == snaps[-1]
    assert catalog.load_table("sales.orders").scan(ref="v1").count() == 300
    assert "dropped branch 'dev'" in icefloe_cli("branch", "sales.orders", "dev", "--drop").stdout
    r = icefloe_cli("tag", "sales.orders", "v1", code=1)
    assert r.stderr.startswith("error: ") and "v1" in r.stderr.splitlines()[0]


def test_rollback_cherry_pick_fast_forward(
    icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog
) -> None:
    snaps = [s.snapshot_id for s in orders.snapshots()]
    out = as_json(icefloe_cli("rollback", "sales.orders", str(snaps[2]), "--json"))
    assert out["previous_snapshot_id"] == snaps[-1] and out["snapshot_id"] == snaps[2]
    assert catalog.load_table("sales.orders").scan().count() == 300
    # write-audit-publish: a staged snapshot, published by cherry-pick
    t = catalog.load_table("sales.orders")
    with t.transaction() as tx:
        tx.set_properties(**{"write.wap.enabled": "true"})
    staged = t.append(rows(1000, 10, 2), snapshot_properties={"wap.id": "audit-1"})
    assert staged is not None and t.current_snapshot().snapshot_id == snaps[2]  # type: ignore[union-attr]
    out = as_json(icefloe_cli("cherry-pick", "sales.orders", str(staged.snapshot_id), "--json"))
    assert catalog.load_table("sales.orders").scan().count() == 310
    assert out["cherry_picked"] == staged.snapshot_id
    # a branch published by fast-forward
    icefloe_cli("branch", "sales.orders", "audit")
    t = catalog.load_table("sales.orders")
    t.append(rows(2000, 5, 3), branch="audit")
    icefloe_cli("fast-forward", "sales.orders", "main", "audit")
    assert catalog.load_table("sales.orders").scan().count() == 315
    # rollback to the time before the first append is refused with the reason
    r = icefloe_cli("rollback", "sales.orders", "--to-timestamp", "2000-01-01T00:00:00", code=1)
    assert "no snapshot in main's history is older" in r.stderr
    assert icefloe_cli("rollback", "sales.orders", code=2).stderr.startswith("error: give either SNAPSHOT_ID")


def test_compact(icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog) -> None:
    plan = as_json(icefloe_cli("compact", "sales.orders", "--dry-run", "-o", "min-input-files=2", "--json"))
    assert plan["dry_run"] and len(plan["groups"]) == 2
    assert {g["partition"] for g in plan["groups"]} == {"ts_day=2024-01-01", "ts_day=2024-01-02"}
    assert catalog.load_table("sales.orders").current_snapshot().operation.value == "delete"  # type: ignore[union-attr]
    human = icefloe_cli("compact", "sales.orders", "--dry-run", "-o", "min-input-files=2").stdout
    assert "would rewrite 4 data files in 2 groups" in human
    out = as_json(
        icefloe_cli(
            "compact", "sales.orders", "-o", "min-input-files=2", "-o", "remove-dangling-deletes=true",
            "--json",
        )
    )
    assert out["rewritten_data_files"] == 4 and out["added_data_files"] == 2
    assert out["removed_delete_files"] == 1  # the position delete file, applied by the rewrite
    t = catalog.load_table("sales.orders")
    assert len(t.inspect.files()) == 3 and t.scan().count() == 480
    assert "nothing to compact" in icefloe_cli("compact", "sales.orders").stdout
    r = icefloe_cli("compact", "sales.orders", "-o", "no-such-option=1", code=1)
    assert "error: rewrite_data_files does not know the option(s) 'no-such-option'" in r.stderr
    assert "hint: the options it takes" in r.stderr


def test_expire(icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog) -> None:
    dry = as_json(
        icefloe_cli(
            "expire", "sales.orders", "--older-than", "0s", "--retain-last", "2", "--dry-run", "--json"
        )
    )
    assert dry["dry_run"] and len(dry["expired_snapshot_ids"]) == 4
    assert dry["deleted_files"]["manifest_list"] == 4
    assert len(catalog.load_table("sales.orders").snapshots()) == 6
    human = icefloe_cli(
        "expire", "sales.orders", "--older-than", "0s", "--retain-last", "2", "--dry-run"
    ).stdout
    assert human.startswith("would expire 4 snapshots of sales.orders")
    out = as_json(icefloe_cli("expire", "sales.orders", "--older-than", "0s", "--retain-last", "2", "--json"))
    assert out["expired_snapshot_ids"] == dry["expired_snapshot_ids"]
    t = catalog.load_table("sales.orders")
    assert len(t.snapshots()) == 2 and t.scan().count() == 480
    for path in out["files"]["manifest_list"]:
        assert not Path(path.removeprefix("file://")).exists()
    r = icefloe_cli("expire", "sales.orders", "--older-than", "next tuesday", code=1)
    assert "error: cannot read the time 'next tuesday'" in r.stderr and "hint: write a duration" in r.stderr


def test_remove_orphans(icefloe_cli: Invoke, orders: icefloe.Table) -> None:
    orphan = Path(orders.location.removeprefix("file://")) / "data" / "stray.parquet"
    orphan.write_bytes(b"left behind by a failed writer")
    old = time.time() - 10 * 86400
    os.utime(orphan, (old, old))
    dry = as_json(icefloe_cli("remove-orphans", "sales.orders", "--dry-run", "--json"))
    assert [p.removeprefix("file://") for p in dry["orphan_files"]] == [str(orphan)]
    assert orphan.exists()
    assert "found 1 orphan files" in icefloe_cli("remove-orphans", "sales.orders", "--dry-run").stdout
    out = as_json(icefloe_cli("remove-orphans", "sales.orders", "--json"))
    assert len(out["orphan_files"]) == 1 and not orphan.exists()


def test_rewrite_manifests(icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog) -> None:
    dry = as_json(icefloe_cli("rewrite-manifests", "sales.orders", "--dry-run", "--json"))
    assert dry == {
        "table": "sales.orders",
        "dry_run": True,
        "rewritten_manifests": 5,  # the data manifests; the one delete manifest stays
        "added_manifests": 1,
    }
    out = as_json(icefloe_cli("rewrite-manifests", "sales.orders", "--json"))
    assert out["rewritten_manifests"] == 5 and out["added_manifests"] == 1
    assert len(catalog.load_table("sales.orders").inspect.manifests()) == 2
    assert "nothing to rewrite" in icefloe_cli("rewrite-manifests", "sales.orders").stdout


def test_spark_engine_without_pyspark_names_the_extra(
    icefloe_cli: Invoke, orders: icefloe.Table, monkeypatch: object
) -> None:
    import sys

    import pytest

    mp = pytest.MonkeyPatch()
    try:
        mp.setitem(sys.modules, "pyspark", None)
        r = icefloe_cli("compact", "sales.orders", "--engine", "spark", code=1)
    finally:
        mp.undo()
    assert r.stderr.splitlines() == [
        "error: --engine spark needs the Python package 'pyspark', which is not installed",
        "hint: pip install 'icefloe[spark]'",
    ]


def test_progress_bars_at_a_terminal(
    icefloe_cli: Invoke, orders: icefloe.Table, catalog: icefloe.Catalog, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq
    import pytest

    mp = pytest.MonkeyPatch()
    mp.setattr("icefloe.cli._state.State.interactive", lambda self: True)
    try:
        pq.write_table(rows(5000, 100, 2), tmp_path / "more.parquet")
        icefloe_cli("append", "sales.orders", str(tmp_path / "more.parquet"))
        icefloe_cli("compact", "sales.orders", "-o", "min-input-files=2")
        icefloe_cli("rewrite-manifests", "sales.orders")
        icefloe_cli("health", "sales.orders")
    finally:
        mp.undo()
    assert catalog.load_table("sales.orders").scan().count() == 580
