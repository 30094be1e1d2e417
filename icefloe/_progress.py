"""Progress reports of long operations: one small event type and one callback signature, shared
by writes (``table.append(data, progress=...)``) and maintenance
(``table.maintenance.rewrite_data_files(progress=...)``).

A callback gets a `Progress` after each step; it runs on the calling thread and should return
quickly. If it raises, the operation stops with that exception and, like any failed operation,
commits nothing. The CLI turns these events into rich progress bars; library code never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Progress", "ProgressCallback", "report", "track_batches"]


@dataclass(frozen=True)
class Progress:
    """Where an operation stands.

    ``operation`` is what runs (``"append"``, ``"rewrite_data_files"``, ...), ``stage`` the step
    within it (``"write"``, ``"commit"``, ...); ``done`` of ``total`` (None while unknown) counts
    ``unit`` (``"rows"``, ``"files"``, ``"groups"``, ``"steps"``)."""

    operation: str
    stage: str
    done: int
    total: int | None = None
    unit: str = "rows"

    @property
    def fraction(self) -> float | None:
        """``done / total`` in [0, 1], or None when the total is unknown."""
        if self.total is None:
            return None
        if self.total <= 0:
            return 1.0
        return min(1.0, self.done / self.total)

    def __str__(self) -> str:
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.operation}: {self.stage} {self.done}{of} {self.unit}"


#: what a ``progress=`` parameter takes
ProgressCallback = Callable[[Progress], Any]


def report(
    callback: ProgressCallback | None,
    operation: str,
    stage: str,
    done: int,
    total: int | None = None,
    unit: str = "steps",
) -> None:
    """Send one event to ``callback`` (nothing when it is None)."""
    if callback is not None:
        callback(Progress(operation, stage, done, total, unit))


def track_batches(data: Any, callback: ProgressCallback | None, operation: str) -> Any:
    """``data`` (Arrow input of a write) as a stream that reports the rows consumed, stage
    ``"write"``; ``data`` itself when there is no callback. The total is known for tables and
    batches, not for readers and iterables. The input is still read once, in order."""
    import pyarrow as pa

    if callback is None or not isinstance(data, Iterable | pa.Table | pa.RecordBatch):
        return data

    schema: pa.Schema | None
    total: int | None
    batches: Iterable[pa.RecordBatch]
    if isinstance(data, pa.Table):
        schema, total, batches = data.schema, data.num_rows, data.to_batches()
    elif isinstance(data, pa.RecordBatch):
        schema, total, batches = data.schema, data.num_rows, [data]
    elif isinstance(data, pa.RecordBatchReader):
        schema, total, batches = data.schema, None, data
    else:
        # an iterable of batches (or something the writer will refuse with its own error)
        schema, total, batches = None, None, data

    def counted() -> Iterator[pa.RecordBatch]:
        done = 0
        report(callback, operation, "write", 0, total, "rows")
        for batch in batches:
            yield batch
            done += getattr(batch, "num_rows", 0)
            report(callback, operation, "write", done, total, "rows")

    if schema is None:
        return counted()
    return pa.RecordBatchReader.from_batches(schema, counted())
