"""``icefloe serve``: the REST catalog server of ``python -m icefloe.rest``.

The options are not written out again here: they are translated from the server's own argparse
definition (:func:`icefloe.rest._main.add_arguments`), flag for flag, and the parsed values go to
its :func:`icefloe.rest._main.run`, so both command lines always take the same options. The
global ``--uri``, ``--warehouse``, ``-p`` and ``--catalog`` fill in what ``serve`` is not given:
``icefloe --catalog prod serve`` serves the catalog ``prod`` of ``~/.icefloe.yaml``.
"""

from __future__ import annotations

import argparse
from typing import Any

import click

from icefloe.cli._state import State, pass_state

__all__ = ["COMMANDS", "server_parser"]

_CATALOG_KEYS = ("uri", "warehouse", "type")


def server_parser() -> argparse.ArgumentParser:
    from icefloe.rest._main import add_arguments

    parser = argparse.ArgumentParser(prog="icefloe serve", add_help=False)
    add_arguments(parser)
    return parser


def _click_type(action: argparse.Action) -> Any:
    if action.choices is not None:
        return click.Choice([str(c) for c in action.choices])
    if action.type in (int, float):
        return action.type
    return str


def _option(action: argparse.Action) -> click.Option:
    """One argparse option as a click option with the same flags, default, type and help."""
    decls = [*action.option_strings, action.dest]
    help_text = (action.help or "").replace("%%", "%")
    if isinstance(action, argparse._StoreTrueAction):
        return click.Option(decls, is_flag=True, default=False, help=help_text)
    if isinstance(action, argparse._AppendAction):
        return click.Option(
            decls, multiple=True, type=_click_type(action), metavar=action.metavar, help=help_text
        )
    # required options may come from the global options or the configured catalog instead
    return click.Option(
        decls,
        type=_click_type(action),
        default=None,
        metavar=action.metavar,
        show_default=False,
        help=help_text,
    )


def _serve(state: State, **given: Any) -> None:
    from icefloe._optional import require
    from icefloe.catalog import catalog_properties
    from icefloe.rest._main import run

    for module in ("fastapi", "uvicorn"):
        require(module, extra="server", feature="icefloe serve")

    parser = server_parser()
    configured: dict[str, str] = {}
    if state.catalog_name is not None:
        configured = catalog_properties(state.catalog_name)
    configured.update(state.catalog_properties())
    values: dict[str, Any] = {}
    for action in parser._actions:
        value = given.get(action.dest)
        if isinstance(action, argparse._AppendAction):
            value = list(value or ())
        if action.dest in ("uri", "warehouse") and value is None:
            value = configured.get(action.dest)
        if action.dest == "property":
            extra = [f"{k}={v}" for k, v in configured.items() if k not in _CATALOG_KEYS]
            value = extra + list(value or ())
        if action.dest == "catalog_name" and value is None and state.catalog_name is not None:
            value = state.catalog_name
        if value is None:
            if action.required:
                flag = action.option_strings[0]
                raise click.UsageError(f"missing option {flag} (or the global {flag} before 'serve')")
            value = action.default
        values[action.dest] = value
    run(argparse.Namespace(**values))


def _build() -> click.Command:
    params: list[click.Parameter] = [_option(a) for a in server_parser()._actions]

    @pass_state
    def callback(state: State, /, **given: Any) -> None:
        _serve(state, **given)

    return click.Command(
        "serve",
        callback=callback,
        params=params,
        help="Serve the catalog over the Iceberg REST protocol (the server of python -m icefloe.rest); "
        "the global --uri/--warehouse/--catalog supply what is not given here.",
        short_help="Serve the catalog over the Iceberg REST protocol.",
    )


COMMANDS = [_build()]
