"""The public API is explicit: everything in ``icefloe.__all__`` exists, and the names users'
scripts rely on are exported."""

from __future__ import annotations

import icefloe


def test_all_names_exist() -> None:
    for name in icefloe.__all__:
        assert hasattr(icefloe, name), name


def test_public_names_are_exported() -> None:
    public = {n for n in dir(icefloe) if not n.startswith("_")}
    modules = {
        "arrow",
        "catalog",
        "errors",
        "expressions",
        "io",
        "maintenance",
        "manifest",
        "scan",
        "spec",
        "table",
        "transaction",
        "transforms",
        "testing",
        "cli",
        "spark",
        "rest",
    }
    assert public - modules - set(icefloe.__all__) == set()


def test_every_error_derives_from_the_root() -> None:
    for name in icefloe.errors.__all__:
        assert issubclass(getattr(icefloe.errors, name), icefloe.IcefloeError), name
