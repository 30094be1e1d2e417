"""Catalog resolution for Spark reads and writes, and what register() captures."""

from __future__ import annotations

from typing import Any

import pytest

import icefloe.spark
from icefloe.errors import ConfigError
from icefloe.spark._config import catalog_from_options, catalog_name_and_properties


def test_options_beat_spark_conf() -> None:
    conf = {
        "default": {"uri": "sqlite:///conf.db", "warehouse": "file:///wh"},
        "prod": {"uri": "sqlite:///prod.db"},
    }
    assert catalog_name_and_properties({}, conf) == ("default", conf["default"])
    name, props = catalog_name_and_properties({"catalog": "prod", "catalog.warehouse": "file:///p"}, conf)
    assert name == "prod" and props == {"uri": "sqlite:///prod.db", "warehouse": "file:///p"}
    _, props = catalog_name_and_properties({"catalog.uri": "sqlite:///opt.db"}, conf)
    assert props["uri"] == "sqlite:///opt.db"


def test_environment_is_the_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("ICEFLOE_HOME", str(tmp_path))  # no config file there
    monkeypatch.setenv("ICEFLOE_CATALOG__ENVCAT__TYPE", "memory")
    assert catalog_from_options({"catalog": "envcat"}, {}).name == "envcat"
    with pytest.raises(ConfigError, match=r"spark\.icefloe\.catalog\.missing\.uri"):
        catalog_from_options({"catalog": "missing"}, {})


def test_register_captures_session_settings(spark: Any) -> None:
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "DYNAMIC")
    spark.conf.set("spark.icefloe.catalog.other.uri", "sqlite:///other.db")
    try:
        registered = icefloe.spark.register(spark)
        assert registered.partition_overwrite_mode == "dynamic"
        assert registered.spark_conf["other"] == {"uri": "sqlite:///other.db"}
        assert "uri" in registered.spark_conf["default"]
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
        spark.conf.unset("spark.icefloe.catalog.other.uri")
        icefloe.spark.register(spark)
