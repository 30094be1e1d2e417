"""Exact conversions between ``Decimal`` values and their unscaled integers.

``Decimal`` arithmetic rounds to the context precision (28 digits by default), which is less than
Iceberg's 38; these helpers work on the digit tuples so that nothing is ever rounded.
"""

from __future__ import annotations

from decimal import Decimal

from icefloe.errors import ValidationError


def unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` digits after the point."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValidationError(f"decimal value {value} is not finite")
    n = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        n *= 10**shift
    else:
        n, rest = divmod(n, int(10 ** (-shift)))
        if rest:
            raise ValidationError(
                f"decimal value {value} has more than {scale} digits after the point",
                hint="round the value to the column's scale first",
            )
    return -n if sign else n


def from_unscaled(n: int, scale: int) -> Decimal:
    """The ``Decimal`` with unscaled value ``n`` and exactly ``scale`` fraction digits."""
    return Decimal((1 if n < 0 else 0, tuple(int(c) for c in str(abs(n))), -scale))


def min_twos_complement(n: int) -> bytes:
    """Minimum-length big-endian two's complement bytes of ``n`` (Java's
    ``BigInteger.toByteArray``); zero is one byte."""
    length = (n if n >= 0 else ~n).bit_length() // 8 + 1
    return n.to_bytes(length, "big", signed=True)
