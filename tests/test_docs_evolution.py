"""The examples of docs/evolution.md run, in order, in one namespace (blocks that need Spark,
marked ``# (Spark)``, are skipped), so the documentation stays correct."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "evolution.md"


def _blocks() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return [b for b in blocks if not b.lstrip().startswith("# (Spark)")]


def test_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))  # no ~/.icefloe.yaml
    blocks = _blocks()
    assert len(blocks) >= 15
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{DOC.name}[block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"example {i} of {DOC.name} failed:\n{block}") from e
    table = namespace["table"]
    names = [f.name for f in table.schema().fields]  # type: ignore[attr-defined]
    assert names[:3] == ["id", "created", "channel"]
    assert {"gift_wrap", "referrer", "batch_id", "coupon"} <= set(names)
