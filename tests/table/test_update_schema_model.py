"""Random sequences of schema changes and appends (plain and ``schema_evolution="merge"``)
against a Python model of the table that knows nothing of icefloe's evolution code: it assigns
field ids itself (last-column-id + 1, never reused), keeps every row by field id, and knows which
schema each snapshot reads with. After every step the current rows must equal the model's; at
the end every snapshot must.

Columns are top-level primitives plus one struct ``st`` whose fields evolve too; values are
chosen so that every promotion is exact (float32-representable floats, two-place decimals)."""

from __future__ import annotations

import dataclasses
import decimal
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import IncompatibleSchemaChangeError, SchemaError

# model types: name -> (Arrow type, wider type name or None)
TYPES: dict[str, tuple[pa.DataType, str | None]] = {
    "int": (pa.int32(), "long"),
    "long": (pa.int64(), None),
    "float": (pa.float32(), "double"),
    "double": (pa.float64(), None),
    "decimal(9, 2)": (pa.decimal128(9, 2), "decimal(12, 2)"),
    "decimal(12, 2)": (pa.decimal128(12, 2), None),
    "string": (pa.string(), None),
}


@dataclasses.dataclass
class Col:
    field_id: int
    name: str
    type: str
    required: bool = False


@dataclasses.dataclass
class Model:
    top: list[Col]
    nested: list[Col]  # the fields of struct column "st" (id 2)
    last_id: int
    rows: list[dict[int, Any]] = dataclasses.field(default_factory=list)  # field id -> value
    snapshots: dict[int, tuple[list[Col], list[Col], list[dict[int, Any]]]] = dataclasses.field(
        default_factory=dict
    )

    def names(self) -> set[str]:
        return {c.name for c in self.top}

    def new_id(self) -> int:
        self.last_id += 1
        return self.last_id

    def copy_schema(self) -> tuple[list[Col], list[Col]]:
        return [dataclasses.replace(c) for c in self.top], [dataclasses.replace(c) for c in self.nested]


def _wider(c: Col) -> str | None:
    return TYPES[c.type][1] if c.type in TYPES else None


def _value(t: str, k: int) -> Any:
    if t in ("int", "long"):
        return k * 7 - 20
    if t in ("float", "double"):
        return k + 0.5
    if t.startswith("decimal"):
        return decimal.Decimal(k * 3) / 4 + decimal.Decimal("0.25")
    return f"v{k}"


def _arrow_struct(nested: list[Col]) -> pa.DataType:
    return pa.struct([pa.field(c.name, TYPES[c.type][0]) for c in nested])


def _rows_as_read(top: list[Col], nested: list[Col], rows: list[dict[int, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        row: dict[str, Any] = {}
        for c in top:
            if c.field_id == 2:
                st_val = r.get(2)
                row[c.name] = None if st_val is None else {n.name: st_val.get(n.field_id) for n in nested}
            else:
                row[c.name] = r.get(c.field_id)
        out.append(row)
    return out


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(row.items(), key=lambda kv: kv[0]))


def _check(t: Any, top: list[Col], nested: list[Col], rows: list[dict[int, Any]], **scan: Any) -> None:
    got = t.scan(**scan).to_arrow()
    assert got.column_names == [c.name for c in top]
    want = _rows_as_read(top, nested, rows)
    assert sorted(map(_key, got.to_pylist())) == sorted(map(_key, want))


def _append(rng: Any, t: Any, m: Model, k: int, merge: bool) -> None:
    n = rng.draw(st.integers(1, 3), label="rows")
    new_top, new_nested = list(m.top), list(m.nested)
    widen: dict[int, str] = {}
    extra: list[Col] = []
    if merge:
        # the data brings a wider type for a column and/or a new column
        narrow = [c for c in m.top if _wider(c) is not None]
        if narrow and rng.draw(st.booleans(), label="widen"):
            c = rng.draw(st.sampled_from(narrow), label="widened")
            widen[c.field_id] = TYPES[c.type][1]  # type: ignore[assignment]
        if rng.draw(st.booleans(), label="new col"):
            extra.append(Col(0, f"m{k}", rng.draw(st.sampled_from(sorted(TYPES)), label="new type")))
    columns: dict[str, pa.Array] = {}
    rows: list[dict[int, Any]] = [{} for _ in range(n)]
    for c in m.top:
        if c.field_id == 2:
            if not m.nested:
                continue
            vals = [{nc.name: _value(nc.type, k + i) for nc in m.nested} for i in range(n)]
            columns[c.name] = pa.array(vals, _arrow_struct(m.nested))
            for i in range(n):
                rows[i][2] = {nc.field_id: _value(nc.type, k + i) for nc in m.nested}
            continue
        if not c.required and c.field_id not in widen and rng.draw(st.booleans(), label="skip col"):
            continue  # an optional column the data leaves out: nulls
        typ = widen.get(c.field_id, c.type)
        vals = [_value(typ, k + i) for i in range(n)]
        columns[c.name] = pa.array(vals, TYPES[typ][0])
        for i in range(n):
            rows[i][c.field_id] = vals[i]
    for e in extra:
        vals = [_value(e.type, k + i) for i in range(n)]
        columns[e.name] = pa.array(vals, TYPES[e.type][0])
    t.append(pa.table(columns), schema_evolution="merge" if merge else None)
    # the model's own evolution: widened types, then new columns in order (ids from last + 1)
    for c in new_top:
        if c.field_id in widen:
            c.type = widen[c.field_id]
    for e in extra:
        e.field_id = m.new_id()
        new_top.append(e)
        for i in range(n):
            rows[i][e.field_id] = _value(e.type, k + i)
    m.top, m.nested = new_top, new_nested
    m.rows += rows
    snap = t.current_snapshot()
    m.snapshots[snap.snapshot_id] = (*m.copy_schema(), list(m.rows))


def _schema_change(rng: Any, t: Any, m: Model, k: int) -> None:
    ops = ["add", "add_nested", "rename", "widen", "move", "optional", "delete", "delete_nested", "refused"]
    op = rng.draw(st.sampled_from(ops), label="op")
    optional_top = [c for c in m.top if c.field_id not in (1, 2)]
    with t.update_schema() as u:
        if op == "add":
            name, typ = f"c{k}", rng.draw(st.sampled_from(sorted(TYPES)), label="type")
            u.add_column(name, typ)
            m.top.append(Col(m.new_id(), name, typ))
        elif op == "add_nested" and 2 in [c.field_id for c in m.top]:
            st_name = next(c.name for c in m.top if c.field_id == 2)
            typ = rng.draw(st.sampled_from(sorted(TYPES)), label="type")
            u.add_column(f"{st_name}.n{k}", typ)
            m.nested.append(Col(m.new_id(), f"n{k}", typ))
        elif op == "rename":
            c = rng.draw(st.sampled_from(m.top + m.nested), label="renamed")
            prefix = "" if c in m.top else next(x.name for x in m.top if x.field_id == 2) + "."
            u.rename_column(prefix + c.name, f"r{k}")
            c.name = f"r{k}"
        elif op == "widen":
            narrow = [c for c in m.top + m.nested if _wider(c) is not None]
            if narrow:
                c = rng.draw(st.sampled_from(narrow), label="widened")
                prefix = "" if c in m.top else next(x.name for x in m.top if x.field_id == 2) + "."
                u.update_column(prefix + c.name, field_type=TYPES[c.type][1])
                c.type = TYPES[c.type][1]  # type: ignore[assignment]
        elif op == "move" and len(m.top) > 1:
            c = rng.draw(st.sampled_from(m.top), label="moved")
            other = rng.draw(st.sampled_from([x for x in m.top if x is not c]), label="anchor")
            how = rng.draw(st.sampled_from(["first", "before", "after"]), label="how")
            m.top.remove(c)
            if how == "first":
                u.move_first(c.name)
                m.top.insert(0, c)
            elif how == "before":
                u.move_before(c.name, other.name)
                m.top.insert(m.top.index(other), c)
            else:
                u.move_after(c.name, other.name)
                m.top.insert(m.top.index(other) + 1, c)
        elif op == "optional":
            req = [c for c in m.top if c.required]
            if req:
                c = rng.draw(st.sampled_from(req), label="relaxed")
                u.update_column(c.name, required=False)
                c.required = False
        elif op == "delete" and optional_top:
            c = rng.draw(st.sampled_from(optional_top), label="deleted")
            u.delete_column(c.name)
            m.top.remove(c)
        elif op == "delete_nested" and len(m.nested) > 1:
            c = rng.draw(st.sampled_from(m.nested), label="deleted nested")
            st_name = next(x.name for x in m.top if x.field_id == 2)
            u.delete_column(f"{st_name}.{c.name}")
            m.nested.remove(c)
        elif op == "refused":
            location = t.metadata_location
            wide = [c for c in m.top if c.type in ("long", "double", "string")]
            with pytest.raises((IncompatibleSchemaChangeError, SchemaError)):
                if wide:
                    u.update_column(wide[0].name, field_type="int")
                else:
                    u.add_column("req", "int", required=True)
            assert t.metadata_location == location


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_schema_evolution_follows_the_model(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as d:
        cat = InMemoryCatalog("m", warehouse=Path(d).as_uri())
        cat.create_namespace("ns")
        schema = pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                ("x", pa.int32()),
                ("f", pa.float32()),
            ]
        )
        t = cat.create_table("ns.t", schema=schema)
        # ids as a new table gets them: top level first, then the struct's fields
        m = Model(
            top=[
                Col(1, "id", "long", True),
                Col(2, "st", "struct"),
                Col(3, "x", "int"),
                Col(4, "f", "float"),
            ],
            nested=[Col(5, "a", "int"), Col(6, "b", "string")],
            last_id=6,
        )
        steps = data.draw(st.integers(2, 9), label="steps")
        for k in range(steps):
            kind = data.draw(st.sampled_from(["append", "merge", "schema", "schema"]), label="step")
            if kind == "schema":
                _schema_change(data, t, m, k)
            else:
                _append(data, t, m, k, merge=kind == "merge")
            assert t.metadata.last_column_id == m.last_id
            assert [f.field_id for f in t.schema().fields] == [c.field_id for c in m.top]
            _check(t, m.top, m.nested, m.rows)
        for sid, (top, nested, rows) in m.snapshots.items():
            _check(t, top, nested, rows, snapshot_id=sid)
