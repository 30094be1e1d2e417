"""A retried transaction re-applies its actions on metadata that includes its own updates.

Regression: on a retry (the table moved, or a lost compare-and-swap) the actions were applied to
the refreshed metadata without the transaction's property changes, so e.g. a manifest list was
written under the old ``write.metadata.path``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import icefloe
from icefloe.testing import CommitFault, FaultInjectingCatalog

SCHEMA = pa.schema([("id", pa.int64())])


def test_retry_applies_the_transactions_own_property_changes(tmp_path: Path) -> None:
    inner = icefloe.load_catalog("t", type="memory", warehouse=(tmp_path / "wh").as_uri())
    catalog = FaultInjectingCatalog(inner)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", SCHEMA, properties={"commit.retry.min-wait-ms": "1"})
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    alt = (tmp_path / "alt-metadata").as_uri()

    catalog.inject(CommitFault.LOST_SWAP)
    tx = table.transaction()
    tx.set_properties(**{"write.metadata.path": alt})
    tx.append(pa.table({"id": [2]}, schema=SCHEMA))
    (snapshot,) = tx.commit()

    assert tx.stats.retries == 1
    assert snapshot.manifest_list.startswith(alt + "/")
    fresh = catalog.load_table("ns.t")
    assert fresh.properties["write.metadata.path"] == alt
    assert sorted(fresh.scan().to_arrow().column("id").to_pylist()) == [1, 2]
