"""The examples of the expiry, orphan-file and metadata-file sections of docs/maintenance.md run,
in order, in one namespace (blocks that need Spark, marked ``# (Spark)``, and the signatures,
which start with ``result = table.``, are skipped)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "maintenance.md"
FIRST = "## Snapshot expiry: `expire_snapshots`"
AFTER = "## Expiry, orphans and concurrency"


def _blocks() -> list[str]:
    text = DOC.read_text()
    section = text[text.index(FIRST) : text.index(AFTER)]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return [
        b
        for b in blocks
        if not b.lstrip().startswith("# (Spark)") and not b.lstrip().startswith("result = table.")
    ]


def test_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))
    blocks = _blocks()
    assert len(blocks) == 5
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{DOC.name}[cleanup block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"example {i} of {DOC.name} failed:\n{block}") from e
