"""Typed reads of table properties (a string-to-string map in the table metadata).

A default applies only when the key is absent. A value that is present but does not parse raises
:class:`ConfigError` naming the property, as Iceberg Java's property parsing throws: a typo in
``commit.retry.num-retries`` or ``write.delete.mode`` must not silently fall back to a default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from icefloe.errors import ConfigError, IcefloeError

__all__ = [
    "COPY_ON_WRITE",
    "DATA_PLANNING_MODE",
    "DEFAULT_DISTRIBUTED_MIN_MANIFESTS",
    "DELETE_PLANNING_MODE",
    "DISTRIBUTED_MIN_MANIFESTS",
    "ISOLATION_LEVELS",
    "MERGE_ON_READ",
    "PLANNING_MODES",
    "SERIALIZABLE",
    "SNAPSHOT",
    "STATEMENT_RESTART_MAX_ATTEMPTS",
    "WRITE_MODES",
    "bool_property",
    "check_properties",
    "checked_property",
    "choice_property",
    "int_property",
]

COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
WRITE_MODES = (COPY_ON_WRITE, MERGE_ON_READ)
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"
ISOLATION_LEVELS = (SERIALIZABLE, SNAPSHOT)
#: how many times a row-level statement called on a table may run when concurrent commits
#: conflict with it (icefloe's own property; see icefloe.transaction._restart)
STATEMENT_RESTART_MAX_ATTEMPTS = "commit.statement-restart.max-attempts"
#: where Spark reads a scan's data / delete manifests (Iceberg Java's names and values):
#: ``local`` on the driver, ``distributed`` in Spark tasks, ``auto`` by the count below
DATA_PLANNING_MODE = "read.data-planning-mode"
DELETE_PLANNING_MODE = "read.delete-planning-mode"
PLANNING_MODES = ("auto", "local", "distributed")
#: icefloe's own: ``auto`` distributes when at least this many manifests survive partition-summary
#: pruning. 500: the crossover bench/spark_planning.py measured with 20 ms per file open on
#: local[2] (a wider cluster only lowers it); see docs/spark.md, "Distributed planning"
DISTRIBUTED_MIN_MANIFESTS = "read.planning.distributed-min-manifests"
DEFAULT_DISTRIBUTED_MIN_MANIFESTS = 500


def int_property(props: Mapping[str, str], key: str, default: int, *, minimum: int | None = None) -> int:
    """The integer value of ``key`` (``default`` when absent), at least ``minimum``: by default the
    minimum registered for a known property below, so reading and setting check alike."""
    if minimum is None:
        minimum = _INTS.get(key)
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(
            f"table property {key}={text!r} is not an integer", hint=f"the default is {default}", property=key
        ) from None
    if minimum is not None and value < minimum:
        raise ConfigError(
            f"table property {key}={value} is below its minimum {minimum}",
            hint=f"the default is {default}",
            property=key,
        )
    return value


def bool_property(props: Mapping[str, str], key: str, default: bool) -> bool:
    """``true`` / ``false`` (any case) for ``key``; ``default`` when absent."""
    text = props.get(key)
    if text is None:
        return default
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise ConfigError(
            f"table property {key}={text!r} is not a boolean", hint="use 'true' or 'false'", property=key
        )
    return word == "true"


def choice_property(
    props: Mapping[str, str], key: str, default: str, choices: Sequence[str], *, what: str
) -> str:
    """One of ``choices`` (compared in lower case) for ``key``; ``default`` when absent. ``what``
    names the kind of value in the error ("a write mode")."""
    text = props.get(key)
    if text is None:
        return default
    value = text.strip().lower()
    if value not in choices:
        raise ConfigError(
            f"table property {key}={text!r} is not {what}",
            hint="use " + " or ".join(repr(c) for c in choices),
            property=key,
        )
    return value


# The Iceberg table properties icefloe reads, by kind, so that a value set through icefloe is
# checked when it is set (the table keeps its old properties) rather than when it is first used.
# Other properties (and other engines' values) pass through untouched.
_INTS: dict[str, int | None] = {  # key -> minimum
    "commit.retry.num-retries": 0,
    "commit.retry.min-wait-ms": 0,
    "commit.retry.max-wait-ms": 0,
    "commit.retry.total-timeout-ms": 0,
    STATEMENT_RESTART_MAX_ATTEMPTS: 1,
    "commit.manifest.target-size-bytes": 1,
    "commit.manifest.min-count-to-merge": None,
    "write.target-file-size-bytes": 1,
    "write.parquet.row-group-size-bytes": 1,
    "write.parquet.page-size-bytes": 1,
    "write.parquet.compression-level": None,
    "write.metadata.previous-versions-max": None,
    "write.metadata.metrics.max-inferred-column-defaults": 0,
    "write.delete.target-file-size-bytes": 1,
    "read.split.target-size": 1,
    "read.split.open-file-cost": 0,
    DISTRIBUTED_MIN_MANIFESTS: 1,
    "history.expire.max-snapshot-age-ms": 0,
    "history.expire.min-snapshots-to-keep": 1,
    "history.expire.max-ref-age-ms": 0,
}
_BOOLS = frozenset(
    {
        "commit.manifest-merge.enabled",
        "gc.enabled",
        "write.metadata.delete-after-commit.enabled",
        "write.wap.enabled",
        "write.object-storage.enabled",
    }
)
_CHOICES: dict[str, tuple[tuple[str, ...], str]] = {
    **{f"write.{command}.mode": (WRITE_MODES, "a write mode") for command in ("delete", "update", "merge")},
    **{
        f"write.{command}.isolation-level": (ISOLATION_LEVELS, "an isolation level")
        for command in ("delete", "update", "merge")
    },
    "write.parquet.compression-codec": (
        ("zstd", "snappy", "gzip", "lz4", "brotli", "uncompressed", "none"),
        "a Parquet compression codec",
    ),
    "write.distribution-mode": (("none", "hash", "range"), "a distribution mode"),
    "write.format.default": (("parquet", "avro", "orc"), "a data file format"),
    DATA_PLANNING_MODE: (PLANNING_MODES, "a planning mode"),
    DELETE_PLANNING_MODE: (PLANNING_MODES, "a planning mode"),
}
#: properties whose values are metrics modes: ``none``, ``counts``, ``truncate(N)``, ``full``
_METRICS_MODES = ("write.metadata.metrics.default",)
#: per-column families ``<prefix><column name>``, by kind
_PREFIXES: dict[str, str] = {
    "write.metadata.metrics.column.": "metrics",
    "write.parquet.stats-enabled.column.": "bool",
    "write.parquet.bloom-filter-enabled.column.": "bool",
}
#: read as they are (locations): any text but an empty one
_LOCATIONS = frozenset(
    {"write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"}
)
NAME_MAPPING = "schema.name-mapping.default"


def checked_property(key: str) -> bool:
    """Whether a value of ``key`` is checked when it is set (tests list every property read)."""
    return (
        key in _INTS
        or key in _BOOLS
        or key in _CHOICES
        or key in _METRICS_MODES
        or key in _LOCATIONS
        or key == NAME_MAPPING
        or any(key.startswith(prefix) for prefix in _PREFIXES)
    )


def check_properties(updates: Mapping[str, str]) -> None:
    """Raise :class:`ConfigError` for the first known property in ``updates`` whose value does not
    parse as its kind."""
    for key, value in updates.items():
        one = {key: value}
        if key in _INTS:
            int_property(one, key, 0)
        elif key in _BOOLS:
            bool_property(one, key, False)
        elif key in _CHOICES:
            choices, what = _CHOICES[key]
            choice_property(one, key, choices[0], choices, what=what)
        elif key in _METRICS_MODES or _PREFIXES.get(_prefix(key)) == "metrics":
            _check_metrics_mode(key, value)
        elif _PREFIXES.get(_prefix(key)) == "bool":
            bool_property(one, key, False)
        elif key in _LOCATIONS and not value.strip():
            raise ConfigError(
                f"table property {key} is empty", hint="give a location, or unset it", property=key
            )
        elif key == NAME_MAPPING:
            from icefloe.arrow._name_mapping import parse_name_mapping

            try:
                parse_name_mapping(value)
            except IcefloeError as e:
                raise ConfigError(f"table property {key}: {e.message}", hint=e.hint, property=key) from None


def _prefix(key: str) -> str:
    return next((p for p in _PREFIXES if key.startswith(p)), "")


def _check_metrics_mode(key: str, value: str) -> None:
    from icefloe.arrow.metrics import parse_metrics_mode

    try:
        parse_metrics_mode(value)
    except ConfigError as e:
        raise ConfigError(f"table property {key}: {e.message}", hint=e.hint, property=key) from None
