"""Partition evolution through every catalog on every store: the spec change commits (its
requirements and updates cross the REST protocol too), writes go to the new spec, a concurrent
data commit through another handle merges, and a concurrent spec change fails typed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.errors import ConflictError

from .conftest import Env

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("part", pa.string()), ("v", pa.int64())])


def data(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": ids, "part": [part] * len(ids), "v": ids}, schema=SCHEMA)


def test_spec_evolution_commits_and_writes_use_it(env: Env) -> None:
    env.catalog.create_namespace("db")
    t = env.catalog.create_table("db.pe", SCHEMA, partition_by=["part"])
    t.append(data([1, 2], "a"))
    with t.update_spec() as u:
        u.add_field("bucket(4, id)").rename_field("part", "p")
    t.append(data([3, 4], "a"))
    again = env.reopen().load_table("db.pe")
    assert [(f.name, f.field_id) for f in again.spec().fields] == [("p", 1000), ("id_bucket_4", 1001)]
    assert again.metadata.default_spec_id == 1 and again.metadata.last_partition_id == 1001
    specs = {task.file.spec_id for task in again.scan(row_filter="id >= 3").plan_files()}
    assert specs == {1}
    # another handle appends meanwhile: the spec change retries and both land
    other = env.reopen().load_table("db.pe")
    stale = env.reopen().load_table("db.pe")
    other.append(data([5], "b"))
    with stale.update_spec() as u:
        u.remove_field("id_bucket_4")
    stale.refresh()
    assert [f.name for f in stale.spec().fields] == ["p"]
    assert sorted(stale.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    # a spec change from a stale base fails typed and leaves the table as it was
    before = stale.metadata_location
    with pytest.raises(ConflictError), other.update_spec() as u:
        u.add_identity("v")
    assert env.reopen().load_table("db.pe").metadata_location == before
