from __future__ import annotations

import sys
from pathlib import Path

# The fuzz harness is one module next to the tests (also run as a script for the campaign).
sys.path.insert(0, str(Path(__file__).resolve().parent))
