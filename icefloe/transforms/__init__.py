"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour and void.

Each transform works on icefloe's internal Python values (see ``icefloe.spec.types``); the
vectorized versions for Arrow arrays are in ``icefloe.arrow.transforms``.
"""

from icefloe.transforms.base import Transform, TransformKind
from icefloe.transforms.bucket import BucketTransform, bucket_hash
from icefloe.transforms.identity import IdentityTransform, VoidTransform
from icefloe.transforms.parse import parse_transform
from icefloe.transforms.temporal import (
    DayTransform,
    HourTransform,
    MonthTransform,
    TemporalTransform,
    YearTransform,
)
from icefloe.transforms.truncate import TruncateTransform

__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "TemporalTransform",
    "Transform",
    "TransformKind",
    "TruncateTransform",
    "VoidTransform",
    "YearTransform",
    "bucket_hash",
    "parse_transform",
]
