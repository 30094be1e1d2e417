"""``./run demo`` on the deployments of docs/catalogs.md, with the Arrow engine at a tiny scale:
tables on S3 (SeaweedFS) configured the way a user does it (the ``demo`` catalog's environment
variables, as ``scripts/seaweedfs.sh env`` prints them), and a REST catalog that vends the store's
credentials to a demo that knows nothing of the store. The Spark engine on S3 with PostgreSQL:
tests/spark/test_demo_spark.py."""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import icefloe
from icefloe.cli.demo import _storage_tip, main
from icefloe.testing.seaweedfs import catalog_environment

pytestmark = pytest.mark.s3


def _require_tpchgen() -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed")


def test_demo_on_s3_configured_from_the_environment(
    tmp_path: Path, seaweedfs_server: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _require_tpchgen()
    for key, value in catalog_environment(seaweedfs_server.file_io_properties(), "demo").items():
        monkeypatch.setenv(key, value)
    warehouse = seaweedfs_server.warehouse(f"demo-{uuid.uuid4().hex[:8]}")
    args = ["--engine", "arrow", "--workdir", str(tmp_path), "--scale", "0.005", "--warehouse", warehouse]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "matches Q6 computed directly on the source Parquet" in out
    assert f"warehouse: {warehouse}" in out
    with icefloe.load_catalog("demo", uri=f"sqlite:///{tmp_path / 'catalog.db'}") as cat:
        assert cat.load_table("tpch.lineitem").metadata_location.startswith(f"{warehouse}/tpch/lineitem/")
    assert _storage_tip({"warehouse": warehouse}) is None  # the endpoint comes from the environment


def test_storage_tip_names_the_missing_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ICEFLOE_CATALOG__DEMO__S3__ENDPOINT", raising=False)
    tip = _storage_tip({"warehouse": "s3://bucket/demo"})
    assert tip is not None and "s3.endpoint" in tip and "scripts/seaweedfs.sh env" in tip
    assert _storage_tip({"warehouse": "file:///tmp/wh"}) is None


def test_demo_through_a_rest_catalog_that_vends_credentials(
    tmp_path: Path, seaweedfs_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _require_tpchgen()
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.rest import RestServer

    warehouse = seaweedfs_server.warehouse(f"rest-demo-{uuid.uuid4().hex[:8]}")
    backing = SqlCatalog(
        "demo",
        uri=f"sqlite:///{tmp_path / 'server.db'}",
        warehouse=warehouse,
        **seaweedfs_server.file_io_properties(),
    )
    with RestServer(backing, tokens=["demo-token"], vend_credentials=True) as server:
        args = ["--engine", "arrow", "--workdir", str(tmp_path / "work"), "--scale", "0.005"]
        assert main([*args, "--catalog-uri", server.url, "-p", "token=demo-token"]) == 0
    out = capsys.readouterr().out
    assert "matches Q6 computed directly on the source Parquet" in out
    assert "warehouse: (chosen by the REST catalog)" in out
    assert backing.load_table("tpch.lineitem").location == f"{warehouse}/tpch/lineitem"
    assert not (tmp_path / "work" / "catalog.db").exists()
    backing.close()
