"""Incremental and changelog reads against a model of the table, for random sequences of writes in
both write modes (copy-on-write rewrites, position deletes, equality deletes via upserts in
merge-on-read), and the scans' error cases."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import NoSuchSnapshotError, ValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
Model = dict[int, str]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.integers(0, 12), min_size=1, max_size=4, unique=True)),
        st.tuples(st.just("delete"), st.integers(0, 12), st.integers(0, 3)),
        st.tuples(st.just("upsert"), st.lists(st.integers(0, 12), min_size=1, max_size=3, unique=True)),
        st.tuples(st.just("overwrite"), st.integers(0, 12)),
    ),
    min_size=1,
    max_size=6,
)


def _table(model: Model) -> pa.Table:
    return pa.table({"id": list(model), "v": list(model.values())}, schema=SCHEMA)


def _diff(before: Model, after: Model, updates: bool) -> set[tuple[int, str, str]]:
    out = set()
    for i, v in before.items():
        if i not in after:
            out.add((i, v, "DELETE"))
        elif after[i] != v:
            out |= (
                {(i, v, "UPDATE_BEFORE"), (i, after[i], "UPDATE_AFTER")}
                if updates
                else {(i, v, "DELETE"), (i, after[i], "INSERT")}
            )
    out |= {(i, v, "INSERT") for i, v in after.items() if i not in before}
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mode=st.sampled_from(["copy-on-write", "merge-on-read"]), steps=ops)
def test_changelog_follows_the_model(mode: str, steps: list[tuple]) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as d:
        cat = InMemoryCatalog("m", warehouse=Path(d).as_uri())
        cat.create_namespace("ns")
        t = cat.create_table("ns.t", schema=SCHEMA)
        with t.transaction() as tx:
            tx.set_properties(**{"write.delete.mode": mode, "write.merge.mode": mode})
        model: Model = {}
        history: list[tuple[int, Model]] = []
        appended: set[tuple[int, str]] = set()
        gen = 0
        for step in steps:
            gen += 1
            kind = step[0]
            snap = None
            if kind == "append":
                new = {i: f"a{gen}" for i in step[1] if i not in model}
                if not new:
                    continue
                snap = t.append(_table(new))
                model = {**model, **new}
            elif kind == "delete":
                lo, width = step[1], step[2]
                snap = t.delete(f"id >= {lo} and id <= {lo + width}")
                model = {k: v for k, v in model.items() if not lo <= k <= lo + width}
            elif kind == "upsert":
                new = {i: f"u{gen}" for i in step[1]}
                snap = t.upsert(_table(new), ["id"])
                model = {**model, **new}
            else:
                i = step[1]
                snap = t.overwrite(_table({i: f"o{gen}"}), f"id = {i}")
                model = {**{k: v for k, v in model.items() if k != i}, i: f"o{gen}"}
            if snap is not None:
                before = history[-1][1] if history else {}
                if snap.operation.value == "append":  # an upsert that matched nothing is one too
                    appended |= {(i, v) for i, v, _ in _diff(before, model, False)}
                history.append((snap.snapshot_id, dict(model)))
        prev: Model = {}
        prev_id: int | None = None
        for sid, state in history:
            rows = t.changelog_scan(prev_id, sid, identifier_columns=["id"]).to_arrow().to_pylist()
            got = [(r["id"], r["v"], r["_change_type"]) for r in rows]
            assert set(got) == _diff(prev, state, True) and len(got) == len(set(got)), (mode, steps)
            prev, prev_id = state, sid
        if history:
            net = t.changelog_scan(None, net_changes=True).to_arrow().to_pylist()
            assert {(r["id"], r["v"], r["_change_type"]) for r in net} == _diff({}, history[-1][1], False)
            whole = t.changelog_scan(None, compute_updates=False).to_arrow().to_pylist()
            ordinals = sorted({r["_change_ordinal"] for r in whole})
            assert all(0 <= o < len(history) for o in ordinals)
            inc = t.incremental_append_scan(None).to_arrow().to_pylist()
            assert sorted((r["id"], r["v"]) for r in inc) == sorted(appended)


@pytest.fixture
def table(tmp_path: Path):  # type: ignore[no-untyped-def]
    cat = InMemoryCatalog("m", warehouse=tmp_path.as_uri())
    cat.create_namespace("ns")
    return cat.create_table("ns.t", schema=SCHEMA)


def test_range_errors(table) -> None:  # type: ignore[no-untyped-def]
    s1 = table.append(_table({1: "a"}))
    with table.manage_snapshots() as ms:
        ms.create_branch("b")
    b = table.append(_table({2: "b"}), branch="b")
    s2 = table.append(_table({3: "c"}))
    with pytest.raises(ValidationError, match="not an ancestor"):
        table.changelog_scan(b.snapshot_id, s2.snapshot_id)
    with pytest.raises(ValidationError, match="not an ancestor"):
        table.incremental_append_scan(s2.snapshot_id, s1.snapshot_id)
    with pytest.raises(NoSuchSnapshotError):
        table.changelog_scan(123)
    with pytest.raises(ValidationError, match="identifier"):
        table.changelog_scan(s1.snapshot_id, compute_updates=True)
    with pytest.raises(ValidationError, match="net changes"):
        table.changelog_scan(s1.snapshot_id, identifier_columns=["id"], net_changes=True).to_arrow()
    # the range is (from, to]: from == to is empty
    assert table.changelog_scan(s2.snapshot_id, s2.snapshot_id).to_arrow().num_rows == 0
    # a branch's history
    got = table.incremental_append_scan(s1.snapshot_id, b.snapshot_id).to_arrow()
    assert got.column("id").to_pylist() == [2]


def test_scans_refine_like_data_scans(table) -> None:  # type: ignore[no-untyped-def]
    s1 = table.append(_table({1: "a", 2: "b"}))
    table.append(_table({3: "c", 4: "d"}))
    inc = table.incremental_append_scan(s1.snapshot_id).filter("id > 3").select("id")
    assert inc.to_arrow().to_pylist() == [{"id": 4}]
    assert inc.count() == 1
    cl = table.changelog_scan(s1.snapshot_id).filter("id = 3").select("id")
    assert [r["id"] for r in cl.to_arrow().to_pylist()] == [3]
    assert cl.to_arrow().column_names == ["id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert table.changelog_scan().to_pandas().shape[0] == 4
    con = table.changelog_scan(s1.snapshot_id).to_duckdb("changes")
    assert con.execute("select count(*) from changes where _change_type = 'INSERT'").fetchone() == (2,)
