"""ruff and mypy --strict are part of the suite, so CI enforces them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def test_ruff_is_clean() -> None:
    r = subprocess.run(
        [_tool("ruff"), "check", "icefloe", "tests", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    r = subprocess.run([_tool("mypy"), "icefloe"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
