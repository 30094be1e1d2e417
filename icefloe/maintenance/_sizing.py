"""Size-based planning shared by the data-file and the delete-file rewrites: Iceberg Java's
``SizeBasedFileRewritePlanner`` and ``BinPacking.ListPacker``, rule for rule.

::

    files of one partition ──(outside [min, max] size, or the action's own reasons)──▶ candidates
        ──(bin-pack in order: max-file-group-size-bytes, max-file-group-input-files)──▶ groups
        ──(enough files, enough content, too much content, or the action's reasons)──▶ kept groups
    per kept group: expected output files, the input split size, the writers' max file size

``rewrite-all`` keeps every file and every group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from icefloe.errors import ConfigError
from icefloe.maintenance._options import ActionOptions

__all__ = [
    "MAX_FILE_GROUP_INPUT_FILES",
    "MAX_FILE_GROUP_SIZE_BYTES",
    "MAX_FILE_SIZE_BYTES",
    "MIN_FILE_SIZE_BYTES",
    "MIN_INPUT_FILES",
    "REWRITE_ALL",
    "SIZE_OPTIONS",
    "TARGET_FILE_SIZE_BYTES",
    "SizeThresholds",
    "pack",
]

T = TypeVar("T")

TARGET_FILE_SIZE_BYTES = "target-file-size-bytes"
MIN_FILE_SIZE_BYTES = "min-file-size-bytes"
MAX_FILE_SIZE_BYTES = "max-file-size-bytes"
MIN_INPUT_FILES = "min-input-files"
REWRITE_ALL = "rewrite-all"
MAX_FILE_GROUP_SIZE_BYTES = "max-file-group-size-bytes"
MAX_FILE_GROUP_INPUT_FILES = "max-file-group-input-files"

SIZE_OPTIONS = (
    TARGET_FILE_SIZE_BYTES,
    MIN_FILE_SIZE_BYTES,
    MAX_FILE_SIZE_BYTES,
    MIN_INPUT_FILES,
    REWRITE_ALL,
    MAX_FILE_GROUP_SIZE_BYTES,
    MAX_FILE_GROUP_INPUT_FILES,
)

MIN_FILE_SIZE_DEFAULT_RATIO = 0.75
MAX_FILE_SIZE_DEFAULT_RATIO = 1.80
MIN_INPUT_FILES_DEFAULT = 5
MAX_FILE_GROUP_SIZE_BYTES_DEFAULT = 100 * 1024 * 1024 * 1024
MAX_FILE_GROUP_INPUT_FILES_DEFAULT = (1 << 63) - 1
# Java's SPLIT_OVERHEAD: added to the estimated split size so a split does not end just short of
# a file's end.
_SPLIT_OVERHEAD = 5 * 1024


@dataclass(frozen=True)
class SizeThresholds:
    """The size options of one run, checked as Java checks them."""

    target_file_size: int
    min_file_size: int
    max_file_size: int
    min_input_files: int
    rewrite_all: bool
    max_group_size: int
    max_group_files: int

    @classmethod
    def from_options(cls, options: ActionOptions, default_target: int) -> SizeThresholds:
        target = options.integer(TARGET_FILE_SIZE_BYTES, default_target, minimum=1)
        min_size = options.integer(MIN_FILE_SIZE_BYTES, int(target * MIN_FILE_SIZE_DEFAULT_RATIO), minimum=0)
        max_size = options.integer(MAX_FILE_SIZE_BYTES, int(target * MAX_FILE_SIZE_DEFAULT_RATIO))
        if not target > min_size:
            raise ConfigError(
                f"{TARGET_FILE_SIZE_BYTES!r} ({target}) must be > {MIN_FILE_SIZE_BYTES!r} ({min_size}): "
                "all new files would be smaller than the min threshold",
                hint=f"lower {MIN_FILE_SIZE_BYTES!r} or raise {TARGET_FILE_SIZE_BYTES!r}",
                option=MIN_FILE_SIZE_BYTES,
            )
        if not target < max_size:
            raise ConfigError(
                f"{TARGET_FILE_SIZE_BYTES!r} ({target}) must be < {MAX_FILE_SIZE_BYTES!r} ({max_size}): "
                "all new files would be larger than the max threshold",
                hint=f"raise {MAX_FILE_SIZE_BYTES!r} or lower {TARGET_FILE_SIZE_BYTES!r}",
                option=MAX_FILE_SIZE_BYTES,
            )
        return cls(
            target_file_size=target,
            min_file_size=min_size,
            max_file_size=max_size,
            min_input_files=options.integer(MIN_INPUT_FILES, MIN_INPUT_FILES_DEFAULT, minimum=1),
            rewrite_all=options.boolean(REWRITE_ALL, False),
            max_group_size=options.integer(
                MAX_FILE_GROUP_SIZE_BYTES, MAX_FILE_GROUP_SIZE_BYTES_DEFAULT, minimum=1
            ),
            max_group_files=options.integer(
                MAX_FILE_GROUP_INPUT_FILES, MAX_FILE_GROUP_INPUT_FILES_DEFAULT, minimum=1
            ),
        )

    # ------------------------------------------------------------------ file and group filters
    def outside_desired_size(self, size: int) -> bool:
        return size < self.min_file_size or size > self.max_file_size

    def enough_input_files(self, sizes: Sequence[int]) -> bool:
        return len(sizes) > 1 and len(sizes) >= self.min_input_files

    def enough_content(self, sizes: Sequence[int]) -> bool:
        return len(sizes) > 1 and sum(sizes) > self.target_file_size

    def too_much_content(self, sizes: Sequence[int]) -> bool:
        return sum(sizes) > self.max_file_size

    def plan_groups(
        self,
        items: Sequence[T],
        size: Callable[[T], int],
        file_reason: Callable[[T], bool],
        group_reason: Callable[[Sequence[T]], bool],
    ) -> list[list[T]]:
        """Java's ``planFileGroups``: candidate files, bin-packed, then the groups worth a rewrite.
        ``file_reason``/``group_reason`` add the action's own reasons to the size ones."""
        candidates = (
            list(items)
            if self.rewrite_all
            else [i for i in items if self.outside_desired_size(size(i)) or file_reason(i)]
        )
        groups = pack(candidates, size, self.max_group_size, self.max_group_files)
        if self.rewrite_all:
            return groups
        out = []
        for g in groups:
            sizes = [size(i) for i in g]
            if (
                self.enough_input_files(sizes)
                or self.enough_content(sizes)
                or self.too_much_content(sizes)
                or group_reason(g)
            ):
                out.append(g)
        return out

    # ------------------------------------------------------------------ output sizing
    def write_max_file_size(self) -> int:
        """The size writers roll files at: the target plus half the way to the max (a rewrite
        whose data turns out a little bigger than estimated then makes no tiny extra file)."""
        return int(self.target_file_size + (self.max_file_size - self.target_file_size) * 0.5)

    def expected_output_files(self, input_size: int) -> int:
        """Java's rule: round the number of files down when spreading the remainder keeps the
        files within 10% of the target, else keep a file for the remainder."""
        target = self.target_file_size
        if input_size < target:
            return 1
        with_remainder = -(-input_size // target)
        without_remainder = input_size // target
        avg_without = input_size // without_remainder
        if input_size % target > self.min_file_size:
            return with_remainder
        if avg_without < min(1.1 * target, float(self.write_max_file_size())):
            return without_remainder
        return with_remainder

    def input_split_size(self, input_size: int) -> int:
        """How many input bytes one writer (one Spark task) reads: the input divided by the
        expected output files, at least the target and at most the writers' max."""
        estimated = input_size // self.expected_output_files(input_size) + _SPLIT_OVERHEAD
        if estimated < self.target_file_size:
            return self.target_file_size
        return min(estimated, self.write_max_file_size())


def pack(items: Iterable[T], weight: Callable[[T], int], target: int, max_items: int) -> list[list[T]]:
    """Java's ``ListPacker(target, lookback=1, largestBinFirst=false, maxItems).pack``: items in
    order into one open bin; an item that does not fit (by weight or count) closes it."""
    groups: list[list[T]] = []
    current: list[T] = []
    current_weight = 0
    for item in items:
        w = weight(item)
        if current and current_weight + w <= target and len(current) < max_items:
            current.append(item)
            current_weight += w
            continue
        if not current and w <= target:
            current = [item]
            current_weight = w
            continue
        if current:
            groups.append(current)
        current, current_weight = [item], w
    if current:
        groups.append(current)
    return groups


def ceil_div(a: int, b: int) -> int:
    return math.ceil(a / b) if b else 0
