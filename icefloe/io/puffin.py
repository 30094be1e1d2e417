"""Reading Puffin files (format v3 deletion vectors; table statistics use the same container).

::

    file    = magic "PFA1" | blob ... | footer
    footer  = magic | payload (UTF-8 JSON, or LZ4 when flag bit 0 is set) | payload size (int32 LE)
              | flags (4 bytes) | magic
    DV blob = length (uint32 BE, of magic + bitmap) | magic D1 D3 39 64
              | portable 64-bit roaring bitmap | CRC-32 (uint32 BE) of magic + bitmap

A manifest entry of a deletion vector carries the blob's ``content_offset`` and
``content_size_in_bytes``, so reading one is a single ranged read that never touches the footer.

Bytes that do not decode raise :class:`~icefloe.errors.CorruptFileError` naming the file.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icefloe.errors import CorruptFileError, InvalidMetadataError, UnsupportedFeatureError
from icefloe.io import FileIO
from icefloe.io._decode import DELETION_VECTOR, decoding

__all__ = [
    "DELETION_VECTOR_BLOB_TYPE",
    "PUFFIN_MAGIC",
    "BlobMetadata",
    "PuffinFooter",
    "deletion_vector_positions",
    "read_blob",
    "read_footer",
]

PUFFIN_MAGIC = b"PFA1"
DELETION_VECTOR_BLOB_TYPE = "deletion-vector-v1"
_DV_MAGIC = bytes.fromhex("d1d33964")
_FOOTER_TRAILER = 12  # payload size + flags + magic
_FLAG_COMPRESSED = 0x01


@dataclass(frozen=True)
class BlobMetadata:
    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PuffinFooter:
    blobs: tuple[BlobMetadata, ...]
    properties: dict[str, str]


def read_blob(io: FileIO, path: str, offset: int, length: int, file_kind: str = DELETION_VECTOR) -> bytes:
    """The ``length`` bytes at ``offset`` of the file (one ranged read)."""
    if offset < 0 or length < 0:
        raise InvalidMetadataError(f"bad blob range offset={offset} length={length} in {path}", file=path)
    with decoding(path, file_kind), io.new_input(path).open() as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise CorruptFileError.of(
            path,
            file_kind,
            f"the Puffin file ends inside the blob at offset {offset} (wanted {length} bytes)",
        )
    return data


def read_footer(io: FileIO, path: str, file_kind: str = "Puffin file") -> PuffinFooter:
    def corrupt(reason: str) -> CorruptFileError:
        return CorruptFileError.of(path, file_kind, reason)

    with decoding(path, file_kind):
        inp = io.new_input(path)
        size = len(inp)
        if size < len(PUFFIN_MAGIC) * 2 + _FOOTER_TRAILER:
            raise corrupt(f"{size} bytes is too small to be a Puffin file")
        with inp.open() as f:
            f.seek(0)
            head = f.read(4)
            f.seek(size - _FOOTER_TRAILER)
            trailer = f.read(_FOOTER_TRAILER)
            payload_size, flags = struct.unpack("<iI", trailer[:8])
            if head != PUFFIN_MAGIC or trailer[8:] != PUFFIN_MAGIC:
                raise corrupt("not a Puffin file (bad magic)")
            footer_start = size - _FOOTER_TRAILER - payload_size - 4
            if payload_size < 0 or footer_start < 4:
                raise corrupt(f"bad Puffin footer size {payload_size}")
            f.seek(footer_start)
            footer = f.read(4 + payload_size)
    if footer[:4] != PUFFIN_MAGIC:
        raise corrupt("the Puffin footer does not start with the magic")
    if flags & _FLAG_COMPRESSED:
        raise UnsupportedFeatureError(f"{path}: LZ4-compressed Puffin footers are not supported", file=path)
    try:
        obj: dict[str, Any] = json.loads(footer[4:].decode("utf-8"))
        blobs = tuple(
            BlobMetadata(
                type=b["type"],
                fields=tuple(b.get("fields", ())),
                snapshot_id=int(b["snapshot-id"]),
                sequence_number=int(b["sequence-number"]),
                offset=int(b["offset"]),
                length=int(b["length"]),
                compression_codec=b.get("compression-codec"),
                properties=dict(b.get("properties", {})),
            )
            for b in obj.get("blobs", [])
        )
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise corrupt(f"unreadable Puffin footer: {type(e).__name__}: {e}") from e
    return PuffinFooter(blobs, dict(obj.get("properties", {})))


def deletion_vector_positions(
    blob: bytes, where: str = "deletion vector", *, path: str | None = None
) -> np.ndarray[Any, Any]:
    """The deleted row positions of a ``deletion-vector-v1`` blob, sorted, as int64. A blob that
    does not decode raises :class:`CorruptFileError` (naming ``path``, the Puffin file, if given)."""
    import pyroaring

    def corrupt(reason: str) -> CorruptFileError:
        return CorruptFileError.of(path, DELETION_VECTOR, f"{where}: {reason}")

    if len(blob) < 12:
        raise corrupt(f"blob of {len(blob)} bytes is too short")
    (length,) = struct.unpack(">I", blob[:4])
    if length + 8 != len(blob):
        raise corrupt(f"length field {length} does not match the blob size {len(blob)}")
    body = blob[4 : 4 + length]
    if body[:4] != _DV_MAGIC:
        raise corrupt(f"not a deletion vector (bad magic {body[:4].hex()})")
    (crc,) = struct.unpack(">I", blob[4 + length :])
    if zlib.crc32(body) != crc:
        raise corrupt("CRC-32 mismatch, the deletion vector is corrupt")
    try:
        bitmap = pyroaring.BitMap64.deserialize(body[4:])
    except Exception as e:  # whatever the native decoder raises for bytes it cannot parse
        raise corrupt(f"unreadable roaring bitmap: {type(e).__name__}: {e}") from e
    positions = np.frombuffer(bitmap.to_array(), dtype=np.uint64)
    if len(positions) and int(positions[-1]) > np.iinfo(np.int64).max:
        raise corrupt("position beyond the int64 range")
    out: np.ndarray[Any, Any] = positions.astype(np.int64)
    return out
