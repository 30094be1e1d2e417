"""Deleting the files a maintenance action found, best-effort, with a report.

A file that is already gone counts as deleted-before (the goal is that it does not exist); any
other failure is reported and the rest go on, as Iceberg Java's actions do (``Tasks.foreach(...)
.suppressFailureWhenFinished()``). Directories are worked on in parallel and the files of one
directory one after the other: object stores serialise the directory-marker writes that a delete
triggers in one directory (see ``icefloe/catalog/_purge.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from icefloe.errors import FileIOError, IcefloeError
from icefloe.io import FileIO
from icefloe.manifest.reader import forget_manifest

__all__ = ["DeleteFailure", "DeleteOutcome", "delete_paths"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeleteFailure:
    """A file that could not be deleted, its kind and why."""

    path: str
    file_kind: str
    message: str


@dataclass
class DeleteOutcome:
    deleted: list[str] = field(default_factory=list)
    already_missing: list[str] = field(default_factory=list)
    failed: list[DeleteFailure] = field(default_factory=list)


def delete_paths(io: FileIO, paths: Iterable[str], file_kind: str, workers: int = 8) -> DeleteOutcome:
    """Delete ``paths`` (all of one kind) and report what happened to each."""
    paths = list(dict.fromkeys(paths))
    outcome = DeleteOutcome()

    def one(path: str) -> tuple[str, BaseException | None]:
        try:
            io.delete(path)
        except (IcefloeError, OSError) as e:
            return path, e
        forget_manifest(path)
        return path, None

    def directory(group: list[str]) -> list[tuple[str, BaseException | None]]:
        return [one(p) for p in group]

    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(path.rsplit("/", 1)[0], []).append(path)
    if len(groups) <= 1 or workers <= 1:
        results = directory(paths)
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(groups))) as pool:
            results = [r for done in pool.map(directory, groups.values()) for r in done]
    for path, error in results:
        if error is None:
            outcome.deleted.append(path)
        elif isinstance(error, FileNotFoundError) or (
            isinstance(error, FileIOError) and error.context.get("not_found")
        ):
            outcome.already_missing.append(path)
        else:
            message = error.message if isinstance(error, IcefloeError) else str(error)
            _log.warning("could not delete %s %s: %s", file_kind, path, message)
            outcome.failed.append(DeleteFailure(path, file_kind, message))
    return outcome
