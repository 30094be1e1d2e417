"""A serial Python model of DELETE, UPDATE and MERGE (Spark's semantics), and the data and
statements the row-level tests share (``test_dml_*``, ``test_sql_*``, the Java comparison).

Rows are dicts. Conditions are Python functions returning True, False or None (SQL's NULL); a
clause applies only when its condition is True, exactly as Spark's WHERE and WHEN ... AND.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

Row = dict[str, Any]
Cond = Callable[..., bool | None]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("cat", pa.string()),
        ("v", pa.int64()),
        ("note", pa.string()),
    ]
)
COLUMNS = [f.name for f in SCHEMA]
SOURCE_DDL = "id long, cat string, v long, note string, op string"


def target_rows(n: int = 40) -> list[Row]:
    return [
        {"id": i, "cat": "abc"[i % 3], "v": i * 10, "note": None if i % 7 == 0 else f"n{i}"} for i in range(n)
    ]


def source_rows() -> list[Row]:
    """Matches (ids < 40) and new ids; ``op`` U, D or I; a null note and a null op."""
    out = []
    for k, i in enumerate([2, 5, 12, 18, 21, 25, 33, 38, 41, 44, 47, 50]):
        op = "UDI"[k % 3] if k != 7 else None
        out.append(
            {"id": i, "cat": "abcz"[k % 4], "v": -i, "note": None if k % 5 == 0 else f"s{i}", "op": op}
        )
    return out


def arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows], schema=SCHEMA)


def key(rows: list[Row]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r[c] for c in COLUMNS) for r in rows), key=repr)


def _and(*values: bool | None) -> bool | None:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def cmp(a: Any, op: str, b: Any) -> bool | None:
    """SQL comparison: NULL when either side is NULL."""
    if a is None or b is None:
        return None
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def delete_model(rows: list[Row], where: Cond) -> list[Row]:
    return [r for r in rows if where(r) is not True]


def update_model(rows: list[Row], where: Cond, assign: Callable[[Row], Row]) -> list[Row]:
    return [{**r, **assign(r)} if where(r) is True else r for r in rows]


class CardinalityViolation(Exception):
    pass


@dataclass
class MClause:
    kind: str  # matched | not_matched | by_source
    action: str  # update | delete | insert
    cond: Cond | None = None  # (t, s) matched; (s,) not matched; (t,) by source
    values: Callable[..., Row] = field(default=lambda *a: {})


def merge_model(
    target: list[Row], source: list[Row], on: Callable[[Row, Row], bool | None], clauses: list[MClause]
) -> list[Row]:
    matches = [[s for s in source if on(t, s) is True] for t in target]
    matched_clauses = [c for c in clauses if c.kind == "matched"]
    if matched_clauses and any(len(m) > 1 for m in matches):
        raise CardinalityViolation
    out: list[Row] = []
    for t, m in zip(target, matches, strict=True):
        kind, args = ("matched", (t, m[0])) if m else ("by_source", (t,))
        for c in clauses:
            if c.kind != kind or (c.cond is not None and c.cond(*args) is not True):
                continue
            if c.action == "update":
                out.append({**t, **c.values(*args)})
            break
        else:
            out.append(t)
    for s in source:
        if any(on(t, s) is True for t in target):
            continue
        for c in clauses:
            if c.kind == "not_matched" and (c.cond is None or c.cond(s) is True):
                row = {col: None for col in COLUMNS}
                row.update(c.values(s))
                out.append(row)
                break
    return out


def concat(a: Any, b: str) -> Any:
    return None if a is None else a + b


@dataclass
class Scenario:
    """One statement, as SQL (icefloe.spark.sql and Iceberg Java run the same text on ``ns.t``
    with the source as temp view ``src``) and as the model's result."""

    name: str
    sql: str
    model: Callable[[list[Row], list[Row]], list[Row]]
    partition_by: tuple[str, ...] = ("cat",)


def _on(t: Row, s: Row) -> bool | None:
    return cmp(t["id"], "=", s["id"])


SCENARIOS = [
    Scenario(
        "delete_where",
        "DELETE FROM {t} WHERE v > 200 AND cat = 'a'",
        lambda t, s: delete_model(t, lambda r: _and(cmp(r["v"], ">", 200), cmp(r["cat"], "=", "a"))),
    ),
    Scenario(
        "delete_null_semantics",
        "DELETE FROM {t} WHERE note != 'n5' AND id > 20",
        lambda t, s: delete_model(t, lambda r: _and(cmp(r["note"], "!=", "n5"), cmp(r["id"], ">", 20))),
    ),
    Scenario(
        "delete_partition",
        "DELETE FROM {t} WHERE cat = 'b'",
        lambda t, s: delete_model(t, lambda r: cmp(r["cat"], "=", "b")),
    ),
    Scenario(
        "update_expr",
        "UPDATE {t} SET v = v + 1, note = concat(note, '!') WHERE id % 4 = 0",
        lambda t, s: update_model(
            t, lambda r: r["id"] % 4 == 0, lambda r: {"v": r["v"] + 1, "note": concat(r["note"], "!")}
        ),
    ),
    Scenario(
        "update_partition_column",
        "UPDATE {t} AS x SET x.cat = 'z' WHERE x.id < 5 OR x.note IS NULL",
        lambda t, s: update_model(t, lambda r: r["id"] < 5 or r["note"] is None, lambda r: {"cat": "z"}),
    ),
    Scenario(
        "merge_all_clauses",
        "MERGE INTO {t} AS t USING src AS s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v, note = 'upd' "
        "WHEN NOT MATCHED AND s.op != 'D' THEN INSERT (id, cat, v, note) VALUES (s.id, s.cat, s.v, 'new') "
        "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE AND t.id >= 36 THEN UPDATE SET v = -1",
        lambda t, s: merge_model(
            t,
            s,
            _on,
            [
                MClause("matched", "delete", lambda a, b: cmp(b["op"], "=", "D")),
                MClause("matched", "update", None, lambda a, b: {"v": b["v"], "note": "upd"}),
                MClause(
                    "not_matched",
                    "insert",
                    lambda b: cmp(b["op"], "!=", "D"),
                    lambda b: {"id": b["id"], "cat": b["cat"], "v": b["v"], "note": "new"},
                ),
                MClause("by_source", "delete", lambda a: a["id"] < 3),
                MClause("by_source", "update", lambda a: a["id"] >= 36, lambda a: {"v": -1}),
            ],
        ),
    ),
    Scenario(
        "merge_star",
        "MERGE INTO {t} t USING (SELECT id, cat, v, note FROM src WHERE op IS NOT NULL) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        lambda t, s: merge_model(
            t,
            [r for r in s if r["op"] is not None],
            _on,
            [
                MClause("matched", "update", None, lambda a, b: {c: b[c] for c in COLUMNS}),
                MClause("not_matched", "insert", None, lambda b: {c: b[c] for c in COLUMNS}),
            ],
        ),
    ),
    Scenario(
        "merge_insert_only",
        "MERGE INTO {t} t USING src s ON t.id = s.id AND t.cat = s.cat "
        "WHEN NOT MATCHED THEN INSERT (id, cat, v) VALUES (s.id + 1000, s.cat, s.v)",
        lambda t, s: merge_model(
            t,
            s,
            lambda a, b: _and(cmp(a["id"], "=", b["id"]), cmp(a["cat"], "=", b["cat"])),
            [
                MClause(
                    "not_matched",
                    "insert",
                    None,
                    lambda b: {"id": b["id"] + 1000, "cat": b["cat"], "v": b["v"]},
                )
            ],
        ),
    ),
    Scenario(
        "merge_delete_matched",
        "MERGE INTO {t} t USING src s ON t.id = s.id AND s.v < -10 WHEN MATCHED THEN DELETE",
        lambda t, s: merge_model(
            t,
            s,
            lambda a, b: _and(cmp(a["id"], "=", b["id"]), cmp(b["v"], "<", -10)),
            [MClause("matched", "delete")],
        ),
    ),
]
