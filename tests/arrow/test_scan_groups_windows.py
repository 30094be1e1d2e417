"""Footer windows of the small-file path (icefloe.arrow._scan_groups): ``FIRST_WINDOW_FILES``, then
windows of ``WINDOW_FILES``, the next window's footers read on a background thread. Whatever the
sizes, the units hold the same files in plan order, and ``read_table`` and ``stream_batches``
return the rows the per-file path returns, in the same order (position deletes included)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.arrow import _scan_groups as groups
from icefloe.arrow.apply_deletes import DeleteLoader
from icefloe.errors import CorruptFileError
from icefloe.expressions import AlwaysTrue
from icefloe.io.local import LocalFileIO
from icefloe.manifest import DataFile, DataFileContent, FileFormat
from icefloe.scan.task import FileScanTask
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType

FILES = 23
ROWS = 10
MAPPING = '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["s"]}]'
SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType(), required=False))


# ------------------------------------------------------------------------ reading


def _task(path: Path, deletes: tuple[DataFile, ...] = ()) -> FileScanTask:
    data = DataFile(
        file_path=str(path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=ROWS,
        file_size_in_bytes=os.path.getsize(path),
    )
    return FileScanTask(data, AlwaysTrue(), deletes)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[FileScanTask]:
    """23 files: the column ``s`` is a string in most and absent from files 7-9 and 15 (other
    physical schemas break the groups); one position delete file deletes rows of files 2, 3, 11
    and every row of file 20."""
    root = tmp_path_factory.mktemp("windows")
    paths = []
    for i in range(FILES):
        ids = pa.array(range(i * ROWS, (i + 1) * ROWS), pa.int64())
        cols: dict[str, Any] = {"id": ids}
        if i not in (7, 8, 9, 15):
            cols["s"] = pa.array([f"r{x}" if x % 3 else None for x in range(i * ROWS, (i + 1) * ROWS)])
        path = root / f"d{i:02d}.parquet"
        pq.write_table(pa.table(cols), str(path))
        paths.append(path)
    deleted = {2: [0, 5], 3: [9], 11: [1, 2, 3], 20: list(range(ROWS))}
    rows = [(str(paths[f]), p) for f, ps in sorted(deleted.items()) for p in ps]
    delete_path = root / "pos-deletes.parquet"
    pq.write_table(
        pa.table(
            {
                "file_path": pa.array([r[0] for r in rows], pa.string()),
                "pos": pa.array([r[1] for r in rows], pa.int64()),
            }
        ),
        str(delete_path),
    )
    delete_file = DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=str(delete_path),
        file_format=FileFormat.PARQUET,
        partition=(),
        record_count=len(rows),
        file_size_in_bytes=os.path.getsize(delete_path),
    )
    return [_task(p, (delete_file,) if i in deleted else ()) for i, p in enumerate(paths)]


def _options() -> groups.ReadOptions:
    return groups.ReadOptions(SCHEMA, SCHEMA, delete_loader=DeleteLoader(), name_mapping=MAPPING)


def _expected() -> list[dict[str, Any]]:
    gone = {20 + 0, 20 + 5, 39} | {110 + p for p in (1, 2, 3)} | set(range(200, 210))
    return [
        {"id": x, "s": None if (x // ROWS) in (7, 8, 9, 15) or not x % 3 else f"r{x}"}
        for x in range(FILES * ROWS)
        if x not in gone
    ]


@pytest.mark.parametrize(
    ("first", "window"), [(1, 1), (1, 4), (2, 5), (3, 8), (4, 100), (32, 256), (30, 2), (23, 23)]
)
def test_any_window_sizes_read_the_same_rows_in_order(
    tasks: list[FileScanTask], first: int, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setattr(groups, "GROUPED_FILE_MAX_BYTES", 0)
        per_file = groups.read_table(LocalFileIO(), tasks, _options())
    assert per_file.to_pylist() == _expected()
    monkeypatch.setattr(groups, "FIRST_WINDOW_FILES", first)
    monkeypatch.setattr(groups, "WINDOW_FILES", window)
    units = list(groups._all_units(LocalFileIO(), tasks, _options()))
    in_units = [t for u in units for t in (u.tasks if isinstance(u, groups._Group) else [u.task])]
    assert [t.file.file_path for t in in_units] == [t.file.file_path for t in tasks]
    assert all(isinstance(u, groups._Group) for u in units)  # every footer read
    out = groups.read_table(LocalFileIO(), tasks, _options())
    assert out.equals(per_file)
    streamed = pa.Table.from_batches(list(groups.stream_batches(LocalFileIO(), tasks, _options())))
    assert streamed.to_pylist() == per_file.to_pylist()


@pytest.mark.parametrize(("first", "window"), [(2, 4), (1, 9), (6, 3)])
def test_an_unreadable_footer_in_a_window_read_ahead_is_named(
    tmp_path: Path, first: int, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose footer does not read (in the first window or one read ahead) goes to the
    per-file path, which raises the typed error naming it; the files before it are read."""
    monkeypatch.setattr(groups, "FIRST_WINDOW_FILES", first)
    monkeypatch.setattr(groups, "WINDOW_FILES", window)
    paths = []
    for i in range(9):
        path = tmp_path / f"f{i}.parquet"
        pq.write_table(pa.table({"id": pa.array(range(i * ROWS, (i + 1) * ROWS), pa.int64())}), str(path))
        paths.append(path)
    paths[5].write_bytes(b"PAR1" + b"\x00" * 64)  # not a Parquet footer
    tasks = [_task(p) for p in paths]
    schema = Schema(NestedField(1, "id", LongType()))
    opts = groups.ReadOptions(schema, schema, delete_loader=DeleteLoader(), name_mapping=MAPPING)
    units = list(groups._all_units(LocalFileIO(), tasks, opts))
    singles = [u.task.file.file_path for u in units if isinstance(u, groups._Single)]
    assert singles == [str(paths[5])]
    with pytest.raises(CorruptFileError, match=r"f5\.parquet"):
        groups.read_table(LocalFileIO(), tasks, opts)
    with pytest.raises(CorruptFileError, match=r"f5\.parquet"):
        list(groups.stream_batches(LocalFileIO(), tasks, opts))
    assert groups.read_table(LocalFileIO(), tasks[:5], opts).column("id").to_pylist() == list(range(5 * ROWS))
