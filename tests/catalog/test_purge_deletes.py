"""The delete step of a purge: each file deleted once and reported, groups in order, directories
in parallel and the files of one directory one at a time (concurrent deletes into one directory
queue up on SeaweedFS: pyarrow re-creates the parent's directory marker after every delete)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from icefloe.catalog._purge import CONTENT_FILE, PurgePlan
from icefloe.errors import FileIOError
from icefloe.io._decode import MANIFEST, TABLE_METADATA


class RecordingIO:
    """A FileIO that only deletes, recording how many deletes ran at once per directory.
    ``barrier`` makes the first delete of each directory wait for the others: it passes only
    when as many directories are deleted from at the same time."""

    def __init__(
        self,
        missing: set[str] | None = None,
        failing: set[str] | None = None,
        barrier: threading.Barrier | None = None,
    ) -> None:
        self.properties: dict[str, str] = {}
        self.missing = missing or set()
        self.failing = failing or set()
        self.barrier = barrier
        self.lock = threading.Lock()
        self.in_flight: Counter[str] = Counter()
        self.most_in_flight: Counter[str] = Counter()
        self.order: list[str] = []
        self.started: set[str] = set()

    def delete(self, location: str) -> None:
        directory = location.rsplit("/", 1)[0]
        with self.lock:
            first = directory not in self.started
            self.started.add(directory)
            self.in_flight[directory] += 1
            self.most_in_flight[directory] = max(self.most_in_flight[directory], self.in_flight[directory])
        try:
            if first and self.barrier is not None:
                self.barrier.wait()
            time.sleep(0.001)
            if location in self.missing:
                raise FileIOError(f"cannot delete {location!r}: no such file", not_found=True)
            if location in self.failing:
                raise PermissionError(f"denied: {location}")
            with self.lock:
                self.order.append(location)
        finally:
            with self.lock:
                self.in_flight[directory] -= 1

    def new_input(self, location: str) -> Any:
        raise NotImplementedError

    def new_output(self, location: str) -> Any:
        raise NotImplementedError

    def exists(self, location: str) -> bool:
        raise NotImplementedError


def files(directory: str, n: int) -> list[str]:
    return [f"s3://b/t/{directory}/f{i}" for i in range(n)]


def test_one_directory_at_a_time_and_directories_in_parallel() -> None:
    directories = [f"data/p={i}" for i in range(4)] + ["metadata"]
    io = RecordingIO(barrier=threading.Barrier(len(directories), timeout=10))
    paths = [p for d in directories for p in files(d, 10)]
    plan = PurgePlan(io, groups=[(CONTENT_FILE, paths)])
    report = plan.execute(workers=8)
    assert report.complete and report.deleted == len(paths)
    assert sorted(io.order) == sorted(paths)  # each file once
    assert set(io.most_in_flight.values()) == {1}  # never two deletes in one directory at once


def test_groups_are_deleted_in_order_and_problems_reported() -> None:
    content = files("data", 5) + files("data/p=1", 5)
    manifests = files("metadata", 6)
    gone, denied = content[1], manifests[2]
    io = RecordingIO(missing={gone}, failing={denied})
    plan = PurgePlan(io, groups=[(CONTENT_FILE, content), (MANIFEST, manifests), (TABLE_METADATA, [])])
    report = plan.execute(workers=4)
    assert report.deleted == len(content) + len(manifests) - 2 and report.already_missing == 1
    assert [(p.path, p.file_kind) for p in report.not_deleted] == [(denied, MANIFEST)]
    assert isinstance(report.not_deleted[0].error, FileIOError) and not report.complete
    last_content = max(io.order.index(p) for p in content if p != gone)
    assert all(io.order.index(p) > last_content for p in manifests if p != denied)


def test_one_worker_deletes_serially() -> None:
    io = RecordingIO()
    paths = files("a", 3) + files("b", 3)
    assert PurgePlan(io, groups=[(CONTENT_FILE, paths)]).execute(workers=1).deleted == 6
    assert io.order == paths
