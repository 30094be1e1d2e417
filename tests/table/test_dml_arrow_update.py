"""``table.update(where, set=...)`` on the Arrow engine, in both ``write.update.mode``s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import icefloe
from icefloe.errors import ConflictError, SchemaError, ValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("n", pa.int32())])
MODES = ["copy-on-write", "merge-on-read"]


def _table(tmp_path: Path, mode: str, partition_by: list[str] | None = None) -> Any:
    cat = icefloe.load_catalog("t", type="memory", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("ns")
    t = cat.create_table(
        "ns.t",
        schema=SCHEMA,
        partition_by=partition_by or ["bucket(2, id)"],
        properties={"write.update.mode": mode, "write.delete.mode": mode},
    )
    for lo in (0, 10):
        ids = list(range(lo, lo + 10))
        t.append(
            pa.table({"id": ids, "s": [f"s{i}" for i in ids], "n": pa.array(ids, pa.int32())}, schema=SCHEMA)
        )
    return t


def _rows(t: Any) -> dict[int, tuple[Any, Any]]:
    return {r["id"]: (r["s"], r["n"]) for r in t.scan().to_arrow().to_pylist()}


@pytest.mark.parametrize("mode", MODES)
def test_update_values_expressions_and_functions(tmp_path: Path, mode: str) -> None:
    t = _table(tmp_path, mode)
    t.delete("id = 3")  # positions of the other rows must still be right
    snap = t.update("id < 6", set={"s": "x", "n": pc.field("n") * 10})
    assert snap is not None and snap.summary.operation.value == "overwrite"
    t.update("id >= 18", set={"n": lambda b: pc.add(b.column("n"), 1), "s": None})
    t.update("s = 'x' and n > 30", set={"s": pc.field("s"), "n": 0})  # an expression of the old values
    rows = _rows(t)
    assert 3 not in rows and len(rows) == 19
    assert [rows[i] for i in (0, 1, 2, 4, 5)] == [("x", 0), ("x", 10), ("x", 20), ("x", 0), ("x", 0)]
    assert rows[6] == ("s6", 6) and rows[18] == (None, 19) and rows[19] == (None, 20)
    props = t.current_snapshot().summary.props
    if mode == "merge-on-read":
        assert int(props["added-position-delete-files"]) >= 1 and "deleted-data-files" not in props
    else:
        assert "added-delete-files" not in props and int(props["deleted-data-files"]) >= 1


@pytest.mark.parametrize("mode", MODES)
def test_update_that_matches_nothing_commits_nothing(tmp_path: Path, mode: str) -> None:
    t = _table(tmp_path, mode)
    before = len(t.snapshots())
    assert t.update("id = 100", set={"s": "y"}) is None
    assert len(t.snapshots()) == before


@pytest.mark.parametrize("mode", MODES)
def test_update_of_a_partition_column_moves_rows(tmp_path: Path, mode: str) -> None:
    t = _table(tmp_path, mode, partition_by=["s"])
    t.update("id in (1, 2)", set={"s": "moved"})
    files = [task.file for task in t.scan(row_filter="s = 'moved'").plan_files()]
    assert files and all(f.partition == ("moved",) for f in files)
    assert sorted(i for i, (s, _) in _rows(t).items() if s == "moved") == [1, 2]


def test_update_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    t = _table(tmp_path, "copy-on-write")
    before = len(t.snapshots())
    with pytest.raises(SchemaError, match="nope"):
        t.update("id = 1", set={"nope": 1})
    with pytest.raises(ValidationError, match="non-empty"):
        t.update("id = 1", set={})
    with pytest.raises(SchemaError, match="'n'"):
        t.update("id = 1", set={"n": "not a number"})
    assert len(t.snapshots()) == before and _rows(t)[1] == ("s1", 1)


def test_update_in_a_transaction_and_conflicts(tmp_path: Path) -> None:
    t = _table(tmp_path, "merge-on-read")
    with t.transaction() as tx:
        assert tx.update("id < 2", set={"n": 100}) == 2
        tx.delete("id = 0")
    assert 0 not in _rows(t) and _rows(t)[1] == ("s1", 100)
    # a concurrent merge-on-read delete of a row the update changes: the update fails
    stale = t.catalog.load_table("ns.t")
    t.delete("id = 5")
    with pytest.raises(ConflictError), stale.transaction() as tx:
        tx.update("id = 5", set={"s": "lost"})
    assert 5 not in _rows(t.refresh())
