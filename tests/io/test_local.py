"""LocalFileIO, load_file_io and CountingFileIO."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.errors import ConfigError, FileIOError
from icefloe.io import FileIO, InputFile, OutputFile, load_file_io
from icefloe.io.arrow import ArrowFileIO
from icefloe.io.local import LocalFileIO, local_path
from icefloe.testing import CountingFileIO


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("/tmp/x/y.avro", "/tmp/x/y.avro"),
        ("file:/tmp/x/y.avro", "/tmp/x/y.avro"),
        ("file:///tmp/x/y.avro", "/tmp/x/y.avro"),
        ("file://localhost/tmp/x/y.avro", "/tmp/x/y.avro"),
        ("relative/y.avro", "relative/y.avro"),
        # Java writes escaped partition directories literally; they are not decoded.
        ("file:/t/cat=a%20b/f.parquet", "/t/cat=a%20b/f.parquet"),
    ],
)
def test_local_path(location: str, path: str) -> None:
    assert local_path(location) == path


def test_local_path_rejects_remote_host() -> None:
    with pytest.raises(FileIOError, match="not local"):
        local_path("file://otherhost/x")


@pytest.mark.parametrize("prefix", ["", "file:", "file://"])
def test_write_read_delete(tmp_path: Path, prefix: str) -> None:
    io = LocalFileIO()
    location = f"{prefix}{tmp_path}/a/b/c.bin"
    out = io.new_output(location)
    assert isinstance(out, OutputFile)
    assert not out.exists()
    with out.create() as f:
        f.write(b"hello")
    assert out.exists() and io.exists(location)
    inp = io.new_input(location)
    assert isinstance(inp, InputFile)
    assert inp.location == location
    assert len(inp) == 5
    with inp.open() as f:
        f.seek(1)
        assert f.read() == b"ello"
        assert f.tell() == 5
    io.delete(location)
    assert not inp.exists()


def test_create_never_overwrites(tmp_path: Path) -> None:
    io = LocalFileIO()
    location = str(tmp_path / "m.avro")
    with io.new_output(location).create() as f:
        f.write(b"first")
    with pytest.raises(FileIOError, match="already exists") as info:
        io.new_output(location).create()
    assert info.value.context["already_exists"] is True
    assert info.value.hint
    assert (tmp_path / "m.avro").read_bytes() == b"first"
    with io.new_output(location).create(overwrite=True) as f:
        f.write(b"second")
    assert (tmp_path / "m.avro").read_bytes() == b"second"


def test_missing_files_raise_file_io_error(tmp_path: Path) -> None:
    io = LocalFileIO()
    missing = str(tmp_path / "nope")
    for action in (
        lambda: io.new_input(missing).open(),
        lambda: len(io.new_input(missing)),
        lambda: io.delete(missing),
    ):
        with pytest.raises(FileIOError) as info:
            action()
        assert info.value.context["not_found"] is True
        assert info.value.context["location"] == missing
        assert isinstance(info.value, OSError)


def test_parquet_through_local_streams(tmp_path: Path) -> None:
    io = LocalFileIO()
    table = pa.table({"x": [1, 2, 3]})
    location = f"file://{tmp_path}/t.parquet"
    with io.new_output(location).create() as f:
        pq.write_table(table, f)
    with io.new_input(location).open() as f:
        assert pq.read_table(f).equals(table)


def test_local_file_io_pickles() -> None:
    io = LocalFileIO({"a": "b"})
    assert pickle.loads(pickle.dumps(io)).properties == {"a": "b"}


class _CustomIO(LocalFileIO):
    pass


class _NotAnIO:
    def __init__(self, properties: object) -> None:
        pass


@pytest.mark.parametrize(
    ("properties", "location", "expected"),
    [
        ({}, "/tmp/t", LocalFileIO),
        ({}, "file:/tmp/t", LocalFileIO),
        ({}, None, LocalFileIO),
        ({}, "s3://bucket/t", ArrowFileIO),
        ({"io-impl": "arrow"}, "/tmp/t", ArrowFileIO),
        ({"io-impl": "local"}, "s3://bucket/t", LocalFileIO),
        ({"io-impl": f"{__name__}._CustomIO"}, "/tmp/t", _CustomIO),
    ],
)
def test_load_file_io(properties: dict[str, str], location: str | None, expected: type) -> None:
    io = load_file_io(properties, location)
    assert type(io) is expected
    assert isinstance(io, FileIO)
    assert dict(io.properties) == properties


@pytest.mark.parametrize("impl", ["nodots", "no.such.module.Cls", f"{__name__}._NotAnIO"])
def test_load_file_io_bad_impl(impl: str) -> None:
    with pytest.raises(ConfigError):
        load_file_io({"io-impl": impl}, "/tmp/t")


def test_counting_file_io(tmp_path: Path) -> None:
    io = CountingFileIO(LocalFileIO({"k": "v"}))
    assert isinstance(io, FileIO)
    assert io.properties == {"k": "v"}
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for loc in (a, b):
        with io.new_output(loc).create() as f:
            f.write(b"x")
    inp = io.new_input(a)
    assert inp.exists() and len(inp) == 1  # neither counts as opening
    for _ in range(2):
        with inp.open() as f:
            f.read()
    with io.new_input(b).open():
        pass
    assert io.opened == {a: 2, b: 1}
    with pytest.raises(FileIOError):
        io.new_input(str(tmp_path / "missing")).open()
    assert str(tmp_path / "missing") not in io.opened
    io.reset()
    assert not io.opened
    io.delete(a)
    assert not io.exists(a)


# --------------------------------------------------------------------------- native streams
# open()/create() hand out pyarrow native files so Parquet IO stays in C++ (no GIL round trips).


def test_streams_are_pyarrow_native_files(tmp_path: Path) -> None:
    io = LocalFileIO()
    location = str(tmp_path / "n" / "f.bin")
    with io.new_output(location).create() as out:
        assert isinstance(out, pa.NativeFile)
        out.write(b"abc")
    assert out.closed
    with io.new_input(location).open() as inp:
        assert isinstance(inp, pa.NativeFile)
        assert inp.read() == b"abc"
    assert inp.closed
    with io.new_output(location).create(overwrite=True) as out:
        assert isinstance(out, pa.NativeFile)
        out.write(b"z")
    assert (tmp_path / "n" / "f.bin").read_bytes() == b"z"


def test_exclusive_create_races_have_one_winner(tmp_path: Path) -> None:
    import threading

    io = LocalFileIO()
    location = str(tmp_path / "race.avro")
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            with io.new_output(location).create() as f:
                f.write(f"writer {i}".encode())
            outcomes.append("won")
        except FileIOError as e:
            assert e.context["already_exists"] is True
            outcomes.append("lost")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert (tmp_path / "race.avro").read_bytes().startswith(b"writer ")


def test_create_refuses_a_file_swapped_in_after_the_exclusive_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import icefloe.io.local as local_module

    path = tmp_path / "m.avro"
    other = tmp_path / "other"
    other.write_bytes(b"someone else's")
    real_open = os.open

    def open_then_swap(p: str, flags: int, mode: int = 0o777) -> int:
        fd = real_open(p, flags, mode)
        os.replace(other, p)  # a concurrent process replaces the name we just claimed
        return fd

    monkeypatch.setattr(local_module.os, "open", open_then_swap)
    with pytest.raises(FileIOError, match="already exists") as info:
        LocalFileIO().new_output(str(path)).create()
    assert info.value.context["already_exists"] is True
    assert path.read_bytes() == b"someone else's"  # not truncated, not written


def test_native_stream_errors_are_file_io_errors(tmp_path: Path) -> None:
    io = LocalFileIO()
    (tmp_path / "afile").write_bytes(b"x")
    with pytest.raises(FileIOError, match="cannot open") as info:
        io.new_input(str(tmp_path)).open()  # a directory
    assert info.value.context["location"] == str(tmp_path)
    for overwrite in (False, True):
        with pytest.raises(FileIOError, match="cannot create"):
            io.new_output(str(tmp_path / "afile" / "child")).create(overwrite=overwrite)
    with pytest.raises(FileIOError) as info:
        io.new_input(str(tmp_path / "missing")).open()
    assert info.value.context["not_found"] is True and info.value.errno == 2
    assert "No such file" in info.value.message


def test_fastavro_reads_and_writes_through_native_streams(tmp_path: Path) -> None:
    import fastavro

    io = LocalFileIO()
    location = f"file:{tmp_path}/x.avro"
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"}],
        }
    )
    records = [{"a": i, "s": f"v{i}"} for i in range(1000)]
    with io.new_output(location).create() as f:
        fastavro.writer(f, schema, records, codec="deflate", metadata={"k": "v"})
    with io.new_input(location).open() as f:
        reader = fastavro.reader(f)
        assert reader.metadata["k"] == "v"
        assert list(reader) == records
    with io.new_input(location).open() as f:
        assert sum(b.num_records for b in fastavro.block_reader(f)) == 1000
