"""Progress of the demo's Spark work, on stderr: a bar of the tasks of the Spark jobs a step runs
(polled from Spark's status tracker) and of icefloe's own ``progress=`` events (file groups of a
compaction, rows of a write). Only at a terminal: stdout keeps the demo's report, and a log of
the run (stderr redirected to a file) gets no bar. Spark's own console bar stays off
(``spark.ui.showConsoleProgress=false`` in :func:`icefloe.spark.session.spark_session`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from icefloe._progress import Progress

__all__ = ["SparkProgress"]

Callback = Callable[[Progress], None]


class SparkProgress:
    """``with progress.track("compaction") as callback:`` shows a bar on stderr while the block
    runs; ``callback`` takes icefloe's progress events (None when no bar is shown)."""

    def __init__(self, spark: Any, stream: Any = None, interval_s: float = 0.25) -> None:
        self._spark = spark
        self._stream = stream if stream is not None else sys.stderr
        self._interval_s = interval_s

    def enabled(self) -> bool:
        try:
            return bool(self._stream.isatty())
        except (AttributeError, ValueError):
            return False

    @contextmanager
    def step(self, title: str) -> Iterator[Callback | None]:
        """The demo's ``==> title`` step (:func:`icefloe.cli.demo._step`) with a bar while it runs."""
        from icefloe.cli.demo import _step

        label = title.split(":")[0]
        with _step(title), self.track(label if len(label) <= 32 else label[:31] + "…") as callback:
            yield callback

    @contextmanager
    def track(self, description: str) -> Iterator[Callback | None]:
        if not self.enabled():
            yield None
            return
        from rich.console import Console
        from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        bar = Bar(
            TextColumn("    {task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=Console(file=self._stream),
            transient=True,
        )
        task = bar.add_task(description, total=None, detail="")
        stop = threading.Event()
        icefloe_detail: list[str] = []

        def poll() -> None:
            seen: dict[int, tuple[int, int]] = {}  # stage id -> (tasks, completed)
            tracker = self._spark.sparkContext.statusTracker()
            while not stop.wait(self._interval_s):
                try:
                    for stage_id in tracker.getActiveStageIds():
                        info = tracker.getStageInfo(stage_id)
                        if info is not None:
                            seen[stage_id] = (info.numTasks, info.numCompletedTasks)
                except Exception:  # the session is stopping: the bar just stops moving
                    return
                if not seen:
                    continue
                total = sum(n for n, _ in seen.values())
                done = sum(c for _, c in seen.values())
                detail = f"Spark: {len(seen)} stages, {done}/{total} tasks"
                if icefloe_detail:
                    detail += f"; {icefloe_detail[-1]}"
                bar.update(task, completed=done, total=total, detail=detail)

        def callback(event: Progress) -> None:
            of = f"/{event.total:,}" if event.total is not None else ""
            icefloe_detail.append(f"{event.operation} {event.stage} {event.done:,}{of} {event.unit}")
            bar.update(task, detail=icefloe_detail[-1])

        poller = threading.Thread(target=poll, name="icefloe-demo-progress", daemon=True)
        with bar:
            poller.start()
            try:
                yield callback
            finally:
                stop.set()
                poller.join(timeout=5)
