"""Random sequences of partition spec changes, appends, deletes (copy-on-write and
merge-on-read), upserts and dynamic overwrites against a Python model of the table that keeps,
for every row, the spec it was written under. After every step the current rows must equal the
model's; at the end every snapshot must.

Spec changes are random blocks of ``add_field`` / ``add_identity`` / ``remove_field`` /
``rename_field`` calls: a block the rules refuse must leave the table as it was. Whatever
happens, the specs keep the format's invariants: a field id always means the same source column
and transform, last-partition-id never goes down and bounds every field id, and no two specs of
the table are equal."""

from __future__ import annotations

import dataclasses
import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import PartitionSpecError
from icefloe.spec.types import LongType
from icefloe.table import Table
from icefloe.transforms import BucketTransform

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("cat", pa.string()),
        ("n", pa.int64()),
    ]
)
TERMS = [
    "day(ts)",
    "hour(ts)",
    "month(ts)",
    "bucket(4, id)",
    "truncate(1, cat)",
    "cat",
    "n",
    "truncate(10, n)",
]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
BASE = dt.datetime(2024, 1, 30, 20, tzinfo=dt.UTC)


def partition_of(t: Table, spec_id: int, row: dict[str, Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for f in t.metadata.spec_by_id(spec_id).fields:
        v = row[t.schema().column_name(f.source_id)]
        kind = str(f.transform)
        if v is None or kind == "identity":
            out.append(v)
        elif kind in ("hour", "day", "month"):
            if kind == "month":
                out.append((v.year - 1970) * 12 + v.month - 1)
            else:
                out.append((v - EPOCH) // dt.timedelta(hours=1 if kind == "hour" else 24))
        elif kind == "truncate[1]":
            out.append(v[:1])
        elif kind == "truncate[10]":
            out.append(v - v % 10)
        elif kind == "bucket[4]":
            out.append(BucketTransform(4).apply(LongType(), v))
        else:  # pragma: no cover
            raise AssertionError(kind)
    return tuple(out)


@dataclasses.dataclass
class Model:
    table: Table
    rows: dict[int, tuple[dict[str, Any], int]] = dataclasses.field(default_factory=dict)
    snapshots: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    field_meaning: dict[int, tuple[int, str]] = dataclasses.field(default_factory=dict)
    last_partition_id: int = 999

    def current(self) -> list[dict[str, Any]]:
        return sorted((r for r, _ in self.rows.values()), key=lambda r: r["id"])

    def check(self) -> None:
        t = self.table
        snap = t.current_snapshot()
        if snap is not None:
            self.snapshots[snap.snapshot_id] = self.current()
        got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == self.current()
        md = t.metadata
        assert md.last_partition_id >= self.last_partition_id
        self.last_partition_id = md.last_partition_id
        for spec in md.partition_specs:
            for f in spec.fields:
                assert f.field_id <= md.last_partition_id
                meaning = (f.source_id, str(f.transform))
                assert self.field_meaning.setdefault(f.field_id, meaning) == meaning, f
        specs = md.partition_specs
        for i, a in enumerate(specs):
            assert not any(a.compatible_with(b) for b in specs[i + 1 :]), "a spec was added twice"


def rows_strategy(ids: st.SearchStrategy[int]) -> st.SearchStrategy[list[dict[str, Any]]]:
    row = st.fixed_dictionaries(
        {
            "id": ids,
            "ts": st.one_of(
                st.none(), st.integers(0, 24 * 45).map(lambda h: BASE + dt.timedelta(hours=h, minutes=7))
            ),
            "cat": st.one_of(st.none(), st.sampled_from(["ant", "bee", "cow", "b"])),
            "n": st.one_of(st.none(), st.integers(-30, 30)),
        }
    )
    return st.lists(row, min_size=1, max_size=6, unique_by=lambda r: r["id"])


def spec_call(data: st.DataObject, t: Table) -> tuple[str, tuple[Any, ...]]:
    names = [f.name for f in t.spec().fields]
    kind = data.draw(
        st.sampled_from(["add", "add", "add_named", "identity", "remove", "remove_term", "rename"])
    )
    if kind == "add":
        return "add_field", (data.draw(st.sampled_from(TERMS)),)
    if kind == "add_named":
        return "add_field", (
            data.draw(st.sampled_from(TERMS)),
            data.draw(st.sampled_from(["p1", "p2", "ts_day"])),
        )
    if kind == "identity":
        return "add_identity", (data.draw(st.sampled_from(["cat", "n"])),)
    if kind == "remove":
        return "remove_field", (data.draw(st.sampled_from([*names, "nope"])),)
    if kind == "remove_term":
        return "remove_field", (data.draw(st.sampled_from(TERMS)),)
    return "rename_field", (
        data.draw(st.sampled_from([*names, "nope"])),
        data.draw(st.sampled_from(["r1", "r2", "n"])),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_partition_evolution_follows_the_model(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wh = Path(tmp) / "wh"
        wh.mkdir()
        cat = InMemoryCatalog("m", warehouse=wh.as_uri())
        cat.create_namespace("ns")
        first = data.draw(st.lists(st.sampled_from(TERMS[:6]), max_size=2, unique=True), label="partition_by")
        try:
            t = cat.create_table("ns.t", schema=SCHEMA, partition_by=first)
        except PartitionSpecError:
            t = cat.create_table("ns.t", schema=SCHEMA)
        m = Model(t)
        m.check()
        next_id = 0
        for _ in range(data.draw(st.integers(3, 9), label="steps")):
            op = data.draw(
                st.sampled_from(["spec", "spec", "append", "append", "delete", "upsert", "replace", "mode"])
            )
            if op == "spec":
                calls = [spec_call(data, t) for _ in range(data.draw(st.integers(1, 3)))]
                location = t.metadata_location
                try:
                    with t.update_spec() as u:
                        for method, args in calls:
                            getattr(u, method)(*args)
                except PartitionSpecError:
                    assert t.metadata_location == location
                    assert t.refresh().metadata_location == location
            elif op == "append":
                rows = data.draw(rows_strategy(st.integers(next_id, next_id + 50)))
                next_id += 51
                t.append(pa.Table.from_pylist(rows, schema=SCHEMA))
                spec = t.metadata.default_spec_id
                m.rows.update({r["id"]: (r, spec) for r in rows})
            elif op == "delete" and m.rows:
                gone = data.draw(
                    st.lists(st.sampled_from(sorted(m.rows)), min_size=1, max_size=5, unique=True)
                )
                t.delete(f"id in ({', '.join(map(str, gone))})")
                m.rows = {k: v for k, v in m.rows.items() if k not in gone}
            elif op == "upsert" and m.rows:
                keys = data.draw(
                    st.lists(st.sampled_from(sorted(m.rows)), min_size=1, max_size=3, unique=True)
                )
                rows = [{**m.rows[k][0], "n": (m.rows[k][0]["n"] or 0) + 1} for k in keys]
                rows += data.draw(rows_strategy(st.integers(next_id, next_id + 50)))
                next_id += 51
                t.upsert(pa.Table.from_pylist(rows, schema=SCHEMA), ["id"])
                spec = t.metadata.default_spec_id
                m.rows.update({r["id"]: (r, spec) for r in rows})
            elif op == "replace":
                rows = data.draw(rows_strategy(st.integers(next_id, next_id + 50)))
                next_id += 51
                spec = t.metadata.default_spec_id
                touched = {partition_of(t, spec, r) for r in rows}
                everything = t.spec().is_unpartitioned()
                m.rows = {
                    k: (r, s)
                    for k, (r, s) in m.rows.items()
                    if not (everything or (s == spec and partition_of(t, spec, r) in touched))
                }
                t.replace_partitions(pa.Table.from_pylist(rows, schema=SCHEMA))
                m.rows.update({r["id"]: (r, spec) for r in rows})
            elif op == "mode":
                mode = data.draw(st.sampled_from(["copy-on-write", "merge-on-read"]))
                with t.transaction() as tx:
                    tx.set_properties(**{"write.delete.mode": mode, "write.merge.mode": mode})
            m.check()
        for sid, want in m.snapshots.items():
            got = sorted(t.scan(snapshot_id=sid).to_arrow().to_pylist(), key=lambda r: r["id"])
            assert got == want, sid
