"""Writing Puffin files of deletion vectors (format v3); the reader is :mod:`icefloe.io.puffin`.

::

    positions (int64, any order)  -> 64-bit roaring bitmap (run-optimized)
                                  -> DV blob: length | magic D1 D3 39 64 | portable bitmap | CRC-32
    DV blobs of many data files   -> Puffin file: magic | blob ... | footer (JSON, uncompressed)

The blob's offset and size in the file become the manifest entry's ``content_offset`` and
``content_size_in_bytes`` (readers fetch a DV with one ranged read); the footer lists every blob
with the properties Iceberg Java writes (``referenced-data-file``, ``cardinality``).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from icefloe.errors import FileIOError, ValidationError
from icefloe.io.puffin import _DV_MAGIC, DELETION_VECTOR_BLOB_TYPE, PUFFIN_MAGIC

if TYPE_CHECKING:
    from icefloe.io import FileIO

__all__ = ["PuffinBlob", "PuffinWriter", "serialize_deletion_vector"]

#: the field id a DV blob's ``fields`` names: the reserved ``_pos`` column
ROW_POSITION_FIELD_ID = 2147483545
_CREATED_BY = "icefloe"
# Java's RoaringPositionBitmap keeps positions below 2^63 with 32-bit keys below 2^31 - 1.
_MAX_POSITION = ((1 << 31) - 2) << 32 | 0xFFFFFFFF


def _bitmap(positions: Iterable[int] | np.ndarray[Any, Any]) -> Any:
    import pyroaring

    arr = np.asarray(positions if isinstance(positions, np.ndarray) else list(positions))
    if arr.size == 0:
        return pyroaring.BitMap64()
    if arr.dtype.kind not in "iu":
        raise ValidationError(f"deletion vector positions must be integers, got {arr.dtype}")
    if int(arr.min()) < 0 or int(arr.max()) > _MAX_POSITION:
        raise ValidationError(
            f"deletion vector positions must be within 0..{_MAX_POSITION}",
            hint="positions are 0-based row ordinals in the data file",
        )
    bitmap = pyroaring.BitMap64(np.unique(arr.astype(np.uint64)))
    bitmap.run_optimize()
    return bitmap


def serialize_deletion_vector(positions: Iterable[int] | np.ndarray[Any, Any]) -> tuple[bytes, int]:
    """The ``deletion-vector-v1`` blob of the given row positions, and its cardinality."""
    bitmap = _bitmap(positions)
    body = _DV_MAGIC + bitmap.serialize()
    framed = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    return framed, len(bitmap)


@dataclass(frozen=True)
class PuffinBlob:
    """Where a written blob landed: ``offset`` and ``length`` within ``path``."""

    path: str
    offset: int
    length: int
    referenced_data_file: str
    cardinality: int


class PuffinWriter:
    """Collects deletion vectors and writes them as one Puffin file on :meth:`finish`.

    Nothing touches storage before ``finish`` (DV files are small: one bitmap per data file), so
    an error before it leaves no file behind."""

    def __init__(self, io: FileIO, path: str) -> None:
        self.io = io
        self.path = path
        self._parts: list[bytes] = [PUFFIN_MAGIC]
        self._offset = len(PUFFIN_MAGIC)
        self._blobs: list[dict[str, Any]] = []
        self._written: list[PuffinBlob] = []
        self._finished = False

    def __len__(self) -> int:
        return len(self._written)

    def add_deletion_vector(
        self, referenced_data_file: str, positions: Iterable[int] | np.ndarray[Any, Any]
    ) -> PuffinBlob:
        if self._finished:
            raise ValidationError(f"Puffin file {self.path} is already finished")
        if any(b.referenced_data_file == referenced_data_file for b in self._written):
            raise ValidationError(
                f"a Puffin file holds at most one deletion vector per data file ({referenced_data_file})",
                hint="merge the positions into one deletion vector",
            )
        blob, cardinality = serialize_deletion_vector(positions)
        placed = PuffinBlob(self.path, self._offset, len(blob), referenced_data_file, cardinality)
        self._parts.append(blob)
        self._offset += len(blob)
        self._blobs.append(
            {
                "type": DELETION_VECTOR_BLOB_TYPE,
                "fields": [ROW_POSITION_FIELD_ID],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": placed.offset,
                "length": placed.length,
                "properties": {
                    "referenced-data-file": referenced_data_file,
                    "cardinality": str(cardinality),
                },
            }
        )
        self._written.append(placed)
        return placed

    def finish(self) -> int:
        """Write the file; returns its size in bytes."""
        if self._finished:
            raise ValidationError(f"Puffin file {self.path} is already finished")
        self._finished = True
        payload = json.dumps(
            {"blobs": self._blobs, "properties": {"created-by": _CREATED_BY}}, separators=(",", ":")
        ).encode("utf-8")
        footer = PUFFIN_MAGIC + payload + struct.pack("<iI", len(payload), 0) + PUFFIN_MAGIC
        data = b"".join(self._parts) + footer
        try:
            with self.io.new_output(self.path).create() as out:
                out.write(data)
        except OSError as e:
            raise FileIOError(f"cannot write Puffin file {self.path}: {e}", location=self.path) from e
        return len(data)
