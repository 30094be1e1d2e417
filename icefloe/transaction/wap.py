"""Write-audit-publish: staged snapshots and the rules for publishing them.

With the table property ``write.wap.enabled=true``, a write whose snapshot properties carry
``wap.id`` is *staged*: its snapshot is added to the table but no branch moves, so readers do not
see it until it is published by a cherry-pick (``manage_snapshots().cherry_pick(id)``). Publishing
records ``published-wap-id`` (or fast-forwards to the staged snapshot itself), and a wap id can be
published once (Iceberg Java's ``WapUtil`` rules)::

    write (wap.id=w1) ─▶ staged snapshot S (parent = main's head, main unchanged)
    audit: table.scan(snapshot_id=S.snapshot_id)
    publish: cherry_pick(S) ─▶ main: S itself (fast-forward) or a new snapshot with S's files
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.spec.properties import bool_property
from icefloe.spec.snapshot import MAIN_BRANCH

if TYPE_CHECKING:
    from icefloe.spec.snapshot import Snapshot
    from icefloe.spec.table_metadata import TableMetadata

__all__ = [
    "PUBLISHED_WAP_ID",
    "SOURCE_SNAPSHOT_ID",
    "STAGED_WAP_ID",
    "WAP_ENABLED",
    "is_wap_id_published",
    "published_wap_id",
    "staged_wap_id",
    "wap_staged",
]

WAP_ENABLED = "write.wap.enabled"
STAGED_WAP_ID = "wap.id"
PUBLISHED_WAP_ID = "published-wap-id"
SOURCE_SNAPSHOT_ID = "source-snapshot-id"


def wap_staged(
    table_properties: Mapping[str, str], snapshot_properties: Mapping[str, str], branch: str
) -> bool:
    """Whether a write with these snapshot properties is staged instead of committed to ``branch``."""
    if not snapshot_properties.get(STAGED_WAP_ID):
        return False
    if not bool_property(dict(table_properties), WAP_ENABLED, False):
        return False
    if branch != MAIN_BRANCH:
        raise ValidationError(
            f"a write with {STAGED_WAP_ID!r} is staged, so it cannot also go to branch {branch!r}",
            hint=f"drop the branch, or drop {STAGED_WAP_ID!r} to write to the branch directly",
            branch=branch,
        )
    return True


def staged_wap_id(snapshot: Snapshot) -> str | None:
    return snapshot.summary.get(STAGED_WAP_ID)


def published_wap_id(snapshot: Snapshot) -> str | None:
    return snapshot.summary.get(PUBLISHED_WAP_ID)


def is_wap_id_published(metadata: TableMetadata, wap_id: str) -> bool:
    """Whether a snapshot of ``main``'s history carries ``wap_id`` (staged there and fast-forwarded
    to, or published by a cherry-pick)."""
    return any(
        staged_wap_id(s) == wap_id or published_wap_id(s) == wap_id
        for s in metadata.ancestors(metadata.current_snapshot_id)
    )
