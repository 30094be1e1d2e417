"""Regression tests for what the fault harness found: a stream's raw ``OSError`` during a write
(pyarrow's streams raise those, e.g. on a full disk) escaped untyped from the data file writer,
the position delete writer, the manifest writer (header write) and the manifest list writer. Each
now surfaces as `FileIOError`, the table is left as it was, and the operation then lands when
run again."""

from __future__ import annotations

from typing import Any

import pytest
from fault_harness import FaultPlan, Kind, check, clean_table, rows, rows_of, run

from icefloe.errors import FileIOError


class _FailFirstWrite(FaultPlan):
    """Fails the first stream write to a file whose location contains ``pattern``."""

    def __init__(self, pattern: str) -> None:
        super().__init__("io", 1, Kind.RAISE)
        self.pattern = pattern

    def hit(self, layer: str, what: str) -> bool:
        if not self.armed or self.fired is not None:
            return False
        if layer == "io" and what.startswith("write ") and self.pattern in what:
            self.fired = what
            return True
        return False


@pytest.mark.parametrize(
    ("template_name", "pattern", "op"),
    [
        ("cow", ".parquet", lambda t: t.append(rows(100))),
        ("cow", "-m0.avro", lambda t: t.append(rows(100))),
        ("cow", "/snap-", lambda t: t.append(rows(100))),
        ("mor", "-deletes.parquet", lambda t: t.delete("id = 3")),
    ],
    ids=["data-file", "manifest", "manifest-list", "position-deletes"],
)
def test_a_failed_stream_write_raises_file_io_error(
    templates: dict[str, Any], template_name: str, pattern: str, op: Any
) -> None:
    template = templates[template_name]
    clean, _ = run(template, op, FaultPlan("none", 0, Kind.RAISE))
    after = rows_of(clean_table(template, clean.pointer))
    plan = _FailFirstWrite(pattern)
    out, _ = run(template, op, plan)
    assert out.fired is not None
    assert isinstance(out.error, FileIOError), repr(out.error)
    assert out.pointer == template.metadata_location
    check(template, plan, out, after)
