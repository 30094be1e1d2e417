"""Expiry, orphan removal and metadata cleanup on every catalog (memory, SQLite, PostgreSQL,
icefloe's REST server) and store (local, S3 on SeaweedFS): the commit goes through each
catalog's compare-and-swap (on REST, the server checks the requirements), and afterwards the
store holds exactly the files the table references."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cleanup_checks import SCHEMA, rows

from icefloe.maintenance.orphan_files import OrphanOptions
from icefloe.maintenance.reachability import (
    IOSpec,
    LocalReachability,
    manifest_list_paths,
    metadata_file_paths,
)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def warehouse_and_props(
    store_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[str, dict[str, str]]:
    if store_kind == "local":
        wh = tmp_path / "warehouse"
        wh.mkdir()
        return wh.as_uri(), {}
    server = request.getfixturevalue("seaweedfs_server")
    return server.warehouse(f"c-{uuid.uuid4().hex[:12]}"), server.file_io_properties()


def key(location: str) -> str:
    """One spelling per file (``file:/x`` and ``file:///x`` are one local file)."""
    return OrphanOptions(location="/", older_than_ms=0).listed_uri(location).path


def stored(t: Any) -> set[str]:
    return {key(i.location) for i in t.io.list_prefix(t.location)}


def referenced(t: Any) -> set[str]:
    md = t.metadata
    lists = manifest_list_paths(md)
    reach = LocalReachability(t.io).reachable(IOSpec(dict(t.io.properties), t.metadata_location), lists)
    assert not reach.unreadable, reach.unreadable
    paths = {*lists, *reach.manifests, *reach.content, *metadata_file_paths(md, t.metadata_location)}
    return {key(p) for p in paths}


@pytest.mark.catalogs("memory", "sqlite", "postgres", "rest")
def test_expire_and_remove_orphans_on_every_catalog_and_store(
    catalog_kind: str,
    store_kind: str,
    warehouse_and_props: tuple[str, dict[str, str]],
    catalog_opener: Callable[..., Callable[[], Any]],
) -> None:
    warehouse, props = warehouse_and_props
    cat = catalog_opener(catalog_kind, warehouse, **props)()
    cat.create_namespace("ns")
    t = cat.create_table(
        "ns.t",
        schema=SCHEMA,
        partition_by=["cat"],
        properties={
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "2",
        },
    )
    t.append(rows(1, 2, cat="a"))
    t.append(rows(3, cat="b"))
    with t.manage_snapshots() as ms:
        ms.create_tag("v1")
    t.delete("id = 1")
    t.overwrite(rows(4, cat="b"), "cat = 'b'")
    t.append(rows(5, cat="a"), branch="dev")
    t.append(rows(6, cat="c"))
    t.refresh()
    assert stored(t) == referenced(t)  # delete-after-commit kept 2 + 1 metadata files
    result = t.maintenance.expire_snapshots(older_than=now_ms() + 1, retain_last=1)
    assert len(result.expired_snapshot_ids) == 3 and result.deleted_manifest_lists_count == 3
    t.refresh()
    assert set(t.refs()) == {"main", "v1", "dev"}
    assert stored(t) == referenced(t)
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 4, 6]
    assert sorted(t.scan(ref="v1").to_arrow().column("id").to_pylist()) == [1, 2, 3]
    orphan = f"{t.location}/data/cat=a/orphan-{uuid.uuid4()}.parquet"
    with t.io.new_output(orphan).create() as f:
        f.write(b"x")
    time.sleep(0.01)
    removed = t.maintenance.remove_orphan_files(older_than=now_ms())
    assert [key(p) for p in removed] == [key(orphan)]
    assert stored(t) == referenced(t)
    report = cat.drop_table("ns.t", purge=True)
    assert report is not None
    if not report.by_server:
        assert report.complete
    assert stored(t) == set()
