"""Catalog configuration: a YAML file, environment variables and keyword arguments, merged.

Lowest to highest precedence:

1. the first of ``$ICEFLOE_HOME/.icefloe.yaml``, ``~/.icefloe.yaml``, ``./.icefloe.yaml`` that
   exists, shaped ``catalog: {<name>: {type: sql, uri: ..., warehouse: ...}}``;
2. ``ICEFLOE_CATALOG__<NAME>__<PROPERTY>`` environment variables, where ``__`` inside the
   property becomes ``.`` and ``_`` becomes ``-`` (``ICEFLOE_CATALOG__PROD__S3__ACCESS_KEY_ID``
   sets ``s3.access-key-id`` of catalog ``prod``), the convention PyIceberg users know;
3. keyword arguments of `load_catalog`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icefloe.errors import ConfigError, UnsupportedFeatureError

if TYPE_CHECKING:
    from icefloe.catalog._base import Catalog

__all__ = ["catalog_properties", "config_file", "load_catalog"]

CONFIG_FILE_NAME = ".icefloe.yaml"
ENV_PREFIX = "ICEFLOE_CATALOG__"
DEFAULT_CATALOG = "default"

_SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "mssql", "oracle")

_EXAMPLE = (
    "configure it in ~/.icefloe.yaml:\n"
    "  catalog:\n"
    "    {name}:\n"
    "      type: sql\n"
    "      uri: sqlite:////path/to/catalog.db\n"
    "      warehouse: file:///path/to/warehouse\n"
    "or with ICEFLOE_CATALOG__{env}__URI=sqlite:////path/to/catalog.db, "
    "or load_catalog({name!r}, uri='sqlite:////path/to/catalog.db', warehouse='file:///path/to/warehouse')"
)


def _same_name(a: str, b: str) -> bool:
    return a.lower().replace("_", "-") == b.lower().replace("_", "-")


def config_file() -> Path | None:
    """The configuration file in use, if any."""
    candidates: list[Path] = []
    home = os.environ.get("ICEFLOE_HOME")
    if home:
        candidates.append(Path(home) / CONFIG_FILE_NAME)
    candidates.append(Path.home() / CONFIG_FILE_NAME)
    candidates.append(Path.cwd() / CONFIG_FILE_NAME)
    for path in candidates:
        if path.is_file():
            return path
    return None


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    """Nested YAML maps become dotted keys (``s3: {endpoint: x}`` -> ``s3.endpoint``)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif value is None:
        return
    elif isinstance(value, bool):
        out[prefix] = "true" if value else "false"
    else:
        out[prefix] = str(value)


def _from_file(name: str) -> dict[str, str]:
    path = config_file()
    if path is None:
        return {}
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read catalog configuration {path}: {e}", hint="fix the YAML syntax") from e
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise ConfigError(
            f"{path} must hold a mapping with a 'catalog' key",
            hint=_EXAMPLE.format(name=name, env=name.upper()),
        )
    catalogs = document.get("catalog", {}) or {}
    if not isinstance(catalogs, Mapping):
        raise ConfigError(f"'catalog' in {path} must be a mapping of catalog names to properties")
    section = catalogs.get(name)
    if section is None:
        section = next((v for k, v in catalogs.items() if _same_name(str(k), name)), None)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"catalog {name!r} in {path} must be a mapping of properties")
    out: dict[str, str] = {}
    _flatten("", section, out)
    return out


def _from_environment(name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in os.environ.items():
        if not key.upper().startswith(ENV_PREFIX):
            continue
        parts = key[len(ENV_PREFIX) :].split("__")
        if len(parts) < 2 or not all(parts) or not _same_name(parts[0], name):
            continue
        prop = ".".join(p.lower().replace("_", "-") for p in parts[1:])
        out[prop] = value
    return out


def catalog_properties(name: str, **properties: str) -> dict[str, str]:
    """The merged properties of catalog ``name`` (file < environment < keywords)."""
    merged = _from_file(name)
    merged.update(_from_environment(name))
    merged.update({k: str(v) for k, v in properties.items() if v is not None})
    return merged


def _catalog_type(name: str, props: Mapping[str, str]) -> str:
    kind = props.get("type")
    if kind:
        return kind.lower()
    uri = props.get("uri")
    if uri:
        scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
        if scheme in _SQL_SCHEMES:
            return "sql"
        if scheme in ("http", "https"):
            return "rest"
        raise ConfigError(
            f"cannot tell the type of catalog {name!r} from its uri {uri!r}",
            hint="set type: sql (with a SQLAlchemy URL) or type: memory",
        )
    if not props:
        raise ConfigError(
            f"catalog {name!r} is not configured",
            hint=_EXAMPLE.format(name=name, env=name.upper().replace("-", "_")),
        )
    raise ConfigError(
        f"catalog {name!r} has neither 'type' nor 'uri'",
        hint=_EXAMPLE.format(name=name, env=name.upper().replace("-", "_")),
    )


def load_catalog(name: str | None = None, **properties: str) -> Catalog:
    """Open the catalog called ``name`` (``"default"`` when omitted) from the merged
    configuration; its type comes from ``type`` (``sql``, ``rest``, ``memory``) or from the
    ``uri`` (a database URL means sql, http(s) means rest)."""
    name = name or DEFAULT_CATALOG
    props = catalog_properties(name, **properties)
    kind = _catalog_type(name, props)
    if kind == "sql":
        from icefloe.catalog.sql import SqlCatalog

        return SqlCatalog(name, **props)
    if kind in ("memory", "in-memory", "inmemory"):
        from icefloe.catalog.memory import InMemoryCatalog

        return InMemoryCatalog(name, **props)
    if kind == "rest":
        from icefloe.catalog.rest import RestCatalog

        return RestCatalog(name, **props)
    if kind in ("hive", "glue"):
        raise UnsupportedFeatureError(
            f"catalog type {kind!r} of catalog {name!r} is not supported yet",
            hint="use type: sql (SQLite or PostgreSQL, shared with PyIceberg and Iceberg Java) or type: rest",
        )
    raise ConfigError(
        f"unknown catalog type {kind!r} for catalog {name!r}", hint="use type: sql, rest or memory"
    )
