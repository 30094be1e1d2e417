"""The ``icefloe`` command line (``icefloe --help``; ``python -m icefloe.cli`` is the same).

This package is the only place in icefloe that prints: commands render results with rich
(tables for people, ``--json`` for scripts) and report errors as one line plus a hint.
"""
