"""load_catalog: YAML file < environment < keywords, and helpful errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.catalog import catalog_properties, load_catalog
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ConfigError, UnsupportedFeatureError


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No config file and no ICEFLOE_ variables unless a test adds them."""
    home = tmp_path / "home"
    home.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ICEFLOE_HOME", raising=False)
    monkeypatch.chdir(cwd)
    import os

    for key in list(os.environ):
        if key.upper().startswith("ICEFLOE_CATALOG__"):
            monkeypatch.delenv(key)
    return home


def write_yaml(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def test_merge_order(clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_yaml(
        clean_env / ".icefloe.yaml",
        "catalog:\n"
        "  prod:\n"
        "    type: sql\n"
        "    uri: sqlite:///from-file.db\n"
        "    warehouse: file:///from-file\n"
        "    s3:\n"
        "      endpoint: http://file\n"
        "    retries: 3\n"
        "    flag: true\n",
    )
    monkeypatch.setenv("ICEFLOE_CATALOG__PROD__WAREHOUSE", "file:///from-env")
    monkeypatch.setenv("ICEFLOE_CATALOG__PROD__S3__ACCESS_KEY_ID", "AKIA")
    monkeypatch.setenv("ICEFLOE_CATALOG__OTHER__URI", "sqlite:///other.db")
    props = catalog_properties("prod", uri="sqlite:///from-kwargs.db")
    assert props == {
        "type": "sql",
        "uri": "sqlite:///from-kwargs.db",
        "warehouse": "file:///from-env",
        "s3.endpoint": "http://file",
        "s3.access-key-id": "AKIA",
        "retries": "3",
        "flag": "true",
    }


def test_icefloe_home_wins_over_home(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_yaml(clean_env / ".icefloe.yaml", "catalog:\n  c:\n    type: memory\n    from: home\n")
    special = tmp_path / "special"
    special.mkdir()
    write_yaml(special / ".icefloe.yaml", "catalog:\n  c:\n    type: memory\n    from: icefloe-home\n")
    monkeypatch.setenv("ICEFLOE_HOME", str(special))
    assert catalog_properties("c")["from"] == "icefloe-home"
    monkeypatch.delenv("ICEFLOE_HOME")
    assert catalog_properties("c")["from"] == "home"


def test_cwd_file_is_last_resort(clean_env: Path) -> None:
    write_yaml(Path.cwd() / ".icefloe.yaml", "catalog:\n  c:\n    type: memory\n")
    assert catalog_properties("c") == {"type": "memory"}


def test_load_sql_from_env(clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ICEFLOE_CATALOG__MY_CAT__URI", f"sqlite:///{tmp_path / 'c.db'}")
    monkeypatch.setenv("ICEFLOE_CATALOG__MY_CAT__WAREHOUSE", (tmp_path / "wh").as_uri())
    cat = load_catalog("my-cat")
    try:
        assert isinstance(cat, SqlCatalog)  # type inferred from the uri scheme
        assert cat.name == "my-cat"
        assert cat.properties["warehouse"] == (tmp_path / "wh").as_uri()
    finally:
        cat.close()


def test_load_memory(clean_env: Path, tmp_path: Path) -> None:
    cat = load_catalog("m", type="memory", warehouse=str(tmp_path))
    assert isinstance(cat, InMemoryCatalog)
    assert cat.properties["warehouse"] == str(tmp_path)


def test_memory_default_warehouse_is_created() -> None:
    cat = InMemoryCatalog()
    assert Path(cat.properties["warehouse"]).is_dir()
    Path(cat.properties["warehouse"]).rmdir()


def test_unconfigured_catalog(clean_env: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_catalog("prod")
    assert "not configured" in str(e.value)
    assert "ICEFLOE_CATALOG__PROD__URI" in (e.value.hint or "")
    assert "type: sql" in (e.value.hint or "")


def test_type_errors(clean_env: Path) -> None:
    with pytest.raises(UnsupportedFeatureError):
        load_catalog("h", type="hive", uri="thrift://127.0.0.1:9083")
    with pytest.raises(ConfigError):
        load_catalog("r", type="rest", uri="ftp://127.0.0.1/x")
    with pytest.raises(ConfigError):
        load_catalog("x", type="nonsense")
    with pytest.raises(ConfigError):
        load_catalog("x", uri="weird://thing")
    with pytest.raises(ConfigError):
        load_catalog("x", warehouse="/tmp/wh")
    with pytest.raises(ConfigError):
        load_catalog("x", type="sql")  # no uri


def test_bad_yaml(clean_env: Path) -> None:
    write_yaml(clean_env / ".icefloe.yaml", "catalog: [unclosed\n")
    with pytest.raises(ConfigError):
        load_catalog("c")
    write_yaml(clean_env / ".icefloe.yaml", "- just\n- a list\n")
    with pytest.raises(ConfigError):
        load_catalog("c")
