"""The bucket transform: a 32-bit Murmur3 hash of the value's canonical bytes, modulo N.

Hash inputs follow the spec: int, long, date, time and timestamps hash as an 8-byte little-endian
long (so an int and a long with the same value land in the same bucket, which keeps buckets stable
across int -> long promotion); ``_ns`` timestamps hash as microseconds (floored); decimals as the
minimum-length big-endian two's complement of the unscaled value; strings as UTF-8; uuids as their
16 big-endian bytes; fixed and binary as they are.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

import mmh3

from icefloe.errors import PartitionSpecError, ValidationError
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.transforms._calendar import nanos_to_micros
from icefloe.transforms._decimal import min_twos_complement, unscaled
from icefloe.transforms.base import Transform, TransformKind, require_value

__all__ = ["BucketTransform", "bucket_hash", "hash_bytes"]

_LONG_HASHED = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)
_NANOS_HASHED = (TimestampNsType, TimestamptzNsType)
_BYTES_HASHED = (StringType, UUIDType, FixedType, BinaryType, DecimalType)
_INT32_MAX = 2**31 - 1


def hash_bytes(source_type: IcebergType, value: Any) -> bytes:
    """The bytes the spec hashes for ``value`` of ``source_type``."""
    if isinstance(source_type, _LONG_HASHED + _NANOS_HASHED):
        require_value(source_type, value, int)
        if isinstance(source_type, _NANOS_HASHED):
            value = nanos_to_micros(value)
        if not -(2**63) <= value < 2**63:
            raise ValidationError(f"value {value} is out of range for a {source_type} column")
        return struct.pack("<q", value)
    if isinstance(source_type, StringType):
        require_value(source_type, value, str)
        return str(value).encode("utf-8")
    if isinstance(source_type, UUIDType):
        require_value(source_type, value, uuid.UUID, bytes)
        return value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    if isinstance(source_type, FixedType | BinaryType):
        require_value(source_type, value, bytes, bytearray, memoryview)
        return bytes(value)
    if isinstance(source_type, DecimalType):
        require_value(source_type, value, Decimal)
        return min_twos_complement(unscaled(value, source_type.scale))
    raise PartitionSpecError(f"values of type {source_type} cannot be bucketed")


def bucket_hash(source_type: IcebergType, value: Any) -> int:
    """The spec's 32-bit Murmur3 (x86, seed 0) hash of a value, as a signed int (like Java)."""
    return int(mmh3.hash(hash_bytes(source_type, value), 0, signed=True))


@dataclass(frozen=True)
class BucketTransform(Transform):
    """``bucket[N]``: ``(murmur3(value) & 0x7FFFFFFF) % N``."""

    num_buckets: int
    kind: ClassVar[TransformKind] = TransformKind.BUCKET

    def __post_init__(self) -> None:
        n = self.num_buckets
        if isinstance(n, bool) or not isinstance(n, int) or not 0 < n <= _INT32_MAX:
            raise PartitionSpecError(
                f"invalid number of buckets {n!r}: must be an integer in 1..{_INT32_MAX}",
                hint="write bucket(16, column) with a positive bucket count",
            )

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, _LONG_HASHED + _NANOS_HASHED + _BYTES_HASHED)

    def _result_type(self, source_type: IcebergType) -> IcebergType:
        return IntegerType()

    def _apply(self, source_type: IcebergType, value: Any) -> Any:
        return (bucket_hash(source_type, value) & _INT32_MAX) % self.num_buckets

    def type_hint(self) -> str:
        return (
            "bucket works on int, long, decimal, date, time, timestamp, string, uuid, fixed and "
            "binary columns (not boolean, float or double)"
        )

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"
