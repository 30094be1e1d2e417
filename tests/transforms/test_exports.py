"""The transforms package exports what the architecture promises, and nothing is missing."""

from __future__ import annotations

import icefloe.spec.partition as partition
import icefloe.transforms as transforms


def test_all_names_exist() -> None:
    for module in (transforms, partition):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_contract_names() -> None:
    expected = {
        "Transform",
        "IdentityTransform",
        "BucketTransform",
        "TruncateTransform",
        "YearTransform",
        "MonthTransform",
        "DayTransform",
        "HourTransform",
        "VoidTransform",
        "bucket_hash",
        "parse_transform",
    }
    assert expected <= set(transforms.__all__)
    assert {"PartitionField", "PartitionSpec", "UNPARTITIONED_SPEC", "build_partition_spec"} <= set(
        partition.__all__
    )
