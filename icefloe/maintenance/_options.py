"""The ``options`` of the maintenance actions: Iceberg Java's names, checked and typed.

Every action lists the option names it accepts (Java's ``validOptions()`` of the action, its
planner and its runner). A name it does not know, or a value that does not parse or is out of
range, raises :class:`~icefloe.errors.ConfigError` naming the option, before anything is read or
written. Values may be given as strings (as Java takes them) or as Python values.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from icefloe.errors import ConfigError

__all__ = ["ActionOptions"]

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


class ActionOptions:
    """The options given to one action, checked against the names it accepts."""

    def __init__(self, given: Mapping[str, Any] | None, valid: Collection[str], action: str) -> None:
        self.action = action
        self.values: dict[str, Any] = {}
        for key, value in (given or {}).items():
            if not isinstance(key, str):
                raise ConfigError(f"option names are strings, got {key!r}", action=action)
            self.values[key] = value
        unknown = sorted(set(self.values) - set(valid))
        if unknown:
            raise ConfigError(
                f"{action} does not know the option(s) {', '.join(repr(u) for u in unknown)}",
                hint="the options it takes (Iceberg Java's names): " + ", ".join(sorted(valid)),
                action=action,
                options=unknown,
            )

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def _bad(self, name: str, value: Any, what: str) -> ConfigError:
        return ConfigError(
            f"option {name!r} of {self.action} must be {what}, got {value!r}",
            hint=f"pass {name!r} as {what}",
            action=self.action,
            option=name,
            value=value,
        )

    def integer(self, name: str, default: int, *, minimum: int | None = None) -> int:
        value = self.values.get(name, default)
        if isinstance(value, bool):
            raise self._bad(name, value, "an integer")
        try:
            number = int(str(value).strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            raise self._bad(name, value, "an integer") from None
        if isinstance(value, float) and value != number:
            raise self._bad(name, value, "an integer")
        if minimum is not None and number < minimum:
            raise self._bad(name, value, f"an integer >= {minimum}")
        return number

    def optional_integer(self, name: str, *, minimum: int | None = None) -> int | None:
        if name not in self.values or self.values[name] is None:
            return None
        return self.integer(name, 0, minimum=minimum)

    def number(
        self, name: str, default: float, *, above: float | None = None, at_most: float | None = None
    ) -> float:
        value = self.values.get(name, default)
        if isinstance(value, bool):
            raise self._bad(name, value, "a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self._bad(name, value, "a number") from None
        if number != number:  # NaN
            raise self._bad(name, value, "a number")
        if above is not None and number <= above:
            raise self._bad(name, value, f"a number > {above:g}")
        if at_most is not None and number > at_most:
            raise self._bad(name, value, f"a number <= {at_most:g}")
        return number

    def boolean(self, name: str, default: bool) -> bool:
        value = self.values.get(name, default)
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise self._bad(name, value, "true or false")

    def choice(self, name: str, default: str, choices: Collection[str]) -> str:
        value = self.values.get(name, default)
        text = str(value).strip().lower()
        if text not in choices:
            raise self._bad(name, value, "one of " + ", ".join(sorted(choices)))
        return text
