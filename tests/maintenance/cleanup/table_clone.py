"""Copy a table's directory to another place with every path inside its metadata rewritten
(metadata JSON, manifest lists, manifests), so that a copy of a shared reference table can be
expired without touching the original. Data and delete files are copied as they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import fastavro


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return value


def _rewrite_avro(path: Path, old: str, new: str) -> None:
    with path.open("rb") as f:
        reader = fastavro.reader(f)
        meta = dict(reader.metadata)
        records = [_replace(r, old, new) for r in reader]
    schema = json.loads(meta["avro.schema"])
    codec = meta.get("avro.codec", "null")
    extra = {k: v for k, v in meta.items() if not k.startswith("avro.")}
    with path.open("wb") as f:
        fastavro.writer(
            f, fastavro.parse_schema(schema, _write_hint=False), records, codec=codec, metadata=extra
        )


def clone_table(source: Path, target: Path) -> None:
    """Copy the table directory ``source`` to ``target`` (both local) and rewrite ``source``'s
    path in every metadata file to ``target``'s."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".*.crc"))  # stale once rewritten
    old, new = str(source), str(target)
    for p in target.rglob("*"):
        if p.name.endswith(".metadata.json"):
            p.write_text(p.read_text().replace(old, new))
        elif p.suffix == ".avro":
            _rewrite_avro(p, old, new)
