"""Deletion vector blobs and Puffin files: what icefloe writes, its own reader (and Java's framing
rules) read back, byte for byte."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.errors import CorruptFileError, ValidationError
from icefloe.io.local import LocalFileIO
from icefloe.io.puffin import DELETION_VECTOR_BLOB_TYPE, deletion_vector_positions, read_blob, read_footer
from icefloe.io.puffin_writer import PuffinWriter, serialize_deletion_vector

# Positions near 0, around the 32-bit key boundary, and far out (multi-key 64-bit bitmaps).
positions = st.lists(
    st.one_of(
        st.integers(0, 5000),
        st.integers((1 << 32) - 100, (1 << 32) + 100),
        st.integers(0, (1 << 40)),
    ),
    max_size=300,
)


@given(positions)
def test_blob_round_trip(pos: list[int]) -> None:
    blob, cardinality = serialize_deletion_vector(pos)
    assert cardinality == len(set(pos))
    got = deletion_vector_positions(blob)
    assert got.dtype == np.int64
    assert got.tolist() == sorted(set(pos))


@given(positions)
def test_blob_framing(pos: list[int]) -> None:
    blob, _ = serialize_deletion_vector(pos)
    (length,) = struct.unpack(">I", blob[:4])
    assert length == len(blob) - 8  # length covers magic + bitmap, not itself nor the CRC
    assert blob[4:8] == bytes.fromhex("d1d33964")
    (crc,) = struct.unpack(">I", blob[-4:])
    assert crc == zlib.crc32(blob[4:-4])
    # the bitmap is the portable 64-bit layout: an 8-byte little-endian count of 32-bit bitmaps
    (n_keys,) = struct.unpack("<Q", blob[8:16])
    assert n_keys == len({p >> 32 for p in pos})


@given(positions.filter(bool), st.data())
def test_any_flipped_byte_is_detected(pos: list[int], data: st.DataObject) -> None:
    blob, _ = serialize_deletion_vector(pos)
    i = data.draw(st.integers(0, len(blob) - 1))
    bad = bytearray(blob)
    bad[i] ^= 0x01
    with pytest.raises(CorruptFileError):
        deletion_vector_positions(bytes(bad))


def test_numpy_input_and_bad_positions() -> None:
    blob, n = serialize_deletion_vector(np.array([5, 1, 5, 3], dtype=np.int32))
    assert n == 3 and deletion_vector_positions(blob).tolist() == [1, 3, 5]
    with pytest.raises(ValidationError):
        serialize_deletion_vector([-1])
    with pytest.raises(ValidationError):
        serialize_deletion_vector(np.array([0.5]))


@given(st.lists(positions, min_size=1, max_size=6))
def test_puffin_file_of_many_vectors(
    tmp_path_factory: pytest.TempPathFactory, vectors: list[list[int]]
) -> None:
    path = str(tmp_path_factory.mktemp("puffin") / "dvs-deletes.puffin")
    io = LocalFileIO()
    w = PuffinWriter(io, path)
    placed = [w.add_deletion_vector(f"s3://b/data/f{i}.parquet", v) for i, v in enumerate(vectors)]
    size = w.finish()
    assert size == Path(path).stat().st_size
    footer = read_footer(io, path)
    assert [b.type for b in footer.blobs] == [DELETION_VECTOR_BLOB_TYPE] * len(vectors)
    assert footer.properties["created-by"].startswith("icefloe")
    for i, (b, p, v) in enumerate(zip(footer.blobs, placed, vectors, strict=True)):
        assert (b.offset, b.length) == (p.offset, p.length)
        assert b.compression_codec is None and b.snapshot_id == -1 and b.sequence_number == -1
        assert b.fields == (2147483545,)
        assert b.properties == {
            "referenced-data-file": f"s3://b/data/f{i}.parquet",
            "cardinality": str(len(set(v))),
        }
        got = deletion_vector_positions(read_blob(io, path, p.offset, p.length))
        assert got.tolist() == sorted(set(v))


def test_one_vector_per_data_file_per_puffin(tmp_path: Path) -> None:
    w = PuffinWriter(LocalFileIO(), str(tmp_path / "x.puffin"))
    w.add_deletion_vector("f.parquet", [1])
    with pytest.raises(ValidationError, match="at most one deletion vector"):
        w.add_deletion_vector("f.parquet", [2])
