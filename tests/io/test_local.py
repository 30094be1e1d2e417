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
