"""Reading a transform back from its spec name (``bucket[16]``, ``day``, ...)."""

from __future__ import annotations

import re

from icefloe.errors import PartitionSpecError
from icefloe.transforms.base import Transform
from icefloe.transforms.bucket import BucketTransform
from icefloe.transforms.identity import IdentityTransform, VoidTransform
from icefloe.transforms.temporal import DayTransform, HourTransform, MonthTransform, YearTransform
from icefloe.transforms.truncate import TruncateTransform

__all__ = ["parse_transform"]

_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "void": VoidTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
}
_PARAMETERIZED = re.compile(r"(bucket|truncate)\s*\[\s*(-?\d+)\s*\]")


def parse_transform(text: str) -> Transform:
    """The transform named ``text`` in the spec's form, case-insensitively."""
    if not isinstance(text, str):
        raise PartitionSpecError(f"a transform name must be a string, got {text!r}")
    t = text.strip().lower()
    if t in _SIMPLE:
        return _SIMPLE[t]
    if m := _PARAMETERIZED.fullmatch(t):
        n = int(m.group(2))
        return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    raise PartitionSpecError(
        f"unknown transform {text!r}",
        hint="known transforms: identity, bucket[N], truncate[W], year, month, day, hour, void",
        transform=text,
    )
