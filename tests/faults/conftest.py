"""Template tables for the fault-injection tests: tiny, partitioned, saved once per session and
restored before every trial (fault_harness.py)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_harness import IDENT, SCHEMA, Template, rows, save_template

from icefloe.catalog.memory import InMemoryCatalog


def _modes(mode: str) -> dict[str, str]:
    return {f"write.{op}.mode": mode for op in ("delete", "update", "merge")}


def _build(name: str, root: Path) -> Template:
    warehouse = root / name / "warehouse"
    warehouse.mkdir(parents=True)
    cat = InMemoryCatalog("build", warehouse=str(warehouse))
    cat.create_namespace("ns")
    mode = "merge-on-read" if name.startswith("mor") else "copy-on-write"
    props = {**_modes(mode), "format-version": "3" if name == "mor-v3" else "2"}
    if name == "cow-dac":
        props |= {
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "1",
        }
    t = cat.create_table(IDENT, schema=SCHEMA, partition_by=["cat"], properties=props)
    t.append(rows(1, 2, 3, 4))
    t.append(rows(5, 6, 7, 8))
    t.delete("id = 1" if name.startswith("mor") else "id = 2")
    if name == "orphan":
        old = time.time() - 3600
        for stray in ("data/cat=a/stray.parquet", "metadata/stray.avro", "stray.txt"):
            p = Path(t.location) / stray
            p.write_bytes(b"left behind by a killed writer")
            os.utime(p, (old, old))
    return save_template(name, t, str(root / name / "saved"), str(warehouse))


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("fault-templates")
    return {name: _build(name, root) for name in ("cow", "cow-dac", "mor", "mor-v3", "orphan")}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from fault_harness import RESULTS

    if not RESULTS:
        return
    tr = terminalreporter
    tr.section("fault injection")
    for f in RESULTS:
        kinds = ", ".join(f"{k} {v}" for k, v in f.trials.items())
        tr.write_line(
            f"{f.operation:44} calls io {f.io_calls:3} catalog {f.catalog_calls}: "
            f"{f.total:4} trials ({kinds}); {len(f.failures)} failed"
        )
    total = sum(f.total for f in RESULTS)
    failed = sum(len(f.failures) for f in RESULTS)
    tr.write_line(f"{len(RESULTS)} operations, {total} trials, {failed} failed checks")
