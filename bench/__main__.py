"""``python -m bench [scenario ...] [--scale N] [--repeat K] [--out DIR]``: see bench/README.md."""

from bench._cli import main

raise SystemExit(main())
