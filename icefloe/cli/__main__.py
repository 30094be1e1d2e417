"""``python -m icefloe.cli demo [...]``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(
            "usage: python -m icefloe.cli demo [--engine spark|arrow] [--scale SF] [--workdir DIR] "
            "[--master URL] [--keep]\n"
            "  demo   TPC-H into partitioned Iceberg tables through Spark (default) or Arrow: ingest,\n"
            "         queries, a late batch into old partitions, time travel"
        )
        return 0 if args else 2
    if args[0] == "demo":
        from icefloe.cli.demo import main as demo_main

        return demo_main(args[1:])
    print(f"unknown command {args[0]!r}; try: demo", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
