"""The pipelined small-file path (icefloe.arrow._scan_groups): many footer windows, groups scanned
concurrently by ``read_table``, position deletes dropped by zero-copy slices of the files without
deletes and one copy of the runs of files with deletes. Checked against the per-file path
(``GROUPED_FILE_MAX_BYTES = 0``) and against rows computed from the written data, across schema
evolution, NaN, residuals, limits and errors."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import icefloe
from icefloe.arrow import _scan_groups as groups
from icefloe.arrow.apply_deletes import DeleteLoader
from icefloe.errors import CorruptFileError
from icefloe.expressions import AlwaysTrue
from icefloe.io.local import LocalFileIO
from icefloe.manifest import DataFile, FileFormat
from icefloe.scan.task import FileScanTask
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

FILES = 12
ROWS = 20
OLD_FILES = 6  # files written before the schema change


def _rows(i: int, new: bool) -> pa.Table:
    ids = list(range(i * ROWS, (i + 1) * ROWS))
    # NaN in every third row, 2.5 in every fourth, a null in every seventh.
    f = [None if x % 7 == 3 else math.nan if x % 3 == 0 else 2.5 if x % 4 == 0 else x / 8 for x in ids]
    cols: dict[str, Any] = {"id": ids, ("amount" if new else "a"): [x % 50 for x in ids], "f": f}
    types = {"id": pa.int64(), "a": pa.int32(), "amount": pa.int64(), "f": pa.float32(), "note": pa.string()}
    if new:
        cols["f"] = pa.array(f, pa.float64())
        cols["note"] = [f"n{x}" if x % 2 else None for x in ids]
    return pa.table({k: pa.array(v, types[k]) if not isinstance(v, pa.Array) else v for k, v in cols.items()})


#: ids deleted: a run of two files with deletes (1, 2), a single file (5, also its row 0 and its
#: last row), a file of the new schema (8) and every row of file 10.
DELETED = {ROWS + 3, ROWS + 4, 2 * ROWS + 19, 5 * ROWS, 5 * ROWS + 7, 6 * ROWS - 1, 8 * ROWS + 11} | set(
    range(10 * ROWS, 11 * ROWS)
)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("pipeline")
    cat = icefloe.load_catalog(
        "pipeline", type="sql", uri=f"sqlite:///{root / 'c.db'}", warehouse=(root / "wh").as_uri()
    )
    cat.create_namespace("p")
    t = cat.create_table(
        "p.t", schema=_rows(0, False).schema, properties={"write.delete.mode": "merge-on-read"}
    )
    for i in range(OLD_FILES):
        t.append(_rows(i, False))
    with t.update_schema() as u:
        u.rename_column("a", "amount")
        u.update_column("a", field_type=pa.int64())
        u.update_column("f", field_type="double")
        u.add_column("note", pa.string())
    for i in range(OLD_FILES, FILES):
        t.append(_rows(i, True))
    t.delete(f"id in ({', '.join(str(x) for x in sorted(DELETED))})")
    return t


def _source() -> list[dict[str, Any]]:
    """Every live row as the current schema reads it."""
    out = []
    for i in range(FILES):
        for r in _rows(i, i >= OLD_FILES).to_pylist():
            if r["id"] not in DELETED:
                out.append(
                    {"id": r["id"], "amount": r.get("amount", r.get("a")), "f": r["f"], "note": r.get("note")}
                )
    return out


def _key(r: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in r.items()))  # repr(nan) == "nan": NaN equals NaN


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """The same rows (plan order is not id order: :func:`_identical` checks order), NaN equal
    to NaN."""
    return sorted(map(_key, a)) == sorted(map(_key, b))


def _identical(a: pa.Table, b: pa.Table) -> bool:
    """The same schema and rows in the same order, NaN equal to NaN."""
    return a.schema.equals(b.schema, check_metadata=True) and list(map(_key, a.to_pylist())) == list(
        map(_key, b.to_pylist())
    )


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 2, then 3 files: a dozen files make five windows and groups."""
    monkeypatch.setattr(groups, "FIRST_WINDOW_FILES", 2)
    monkeypatch.setattr(groups, "WINDOW_FILES", 3)


def _per_file(scan: Any, monkeypatch: pytest.MonkeyPatch) -> pa.Table:
    with monkeypatch.context() as m:
        m.setattr(groups, "GROUPED_FILE_MAX_BYTES", 0)
        out: pa.Table = scan.to_arrow()
    return out


FILTERS: list[tuple[str | None, Any]] = [
    (None, lambda r: True),
    ("amount < 20", lambda r: r["amount"] < 20),  # renamed and promoted since the old files
    ("f != 2.5", lambda r: r["f"] is None or math.isnan(r["f"]) or r["f"] != 2.5),  # NaN and null kept
    ("f < 1.0", lambda r: r["f"] is not None and r["f"] < 1.0),  # NaN and null dropped
    ("f is nan or id < 5", lambda r: (r["f"] is not None and math.isnan(r["f"])) or r["id"] < 5),
    ("note is null and amount >= 10", lambda r: r["note"] is None and r["amount"] >= 10),  # added column
]


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize(("row_filter", "keep"), FILTERS, ids=[str(f[0]) for f in FILTERS])
def test_many_windows_with_deletes_in_some_files(
    table: Any, row_filter: str | None, keep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = table.scan().plan_files()
    assert len(tasks) == FILES - 1  # file 10 lost every row: the delete dropped it
    assert sum(1 for t in tasks if t.delete_files) == 4
    expected = [r for r in _source() if keep(r)]
    scan = table.scan(row_filter=row_filter) if row_filter else table.scan()
    out = scan.to_arrow()
    assert _same(out.to_pylist(), expected)
    assert _same(pa.Table.from_batches(scan.to_batches()).to_pylist(), expected)
    assert _identical(out, _per_file(scan, monkeypatch))
    narrow = (table.scan(row_filter=row_filter) if row_filter else table.scan()).select("f", "id")
    assert _same(narrow.to_arrow().to_pylist(), [{"f": r["f"], "id": r["id"]} for r in expected])


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize("limit", [0, 1, 19, 57, 10**6])
def test_limits_across_windows(table: Any, limit: int) -> None:
    """A limit takes the first rows in plan order (as the unlimited scan orders them)."""
    for row_filter in (None, "f != 2.5"):
        scan = table.scan(row_filter=row_filter) if row_filter else table.scan()
        everything = scan.to_arrow()
        limited = (
            table.scan(row_filter=row_filter, limit=limit) if row_filter else table.scan(limit=limit)
        ).to_arrow()
        assert _identical(limited, everything.slice(0, limit))


@pytest.mark.usefixtures("small_windows")
def test_groups_and_per_file_reads_interleave_in_plan_order(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = sorted(t.file.file_size_in_bytes for t in table.scan().plan_files())
    monkeypatch.setattr(groups, "GROUPED_FILE_MAX_BYTES", sizes[len(sizes) // 2])
    assert _same(table.scan().to_arrow().to_pylist(), _source())


# ------------------------------------------------------------------------ deletes by position


@st.composite
def _files_and_positions(draw: st.DrawFn) -> tuple[list[int], list[np.ndarray[Any, Any]]]:
    counts = draw(st.lists(st.integers(0, 12), min_size=1, max_size=8))
    positions = []
    for n in counts:
        # Sorted, distinct; some beyond the file's rows (ignored, as by the per-file path).
        p = draw(st.lists(st.integers(0, n + 3), unique=True, max_size=n + 3))
        positions.append(np.array(sorted(p), dtype=np.int64))
    return counts, positions


@given(_files_and_positions())
def test_drop_positions_matches_a_mask_and_copies_only_files_with_deletes(
    case: tuple[list[int], list[np.ndarray[Any, Any]]],
) -> None:
    counts, positions = case
    chunks = []
    start = 0
    for n in counts:
        chunks.append(pa.record_batch({"x": pa.array(range(start, start + n), pa.int64())}))
        start += n
    table = pa.Table.from_batches(chunks)
    out = groups._drop_positions(table, positions, counts)
    expected, offset = [], 0
    for p, n in zip(positions, counts, strict=True):
        expected += [offset + i for i in range(n) if i not in set(p.tolist())]
        offset += n
    assert out.column("x").to_pylist() == expected
    assert out.schema == table.schema
    # The files without deletes are not copied: their values stay in the input's buffers.
    outputs = {c.buffers()[1].address for c in out.column("x").chunks if len(c)}
    for c, p, n in zip(table.column("x").chunks, positions, counts, strict=True):
        if n and not np.any(p < n):
            assert c.buffers()[1].address in outputs


def test_keep_mask_ignores_positions_outside_the_file() -> None:
    mask = groups._keep_mask([np.array([0, 2, 5], dtype=np.int64), np.array([1, 9], dtype=np.int64)], [3, 2])
    assert mask is not None and mask.to_pylist() == [False, True, False, True, False]


# ------------------------------------------------------------------------ errors


def test_a_corrupt_file_in_a_later_group_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups scanned concurrently: the error of a later group is raised, typed, naming the file."""
    monkeypatch.setattr(groups, "FIRST_WINDOW_FILES", 2)
    monkeypatch.setattr(groups, "WINDOW_FILES", 2)
    schema = Schema(NestedField(1, "id", LongType()))
    files = []
    for i in range(7):
        path = tmp_path / f"g{i}.parquet"
        pq.write_table(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), str(path))
        files.append(path)
    good = files[5].read_bytes()
    files[5].write_bytes(good[:4] + b"\x00" * (len(good) - 12) + good[-8:])  # footer intact, pages not
    tasks = [
        FileScanTask(
            DataFile(
                file_path=str(p),
                file_format=FileFormat.PARQUET,
                partition=(),
                record_count=10,
                file_size_in_bytes=os.path.getsize(p),
            ),
            AlwaysTrue(),
            (),
        )
        for p in files
    ]
    mapping = '[{"field-id": 1, "names": ["id"]}]'
    opts = groups.ReadOptions(schema, schema, delete_loader=DeleteLoader(), name_mapping=mapping)
    with pytest.raises(CorruptFileError, match=r"g5\.parquet"):
        groups.read_table(LocalFileIO(), tasks, opts)
    assert groups.read_table(LocalFileIO(), tasks[:5], opts).column("id").to_pylist() == list(range(50))


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize("row_filter", [None, "f != 2.5", "amount < 20"])
def test_a_projection_without_columns_keeps_the_row_count(table: Any, row_filter: str | None) -> None:
    """Tables without columns carry only a row count, which from_arrays, take and concat_tables
    drop: to_arrow keeps it, as to_batches does."""
    keep = dict(FILTERS)[row_filter]
    expected = sum(1 for r in _source() if keep(r))
    scan = (
        table.scan(row_filter=row_filter, selected_fields=())
        if row_filter
        else table.scan(selected_fields=())
    )
    out = scan.to_arrow()
    assert out.num_columns == 0
    assert out.num_rows == expected == sum(b.num_rows for b in scan.to_batches())
