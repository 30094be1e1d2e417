"""``python -m icefloe.cli <command>``: the ``icefloe`` command (``demo`` included)."""

from __future__ import annotations

from icefloe.cli._app import main

if __name__ == "__main__":
    raise SystemExit(main())
