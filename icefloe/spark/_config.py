"""Which catalog a Spark read or write uses, and with which properties.

Highest precedence first:

1. data source options: ``catalog`` (the catalog name, ``default`` when absent) and
   ``catalog.<property>`` (``.option("catalog.uri", "sqlite:///...")``);
2. Spark conf ``spark.icefloe.catalog.<name>.<property>``, read on the driver when
   :func:`icefloe.spark.register` or :func:`icefloe.spark.read` runs (Python data sources run in
   worker processes that cannot see the session conf, so it is captured at registration);
3. icefloe's usual configuration: ``ICEFLOE_CATALOG__<NAME>__<PROPERTY>`` environment variables,
   then ``~/.icefloe.yaml`` (see :mod:`icefloe.catalog`).

Only the driver talks to the catalog; executors get the table's FileIO properties.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from icefloe.catalog import load_catalog
from icefloe.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog import Catalog

__all__ = ["SPARK_CONF_PREFIX", "catalog_from_options", "spark_catalog_conf"]

SPARK_CONF_PREFIX = "spark.icefloe.catalog."
CATALOG_OPTION = "catalog"


def spark_catalog_conf(spark: SparkSession) -> dict[str, dict[str, str]]:
    """``spark.icefloe.catalog.<name>.<property>`` entries of the session, per catalog name."""
    out: dict[str, dict[str, str]] = {}
    for key, value in spark.sparkContext.getConf().getAll():
        _add_conf(out, key, value)
    # Session-level settings (spark.conf.set) are not in the SparkContext's conf.
    try:
        session_conf = spark.conf.getAll
    except AttributeError:  # pragma: no cover - older PySpark
        return out
    for key, value in session_conf.items():
        _add_conf(out, key, value)
    return out


def _add_conf(out: dict[str, dict[str, str]], key: str, value: str) -> None:
    if not key.startswith(SPARK_CONF_PREFIX):
        return
    rest = key[len(SPARK_CONF_PREFIX) :]
    name, _, prop = rest.partition(".")
    if name and prop:
        out.setdefault(name, {})[prop] = value


def catalog_name_and_properties(
    options: Mapping[str, str], spark_conf: Mapping[str, Mapping[str, str]]
) -> tuple[str, dict[str, str]]:
    name = options.get(CATALOG_OPTION) or "default"
    props = dict(spark_conf.get(name, {}))
    prefix = CATALOG_OPTION + "."
    for key, value in options.items():
        if key.lower().startswith(prefix):
            props[key[len(prefix) :]] = value
    return name, props


def catalog_from_options(options: Mapping[str, str], spark_conf: Mapping[str, Mapping[str, str]]) -> Catalog:
    name, props = catalog_name_and_properties(options, spark_conf)
    try:
        return load_catalog(name, **props)
    except ConfigError as e:
        raise ConfigError(
            e.message,
            hint=(e.hint + "\n" if e.hint else "")
            + f"from Spark: .option('catalog.uri', ...) or spark conf {SPARK_CONF_PREFIX}{name}.uri",
            **e.context,
        ) from None
