"""What every command shares: the catalog chosen by the global options, the output mode, and the
consoles (stdout for results, stderr for progress and errors)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from icefloe.errors import ConfigError

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress

    from icefloe._progress import Progress
    from icefloe.catalog import Catalog
    from icefloe.table import Table

__all__ = ["State", "json_option", "parse_key_values", "pass_state"]


def parse_key_values(items: tuple[str, ...] | list[str], what: str) -> dict[str, str]:
    """``("a=1", "b.c=x")`` -> ``{"a": "1", "b.c": "x"}``; ConfigError on an item without ``=``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid {what} {item!r}", hint=f"write {what} KEY=VALUE")
        out[key.strip()] = value
    return out


@dataclass
class State:
    catalog_name: str | None = None
    uri: str | None = None
    warehouse: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    json: bool = False
    debug: bool = False
    _catalog: Catalog | None = None

    # ------------------------------------------------------------------ catalog
    def catalog_properties(self) -> dict[str, str]:
        """The properties the global options give (highest precedence over file and environment)."""
        props = dict(self.properties)
        if self.uri is not None:
            props["uri"] = self.uri
        if self.warehouse is not None:
            props["warehouse"] = self.warehouse
        return props

    def catalog(self) -> Catalog:
        if self._catalog is None:
            from icefloe.catalog import load_catalog

            try:
                self._catalog = load_catalog(self.catalog_name, **self.catalog_properties())
            except ConfigError as e:
                raise ConfigError(
                    e.message,
                    hint=(e.hint + "\n" if e.hint else "")
                    + "or pass the catalog on the command line: icefloe --uri sqlite:///catalog.db "
                    "--warehouse file:///path/to/warehouse COMMAND",
                    **e.context,
                ) from None
            ctx = click.get_current_context(silent=True)
            if ctx is not None:
                ctx.call_on_close(self._catalog.close)
        return self._catalog

    def table(self, identifier: str) -> Table:
        return self.catalog().load_table(identifier)

    # ------------------------------------------------------------------ output
    @property
    def out(self) -> Console:
        # made per call: click's test runner swaps sys.stdout between invocations
        return Console(file=sys.stdout, soft_wrap=False, highlight=False, width=_width(sys.stdout))

    @property
    def err(self) -> Console:
        return Console(file=sys.stderr, soft_wrap=True, highlight=False, width=_width(sys.stderr))

    def interactive(self) -> bool:
        """Progress bars and spinners only for people at a terminal, never around JSON."""
        return not self.json and self.err.is_terminal

    @contextmanager
    def status(self, message: str) -> Iterator[None]:
        """A spinner on stderr while a step runs (nothing when not at a terminal)."""
        if not self.interactive():
            yield
            return
        with self.err.status(message):
            yield

    @contextmanager
    def progress(self, description: str) -> Iterator[Any]:
        """A rich progress bar on stderr fed by icefloe's ``progress=`` callbacks: yields the
        callback to pass to the library (None when not at a terminal)."""
        if not self.interactive():
            yield None
            return
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        )
        with bar:
            task = bar.add_task(description, total=None, detail="")
            yield _feed(bar, task, description)


def _feed(bar: RichProgress, task: Any, description: str) -> Any:
    def callback(event: Progress) -> None:
        bar.update(
            task,
            description=f"{description}: {event.stage}",
            completed=event.done,
            total=event.total,
            detail=f"{event.done:,} {event.unit}" if event.total is None else event.unit,
        )

    return callback


def _width(stream: Any) -> int | None:
    # rich's default for a non-terminal is 80 columns; file paths and ids need more
    try:
        return None if stream.isatty() else 200
    except (AttributeError, ValueError):
        return 200


pass_state = click.make_pass_decorator(State, ensure=True)


def json_option(f: Any) -> Any:
    """``--json`` after the command, same as the global one."""

    def turn_on(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value:
            ctx.ensure_object(State).json = True

    return click.option(
        "--json", "json_flag", is_flag=True, expose_value=False, callback=turn_on, help="JSON output."
    )(f)
