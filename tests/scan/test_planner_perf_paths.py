"""Planning's fast paths: the process-wide manifest-list cache and the compiled manifest
evaluator, seen from the planner: the same tasks cold and warm, the same files opened cold, and
no stale state after the table changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pytest

import icefloe
from icefloe.expressions import parse
from icefloe.manifest import manifest_list
from icefloe.scan.planner import PlanningStats, plan_files
from icefloe.table import Table
from icefloe.testing import CountingFileIO

if TYPE_CHECKING:
    from icefloe.io import FileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])


def rows(ids: range, cat: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "cat": [cat] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def table(any_catalog: icefloe.Catalog) -> Table:
    any_catalog.create_namespace("ns")
    t = any_catalog.create_table("ns.t", schema=SCHEMA, partition_by=["cat"])
    for i, c in enumerate("abcd"):
        t.append(rows(range(i * 10, i * 10 + 10), c))
    return t.refresh()


@pytest.fixture(autouse=True)
def cold_cache() -> Iterator[None]:
    manifest_list.clear_manifest_list_cache()
    yield
    manifest_list.set_manifest_list_cache_size(manifest_list.MANIFEST_LIST_CACHE_ENTRIES)


def _plan(t: Table, io: CountingFileIO, row_filter: str) -> tuple[list[str], PlanningStats]:
    stats = PlanningStats()
    snap = t.current_snapshot()
    tasks = plan_files(cast("FileIO", io), t.metadata, snap, parse(row_filter), stats=stats)
    return sorted(task.file.file_path for task in tasks), stats


def test_warm_plan_opens_the_same_files_and_decodes_nothing_again(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    real = manifest_list._read

    def counting_read(stream: Any, path: str) -> Any:
        decoded.append(path)
        return real(stream, path)

    monkeypatch.setattr(manifest_list, "_read", counting_read)
    counting = CountingFileIO(table.io)
    snap = table.current_snapshot()
    assert snap is not None
    cold, cold_stats = _plan(table, counting, "cat = 'c'")
    cold_opened = dict(counting.opened)
    assert cold_opened.pop(snap.manifest_list) == 1
    assert list(cold_opened.values()) == [1]  # exactly the one matching manifest
    counting.reset()
    warm, warm_stats = _plan(table, counting, "cat = 'c'")
    assert warm == cold and len(warm) == 1
    assert warm_stats == cold_stats and warm_stats.manifests_skipped == 3
    assert dict(counting.opened) == {snap.manifest_list: 1, **cold_opened}  # same files, once each
    assert decoded == [snap.manifest_list]  # the list was decoded by the cold plan only


def test_warm_plans_agree_with_cold_ones_for_many_filters(table: Table) -> None:
    filters = ["cat = 'a'", "cat in ('b', 'd')", "id >= 25", "cat is null", "cat > 'b' and id < 35", "true"]
    counting = CountingFileIO(table.io)
    manifest_list.set_manifest_list_cache_size(0)
    cold = {f: _plan(table, counting, f) for f in filters}
    manifest_list.set_manifest_list_cache_size(manifest_list.MANIFEST_LIST_CACHE_ENTRIES)
    for _ in range(2):
        for f in filters:
            assert _plan(table, counting, f) == cold[f], f
    assert cold["cat is null"][0] == [] and len(cold["true"][0]) == 4


def test_new_snapshot_is_planned_from_its_own_list(table: Table) -> None:
    counting = CountingFileIO(table.io)
    before, _ = _plan(table, counting, "cat = 'a'")
    table.append(rows(range(100, 105), "a"))
    table = table.refresh()
    after, _ = _plan(table, counting, "cat = 'a'")
    assert len(after) == len(before) + 1 and set(before) < set(after)
    assert sorted(table.scan(row_filter="cat = 'a'").to_arrow()["id"].to_pylist()) == [
        *range(0, 10),
        *range(100, 105),
    ]


def test_disabled_cache_opens_the_list_every_time(table: Table) -> None:
    manifest_list.set_manifest_list_cache_size(0)
    counting = CountingFileIO(table.io)
    snap = table.current_snapshot()
    assert snap is not None
    for _ in range(3):
        _plan(table, counting, "cat = 'b'")
    assert counting.opened[snap.manifest_list] == 3
    assert len(manifest_list._CACHE) == 0


def test_manifests_on_a_local_disk_are_read_on_the_calling_thread(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a local disk a manifest costs microseconds to open and its decoding holds the GIL:
    a thread pool only adds hand-offs (300 cached manifests: 15 ms on 4 workers, 5 ms on the
    caller's thread). Other stores overlap their round trips on the pool."""
    import threading

    from icefloe.io import is_local
    from icefloe.io.local import LocalFileIO
    from icefloe.scan import planner

    readers: list[str] = []
    real = planner.read_manifest

    def recording(io: Any, m: Any, **kwargs: Any) -> Any:
        readers.append(threading.current_thread().name)
        return real(io, m, **kwargs)

    monkeypatch.setattr(planner, "read_manifest", recording)
    snap = table.current_snapshot()
    assert snap is not None
    local = LocalFileIO()
    assert is_local(local, table.location)
    expected = sorted(t.file.file_path for t in plan_files(table.io, table.metadata, snap))
    readers.clear()
    assert sorted(t.file.file_path for t in plan_files(local, table.metadata, snap)) == expected
    assert readers and set(readers) == {threading.current_thread().name}
    readers.clear()
    remote_like = CountingFileIO(local)  # a FileIO not known to be local: a pool of workers
    assert not is_local(cast("FileIO", remote_like), table.location)
    got = plan_files(cast("FileIO", remote_like), table.metadata, snap)
    assert sorted(t.file.file_path for t in got) == expected
    assert len(readers) == 4 and threading.current_thread().name not in readers


def test_is_local_knows_local_paths_of_each_file_io() -> None:
    from icefloe.io import is_local
    from icefloe.io.arrow import ArrowFileIO
    from icefloe.io.local import LocalFileIO

    assert is_local(LocalFileIO(), "/tmp/x") and is_local(LocalFileIO(), "file:///tmp/x")
    arrow = ArrowFileIO({})
    assert is_local(arrow, "file:///tmp/x") and is_local(arrow, "/tmp/x")
    assert not is_local(arrow, "s3://bucket/x")
    assert not is_local(arrow, "nosuchscheme://bucket/x")  # cannot resolve: not known to be local
