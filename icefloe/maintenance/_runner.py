"""The contract between the maintenance planners and the engines that execute their plans.

A runner never decides what to rewrite: it gets a plan's groups and returns, per group, the files
it wrote (or the error that stopped it). Two runners implement it:

- :class:`icefloe.arrow.rewrite.ArrowRewriteRunner`: in this process, with Arrow, groups on a
  thread pool of ``max-concurrent-file-group-rewrites`` workers;
- :class:`icefloe.spark.runners.SparkRewriteRunner`: Spark tasks on the executors.

A runner yields :class:`GroupOutcome` objects as groups finish (partial progress commits while
later groups still run). Files written for a group that fails are deleted by the runner before it
reports the failure; files of a group that succeeded belong to the caller from then on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.maintenance.rewrite_data_files import RewriteDataFilesPlan, RewriteFileGroup
    from icefloe.maintenance.rewrite_manifests import RewriteManifestsPlan
    from icefloe.maintenance.rewrite_position_deletes import (
        RewritePositionDeletesGroup,
        RewritePositionDeletesPlan,
    )
    from icefloe.manifest import DataFile, ManifestFile

__all__ = ["GroupOutcome", "RewriteRunner", "delete_quietly"]

G = TypeVar("G")


@dataclass(frozen=True)
class GroupOutcome(Generic[G]):
    """What became of one group: the files written for it, or the error that stopped it."""

    group: G
    files: tuple[DataFile, ...] = ()
    error: BaseException | None = None
    #: the error as text (for errors raised on executors that could not travel back)
    error_text: str | None = field(default=None)

    @property
    def ok(self) -> bool:
        return self.error is None and self.error_text is None

    def describe_error(self) -> str:
        if self.error is not None:
            return f"{type(self.error).__name__}: {self.error}"
        return self.error_text or ""


class RewriteRunner(Protocol):
    """An engine that executes maintenance plans."""

    description: str

    def rewrite_data_groups(
        self, plan: RewriteDataFilesPlan, write_id: str
    ) -> Iterator[GroupOutcome[RewriteFileGroup]]:
        """Rewrite each group of ``plan`` (deletes applied; sorted or z-ordered as the plan's
        strategy says) into files of the group's output spec, named with ``write_id``."""

    def rewrite_position_delete_groups(
        self, plan: RewritePositionDeletesPlan, write_id: str
    ) -> Iterator[GroupOutcome[RewritePositionDeletesGroup]]:
        """Merge each group's position delete files, keeping the deletes of live data files."""

    def write_manifests(self, plan: RewriteManifestsPlan) -> list[ManifestFile]:
        """Read the plan's manifests and write their live entries clustered by partition."""


def delete_quietly(io: FileIO, paths: Sequence[str]) -> None:
    """Best-effort deletion of files icefloe wrote and will not commit (an orphan is harmless:
    orphan-file removal finds it)."""
    for p in paths:
        try:
            io.delete(p)
        except Exception:
            continue
