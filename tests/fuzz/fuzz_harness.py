"""Mutation fuzzing of every kind of file a table is made of (issue 15, part 4).

Formats: ``metadata`` (table metadata JSON), ``manifest_list``, ``manifest`` (Avro),
``data`` (Parquet data files), ``position_deletes``, ``equality_deletes`` (Parquet delete files)
and ``puffin`` (deletion vectors). Each case takes one file of a small table (icefloe-written v2
and v3 tables, plus Iceberg Java's reference tables when ``ICEFLOE_ORACLE_REF`` points at them),
mutates it, serves the mutated bytes through an in-memory overlay of the table's FileIO and reads
the table. Mutations, drawn from ``random.Random(f"{seed}:{format}:{case}")`` (so a case is
replayed from its number):

* bytes: bit flips, bytes overwritten, truncation, bytes inserted or removed, anywhere or near the
  end (Parquet and Puffin footers);
* JSON: fields dropped, duplicated, retyped or renamed; ids changed; references swapped between
  schemas, specs, sort orders and snapshots;
* Avro: a record's field values changed, records dropped or duplicated, field ids of the schema
  changed, re-encoded with fastavro;
* Parquet: field ids changed, footer statistics changed, a null written in a required column.

Every case ends in one outcome:

``typed``      an IcefloeError was raised (the mutation was detected)
``valid``      the read succeeded and gave what the original gave
``changed``    the read succeeded with other content that passes every consistency check
               (undetectable without checksums: e.g. a value byte flipped inside a Parquet page)
``wrong``      the read succeeded but broke a consistency check (a silently wrong read: a bug)
``untyped``    another exception escaped (a bug)
``abort``      the worker process died (native crash inside pyarrow); counted separately
``skip``       the mutation could not be encoded (e.g. a value out of its Avro type's range)

Cases run in worker subprocesses (``python tests/fuzz/fuzz_harness.py worker ...``) that are
restarted after an abort. The test suite runs a bounded slice; the full campaign::

    ICEFLOE_FUZZ=3000 .venv/bin/python tests/fuzz/fuzz_harness.py campaign

runs ``ICEFLOE_FUZZ`` cases per format (``--formats``, ``--seed``, ``--jobs`` narrow it) and
prints the counts per format and outcome, and the findings (format, case number, detail) that
replay with ``... fuzz_harness.py replay FORMAT CASE``.
"""

from __future__ import annotations

import argparse
import contextlib
import io as stdio
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

FORMATS = (
    "metadata",
    "manifest_list",
    "manifest",
    "data",
    "position_deletes",
    "equality_deletes",
    "puffin",
)
OUTCOMES = ("typed", "valid", "changed", "wrong", "untyped", "abort", "skip")
BAD = ("wrong", "untyped")

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


# =============================================================================== byte mutations


def mutate_bytes(rng: random.Random, data: bytes, tail: int | None = None) -> tuple[str, bytes]:
    """One byte-level mutation of ``data``; with ``tail``, aimed at its last ``tail`` bytes."""
    out = bytearray(data)
    n = len(out)
    if n == 0:
        return "insert", bytes([rng.randrange(256)])
    lo = max(0, n - tail) if tail else 0

    def pos() -> int:
        return rng.randrange(lo, n)

    kind = rng.choice(("flip", "flip", "set", "truncate", "insert", "remove"))
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            out[pos()] ^= 1 << rng.randrange(8)
    elif kind == "set":
        for _ in range(rng.randint(1, 8)):
            out[pos()] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
    elif kind == "truncate":
        del out[pos() :]
    elif kind == "insert":
        at = pos()
        out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:
        at = pos()
        del out[at : at + rng.randint(1, 16)]
    return kind, bytes(out)


# =============================================================================== JSON mutations

_REFERENCE_KEYS = {
    "current-schema-id": "schema",
    "schema-id": "schema",
    "default-spec-id": "spec",
    "spec-id": "spec",
    "default-sort-order-id": "order",
    "order-id": "order",
    "current-snapshot-id": "snapshot",
    "snapshot-id": "snapshot",
    "parent-snapshot-id": "snapshot",
    "source-id": "field",
    "id": "field",
    "element-id": "field",
    "key-id": "field",
    "value-id": "field",
    "last-column-id": "field",
    "field-id": "partition",
    "last-partition-id": "partition",
    "sequence-number": "seq",
    "last-sequence-number": "seq",
}


def _nodes(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, Any, tuple[Any, ...]]]:
    """(container, key, path) of every value under ``obj``."""
    if isinstance(obj, dict):
        for k in list(obj):
            yield obj, k, (*path, k)
            yield from _nodes(obj[k], (*path, k))
    elif isinstance(obj, list):
        for i in range(len(obj)):
            yield obj, i, (*path, i)
            yield from _nodes(obj[i], (*path, i))


def _id_pools(doc: Any) -> dict[str, list[int]]:
    pools: dict[str, set[int]] = {
        k: set() for k in ("schema", "spec", "order", "snapshot", "field", "partition", "seq")
    }
    for container, key, _ in _nodes(doc):
        v = container[key]
        if isinstance(key, str) and key in _REFERENCE_KEYS and isinstance(v, int) and not isinstance(v, bool):
            pools[_REFERENCE_KEYS[key]].add(v)
    return {k: sorted(v) for k, v in pools.items()}


def _other_value(rng: random.Random, v: Any) -> Any:
    choices: list[Any] = [
        None,
        True,
        False,
        "",
        "x",
        "null",
        -1,
        0,
        1,
        2**31,
        2**63,
        -(2**63) - 1,
        1.5,
        [],
        {},
    ]
    if isinstance(v, (int, str, list, dict)) and not isinstance(v, bool):
        choices = [c for c in choices if type(c) is not type(v)]
    return rng.choice(choices)


def mutate_json(rng: random.Random, doc: Any) -> str:
    """One structural mutation of ``doc`` (in place); returns its name."""
    nodes = list(_nodes(doc))
    pools = _id_pools(doc)
    refs = [(c, k) for c, k, _ in nodes if isinstance(k, str) and k in _REFERENCE_KEYS]
    kind = rng.choice(("drop", "duplicate", "retype", "rename", "change_id", "swap_ref", "swap_ref"))
    if kind in ("change_id", "swap_ref") and refs:
        container, key = rng.choice(refs)
        old = container[key]
        if kind == "change_id" or not isinstance(old, int):
            container[key] = rng.choice(
                (-1, 0, 1, 2, 999, 1000, 1001, 2**31 - 1, (old + 1) if isinstance(old, int) else 3)
            )
        else:
            pool = (
                [i for p in pools.values() for i in p] if rng.random() < 0.3 else pools[_REFERENCE_KEYS[key]]
            )
            others = [i for i in pool if i != old]
            container[key] = rng.choice(others) if others else old + 1
        return f"{kind}:{key}"
    if not nodes:
        return "noop"
    container, key, path = rng.choice(nodes)
    tag = "/".join(str(p) for p in path[-3:])
    if kind == "drop":
        del container[key]
    elif kind == "duplicate":
        if isinstance(container, list):
            container.insert(key, json.loads(json.dumps(container[key])))
        else:
            others = [k for k in container if k != key]
            if others:
                container[rng.choice(others)] = json.loads(json.dumps(container[key]))
    elif kind == "retype":
        container[key] = _other_value(rng, container[key])
    elif kind == "rename" and isinstance(container, dict):
        value = container.pop(key)
        new = rng.choice(
            (key.upper(), key + "x", key.replace("-", "_"), "", rng.choice(list(_REFERENCE_KEYS)))
        )
        container[new] = value
    else:
        container[key] = _other_value(rng, container[key])
    return f"{kind}:{tag}"


# =============================================================================== Avro mutations


def _avro_leaves(rec: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, Any]]:
    if isinstance(rec, dict):
        for k, v in rec.items():
            yield rec, k
            yield from _avro_leaves(v, (*path, k))
    elif isinstance(rec, list):
        for i, v in enumerate(rec):
            yield rec, i
            yield from _avro_leaves(v, (*path, i))


def _same_type_value(rng: random.Random, v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return rng.choice(
            (
                0,
                -1,
                1,
                v + 1,
                v - 1,
                -v,
                2**31 - 1,
                -(2**31),
                2**63 - 1,
                -(2**63),
                rng.randrange(-(2**40), 2**40),
            )
        )
    if isinstance(v, float):
        return rng.choice((float("nan"), float("inf"), -v, 0.0))
    if isinstance(v, str):
        return rng.choice(("", v[:-1], v + "x", "s3://elsewhere/x.parquet", v.upper(), "\u00e9"))
    if isinstance(v, bytes):
        return rng.choice((b"", v[:-1], v + b"\x00", bytes(rng.randrange(256) for _ in range(len(v) or 1))))
    if isinstance(v, list):
        if v and rng.random() < 0.5:
            out = list(v)
            del out[rng.randrange(len(out))]
            return out
        return [*v, v[0]] if v else v
    return v


def mutate_avro(rng: random.Random, data: bytes) -> tuple[str, bytes | None]:
    """Decode ``data`` with fastavro, change one thing, encode it again (None: not encodable)."""
    import fastavro

    reader = fastavro.reader(stdio.BytesIO(data))
    schema_json = json.loads(reader.metadata["avro.schema"])
    codec = reader.codec
    user_meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    records = list(reader)
    kind = rng.choice(("value", "value", "value", "null", "drop_record", "dup_record", "field_id", "meta"))
    tag = kind
    if kind in ("value", "null") and records:
        rec = rng.choice(records)
        leaves = list(_avro_leaves(rec))
        if not leaves:
            return "noop", None
        container, key = rng.choice(leaves)
        tag = f"{kind}:{key}"
        container[key] = None if kind == "null" else _same_type_value(rng, container[key])
    elif kind == "drop_record" and records:
        del records[rng.randrange(len(records))]
    elif kind == "dup_record" and records:
        records.append(records[rng.randrange(len(records))])
    elif kind == "field_id":
        ids = [
            (c, k) for c, k, _ in _nodes(schema_json) if k in ("field-id", "element-id", "key-id", "value-id")
        ]
        if not ids:
            return "noop", None
        container, key = rng.choice(ids)
        container[key] = rng.choice((0, -1, 999999, container[key] + 1, 100, 500, 102))
        tag = f"field_id:{container.get('name', key)}"
    elif kind == "meta" and user_meta:
        key = rng.choice(sorted(user_meta))
        user_meta[key] = rng.choice(("", "x", "99", "-1", "{}", "[]", '{"type":"struct","fields":[]}'))
        tag = f"meta:{key}"
    try:
        out = stdio.BytesIO()
        fastavro.writer(out, fastavro.parse_schema(schema_json), records, codec=codec, metadata=user_meta)
    except Exception:  # the changed value does not fit its type: not a case
        return tag, None
    return tag, out.getvalue()


# =============================================================================== Parquet mutations


def _footer_len(data: bytes) -> int:
    if len(data) < 12 or data[-4:] != b"PAR1":
        return 0
    return struct.unpack("<I", data[-8:-4])[0] + 8


def mutate_parquet_structure(rng: random.Random, data: bytes) -> tuple[str, bytes | None]:
    """Rewrite the file with pyarrow with a field id changed or a null in a required column, or
    change the statistics bytes of the footer in place."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(stdio.BytesIO(data))
    kind = rng.choice(("field_id", "null_required", "stats"))
    if kind == "stats":
        meta = pf.metadata
        footer = _footer_len(data)
        start = len(data) - footer
        out = bytearray(data)
        targets = []
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                st = meta.row_group(g).column(c).statistics
                if st is None or not st.has_min_max:
                    continue
                v = rng.choice((st.min, st.max))
                if isinstance(v, int) and st.physical_type == "INT64":
                    targets.append(struct.pack("<q", v))
                elif isinstance(v, int) and st.physical_type == "INT32":
                    targets.append(struct.pack("<i", v))
                elif isinstance(v, (str, bytes)):
                    targets.append(v.encode() if isinstance(v, str) else bytes(v))
        rng.shuffle(targets)
        for t in targets:
            at = bytes(out).find(t, start) if t else -1
            if at >= 0:
                out[at : at + len(t)] = bytes(rng.randrange(256) for _ in t)
                return "stats", bytes(out)
        return "stats", None
    table = pf.read()
    compression = pf.metadata.row_group(0).column(0).compression if pf.metadata.num_row_groups else "NONE"
    fields = list(table.schema)
    i = rng.randrange(len(fields))
    f = fields[i]
    if kind == "field_id":
        ids = [int((g.metadata or {}).get(b"PARQUET:field_id", b"0")) for g in fields]
        new_id = rng.choice([*ids, -1, 0, 999, max(ids) + 1])
        meta_ = dict(f.metadata or {})
        if rng.random() < 0.2:
            meta_.pop(b"PARQUET:field_id", None)
        else:
            meta_[b"PARQUET:field_id"] = str(new_id).encode()
        fields[i] = f.with_metadata(meta_)
        table = table.cast(pa.schema(fields, metadata=table.schema.metadata))
        tag = f"field_id:{f.name}"
    else:
        if table.num_rows == 0:
            return kind, None
        col = table.column(i).to_pylist()
        col[rng.randrange(len(col))] = None
        fields[i] = f.with_nullable(True)
        arrays = [pa.array(col, f.type) if j == i else table.column(j) for j in range(len(fields))]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=table.schema.metadata))
        tag = f"null:{f.name}"
    out_buf = stdio.BytesIO()
    pq.write_table(
        table, out_buf, compression=compression.lower() if compression != "UNCOMPRESSED" else "none"
    )
    return tag, out_buf.getvalue()


# =============================================================================== the corpus


def build_corpus(root: Path, ref_tables: Path | None) -> Path:
    """Two icefloe tables (v2 with position and equality deletes, v3 with a deletion vector and
    equality deletes; both partitioned, with a tag, a sort order and two schemas) and the
    reference tables of Iceberg Java under ``ref_tables``. Returns the corpus description."""
    import pyarrow as pa

    import icefloe
    from icefloe.arrow.deletes import write_equality_deletes

    root.mkdir(parents=True, exist_ok=True)
    cat = icefloe.load_catalog("fuzz", type="memory", warehouse=root.as_uri())
    cat.create_namespace("db")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("part", pa.string()),
            pa.field("s", pa.string()),
        ]
    )

    def rows(ids: range, part: str) -> pa.Table:
        return pa.table(
            {"id": pa.array(ids, pa.int64()), "part": [part] * len(ids), "s": [f"v{i}" for i in ids]},
            schema=schema,
        )

    tables = []
    for version in ("2", "3"):
        ident = ("db", f"ice_v{version}")
        t = cat.create_table(
            ident,
            schema,
            partition_by=["part"],
            properties={"format-version": version, "write.delete.mode": "merge-on-read"},
        )
        t.append(rows(range(50), "a"))
        t.append(rows(range(100, 150), "b"))
        t = cat.load_table(ident)
        t.replace_sort_order().asc("id").commit()
        t = cat.load_table(ident)
        t.delete("id = 5 or id = 6")
        t = cat.load_table(ident)
        eq = write_equality_deletes(
            t.io, t.metadata, pa.table({"id": pa.array([7], pa.int64())}), ["id"], partition=("a",)
        )
        with t.transaction() as tx:
            tx.row_delta(add_delete_files=eq)
        t = cat.load_table(ident)
        snapshot = t.current_snapshot()
        assert snapshot is not None
        t.manage_snapshots().create_tag("tag1", snapshot.snapshot_id).commit()
        t = cat.load_table(ident)
        t.update_schema().add_column("extra", "int").commit()
        t = cat.load_table(ident)
        tables.append({"name": ".".join(ident), "metadata_location": t.metadata_location})
    if ref_tables is not None and (ref_tables / "index.json").exists():
        index = json.loads((ref_tables / "index.json").read_text())
        wanted = {
            "ref.mor_v3_dv",
            "ref.mor_v2",
            "ref.partition_evolution",
            "ref.schema_evolution",
            "ref.snapshots_refs",
            "ref.types_v2",
            "ref.simple_v1",
        }
        for entry in index["tables"]:
            if (
                entry["catalog_kind"] == "hadoop"
                and entry["table"] in wanted
                and Path(entry["metadata_location"]).exists()
            ):
                tables.append(
                    {"name": f"java.{entry['table']}", "metadata_location": entry["metadata_location"]}
                )
    description = root / "corpus.json"
    description.write_text(json.dumps({"tables": tables}, indent=1))
    return description


# =============================================================================== the overlay FileIO


class _MemoryInput:
    def __init__(self, location: str, data: bytes) -> None:
        self.location = location
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def exists(self) -> bool:
        return True

    def open(self, seekable: bool = True) -> IO[bytes]:
        import pyarrow as pa

        return cast(IO[bytes], pa.BufferReader(self._data))


class OverlayIO:
    """The table's FileIO, with the bytes of some locations replaced (never writes)."""

    def __init__(self, base: Any, files: dict[str, bytes]) -> None:
        self.base = base
        self.files = files
        self.properties = getattr(base, "properties", {})

    def new_input(self, location: str) -> Any:
        if location in self.files:
            return _MemoryInput(location, self.files[location])
        return self.base.new_input(location)

    def new_output(self, location: str) -> Any:
        raise AssertionError("the fuzzer never writes")

    def delete(self, location: str) -> None:
        raise AssertionError("the fuzzer never deletes")

    def exists(self, location: str) -> bool:
        return location in self.files or bool(self.base.exists(location))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)


def read_bytes(io: Any, location: str) -> bytes:
    with io.new_input(location).open() as f:
        return bytes(f.read())


# =============================================================================== consistency checks


def check_metadata(m: Any) -> list[str]:
    """What is inconsistent in a loaded TableMetadata (empty when it is a valid table)."""
    from icefloe.errors import IcefloeError
    from icefloe.spec.types import PrimitiveType

    problems: list[str] = []
    schemas = m.schemas_by_id
    current = m.schema()
    all_ids: set[int] = set()
    for s in m.schemas:
        ids = s.field_ids()  # raises SchemaError on duplicates (typed)
        if any(i < 0 for i in ids):
            problems.append(f"schema {s.schema_id} has a negative field id")
        all_ids |= set(ids)
    for snap in m.snapshots:
        if snap.schema_id is not None and snap.schema_id not in schemas:
            problems.append(f"snapshot {snap.snapshot_id} uses unknown schema {snap.schema_id}")
        if not isinstance(snap.manifest_list, str) or not snap.manifest_list:
            problems.append(f"snapshot {snap.snapshot_id} has no manifest list")
    for spec in m.partition_specs:
        ids = [f.field_id for f in spec.fields]
        if len(ids) != len(set(ids)):
            problems.append(f"spec {spec.spec_id} has duplicate partition field ids")
        names = [f.name for f in spec.fields]
        if len(names) != len(set(names)):
            problems.append(f"spec {spec.spec_id} has duplicate partition field names")
        for f in spec.fields:
            if f.transform.kind.value != "void" and f.source_id not in all_ids:
                problems.append(f"spec {spec.spec_id} field {f.name} has unknown source id {f.source_id}")
        try:
            spec.partition_type(current)
        except IcefloeError:
            pass  # typed when used
        except Exception as e:
            problems.append(f"spec {spec.spec_id} partition type: {type(e).__name__}: {e}")
    for f in m.spec().fields:
        field = current.find_field_or_none(f.source_id)
        if (
            f.transform.kind != "void"
            and field is not None
            and not (
                isinstance(field.field_type, PrimitiveType) and f.transform.can_transform(field.field_type)
            )
        ):
            problems.append(f"default spec field {f.name} cannot transform {field.field_type}")
    for order in m.sort_orders:
        for f in order.fields:
            if f.source_id not in all_ids:
                problems.append(f"sort order {order.order_id} uses unknown source id {f.source_id}")
    for name, ref in m.refs.items():
        if ref.snapshot_id not in m.snapshots_by_id:
            problems.append(f"ref {name} points at unknown snapshot {ref.snapshot_id}")
    if m.current_snapshot_id is not None and m.current_snapshot_id not in m.snapshots_by_id:
        problems.append("current snapshot does not exist")
    return problems


def check_manifest_files(m: Any, manifests: list[Any]) -> list[str]:
    from icefloe.manifest import ManifestContent

    problems = []
    for mf in manifests:
        if not isinstance(mf.manifest_path, str) or not mf.manifest_path:
            problems.append("manifest without a path")
        if not isinstance(mf.manifest_length, int) or mf.manifest_length < 0:
            problems.append(f"manifest length {mf.manifest_length!r}")
        if not isinstance(mf.content, ManifestContent):
            problems.append(f"manifest content {mf.content!r}")
        for name in (
            "added_files_count",
            "existing_files_count",
            "deleted_files_count",
            "added_rows_count",
            "existing_rows_count",
            "deleted_rows_count",
        ):
            v = getattr(mf, name, None)
            if v is not None and (not isinstance(v, int) or v < 0):
                problems.append(f"{name} {v!r}")
        # (an unknown spec id must fail the scan typed; summaries shorter or longer than the spec
        # only make manifest pruning answer "might match")
        if m.format_version >= 2 and not 0 <= mf.min_sequence_number <= mf.sequence_number:
            problems.append(f"sequence numbers {mf.sequence_number} (min {mf.min_sequence_number})")
    return problems


def check_entries(m: Any, manifest: Any, entries: list[Any]) -> list[str]:
    from icefloe.manifest import DataFileContent, ManifestContent

    problems = []
    spec = m.specs_by_id.get(manifest.partition_spec_id)
    for e in entries:
        df = e.data_file
        if not isinstance(df.file_path, str) or not df.file_path:
            problems.append("data file without a path")
        if not isinstance(df.record_count, int) or df.record_count < 0:
            problems.append(f"record_count {df.record_count!r}")
        if not isinstance(df.file_size_in_bytes, int) or df.file_size_in_bytes < 0:
            problems.append(f"file_size_in_bytes {df.file_size_in_bytes!r}")
        if spec is not None and len(df.partition) != len(spec.fields):
            problems.append(f"partition {df.partition!r} for a spec of {len(spec.fields)} fields")
        data_manifest = manifest.content == ManifestContent.DATA
        if data_manifest != (df.content == DataFileContent.DATA):
            problems.append(f"a {df.content} file in a {manifest.content} manifest")
        if df.content == DataFileContent.EQUALITY_DELETES and not df.equality_ids:
            problems.append("equality delete file without equality ids")
        if not isinstance(e.snapshot_id, int):
            problems.append(f"entry snapshot id {e.snapshot_id!r}")
    return problems


def check_puffin(footer: Any, size: int) -> list[str]:
    problems = []
    for b in footer.blobs:
        if not isinstance(b.type, str) or b.offset < 4 or b.length < 0 or b.offset + b.length > size:
            problems.append(f"blob {b.type!r} at {b.offset}+{b.length} outside a file of {size} bytes")
        if not all(isinstance(f, int) for f in b.fields):
            problems.append(f"blob fields {b.fields!r}")
    return problems


def check_result(baseline: Any, result: Any, schema: Any) -> tuple[str, str]:
    """Outcome of a successful scan: ``valid``, ``changed`` or ``wrong`` (with the reason)."""
    if result.schema != baseline.schema:
        return "wrong", f"schema {result.schema} instead of {baseline.schema}"
    for f in schema.fields:
        if f.required and f.name in result.column_names and result.column(f.name).null_count:
            return "wrong", f"nulls in required column {f.name!r}"
    if result.equals(baseline):
        return "valid", ""
    try:
        same = _rows(result) == _rows(baseline)
    except (ValueError, OverflowError):  # e.g. a date beyond Python's, valid in Iceberg
        same = False
    return ("valid", "") if same else ("changed", f"{result.num_rows} rows instead of {baseline.num_rows}")


def _rows(t: Any) -> list[str]:
    return sorted(repr(r) for r in t.to_pylist())


# =============================================================================== one case


@dataclass
class Subject:
    name: str
    metadata_location: str
    table: Any
    baseline: Any  # the scan's rows, or None when the original does not read (not a subject)


class Runner:
    def __init__(self, corpus: Path) -> None:
        from icefloe.io import load_file_io
        from icefloe.spec.table_metadata import read_metadata_json
        from icefloe.table import Table

        self.subjects: list[Subject] = []
        for entry in json.loads(corpus.read_text())["tables"]:
            loc = entry["metadata_location"]
            io = load_file_io({}, loc)
            meta = read_metadata_json(read_bytes(io, loc), loc)
            t = Table(tuple(entry["name"].split(".")), meta, loc, io, None)  # type: ignore[arg-type]
            self.subjects.append(Subject(entry["name"], loc, t, t.scan().to_arrow()))
        self._targets: dict[tuple[str, str], list[Any]] = {}

    def targets(self, subject: Subject, fmt: str) -> list[Any]:
        key = (subject.name, fmt)
        if key not in self._targets:
            self._targets[key] = self._find_targets(subject, fmt)
        return self._targets[key]

    def _find_targets(self, subject: Subject, fmt: str) -> list[Any]:
        from icefloe.manifest import DataFileContent, FileFormat, read_manifest_list

        t = subject.table
        if fmt == "metadata":
            return [subject.metadata_location]
        snap = t.current_snapshot()
        if snap is None:
            return []
        if fmt == "manifest_list":
            return [s.manifest_list for s in t.metadata.snapshots]
        if fmt == "manifest":
            return list(read_manifest_list(t.io, snap.manifest_list))
        found: dict[str, None] = {}
        for task in t.scan().plan_files():
            if fmt == "data":
                found[task.file.file_path] = None
            for d in task.delete_files:
                pq_kind = {
                    DataFileContent.POSITION_DELETES: "position_deletes",
                    DataFileContent.EQUALITY_DELETES: "equality_deletes",
                }.get(d.content)
                if (fmt == "puffin" and d.file_format == FileFormat.PUFFIN) or (
                    d.file_format == FileFormat.PARQUET and fmt == pq_kind
                ):
                    found[d.file_path] = None
        return list(found)

    def run(self, fmt: str, seed: int, case: int) -> tuple[str, str, str]:
        """(outcome, mutation, detail) of case ``case``."""
        from icefloe.errors import IcefloeError

        rng = random.Random(f"{seed}:{fmt}:{case}")
        candidates = [s for s in self.subjects if self.targets(s, fmt)]
        if not candidates:
            return "skip", "no target", ""
        subject = rng.choice(candidates)
        target = rng.choice(self.targets(subject, fmt))
        _clear_caches()
        self.mutation = "?"
        try:
            mutation, outcome, detail = self._run(fmt, rng, subject, target)
        except IcefloeError as e:
            return "typed", "", type(e).__name__
        except Exception as e:
            where = f"{subject.name} {self.mutation}"
            return "untyped", where, "".join(traceback.format_exception(e)[-8:])
        return outcome, f"{subject.name} {mutation}", detail

    def _run(self, fmt: str, rng: random.Random, subject: Subject, target: Any) -> tuple[str, str, str]:
        from icefloe.errors import IcefloeError
        from icefloe.io.puffin import read_footer
        from icefloe.manifest import read_manifest, read_manifest_list
        from icefloe.spec.table_metadata import read_metadata_json
        from icefloe.table import Table

        t = subject.table
        location = target if isinstance(target, str) else target.manifest_path
        original = read_bytes(t.io, location)
        try:
            mutation, mutated = self._mutate(fmt, rng, original)
        except Exception as e:  # the mutator could not apply itself to this file: not a case
            return f"mutator failed: {type(e).__name__}: {e}", "skip", ""
        self.mutation = mutation
        if mutated is None:
            return mutation, "skip", ""
        io = OverlayIO(t.io, {location: mutated})
        try:
            if fmt == "metadata":
                meta = read_metadata_json(mutated, location)
                problems = check_metadata(meta)
                if problems:
                    return mutation, "wrong", "; ".join(problems)
                table = Table(t.identifier, meta, location, t.io, None)
                table.scan().plan_files()
                return mutation, "valid" if meta == t.metadata else "changed", ""
            table = Table(t.identifier, t.metadata, subject.metadata_location, io, None)
            if fmt == "puffin":
                problems = check_puffin(read_footer(io, location), len(mutated))
                if problems:
                    return mutation, "wrong", "; ".join(problems)
            if fmt == "manifest_list":
                problems = check_manifest_files(t.metadata, read_manifest_list(io, location, cache=False))
                if problems:
                    return mutation, "wrong", "; ".join(problems)
                if location != t.current_snapshot().manifest_list:
                    return mutation, "valid", ""
            elif fmt == "manifest":
                entries = list(read_manifest(io, target, cache=False))
                problems = check_entries(t.metadata, target, entries)
                if problems:
                    return mutation, "wrong", "; ".join(problems)
            result = table.scan().to_arrow()
        except IcefloeError as e:
            return mutation, "typed", type(e).__name__
        outcome, detail = check_result(subject.baseline, result, t.schema())
        return mutation, outcome, detail

    def _mutate(self, fmt: str, rng: random.Random, original: bytes) -> tuple[str, bytes | None]:
        structural = rng.random() < 0.5
        if fmt == "metadata" and structural:
            doc = json.loads(original)
            name = mutate_json(rng, doc)
            return name, json.dumps(doc).encode()
        if fmt in ("manifest_list", "manifest") and structural:
            return mutate_avro(rng, original)
        if fmt in ("data", "position_deletes", "equality_deletes") and rng.random() < 0.3:
            return mutate_parquet_structure(rng, original)
        tail = None
        if fmt in ("data", "position_deletes", "equality_deletes", "puffin") and rng.random() < 0.5:
            tail = max(_footer_len(original), 64) if fmt != "puffin" else 256
        return mutate_bytes(rng, original, tail)


def _clear_caches() -> None:
    from icefloe.arrow.apply_deletes import default_delete_loader
    from icefloe.manifest.manifest_list import clear_manifest_list_cache
    from icefloe.manifest.reader import clear_manifest_cache

    clear_manifest_cache()
    clear_manifest_list_cache()
    default_delete_loader().clear()


# =============================================================================== page checksums


def page_checksum_experiment(corpus: Path, cases: int, seed: int) -> dict[str, Counter[str]]:
    """Flip bytes inside the pages (not the footer) of a data file written without and with
    Parquet page checksums, read it with pyarrow (verification on for the second) and count how
    often the damage goes unnoticed (``changed``) or is caught (``typed``: any exception)."""
    import pyarrow.parquet as pq

    runner = Runner(corpus)
    subject = runner.subjects[0]
    path = runner.targets(subject, "data")[0]
    table = pq.read_table(stdio.BytesIO(read_bytes(subject.table.io, path)))
    files = {}
    for checksums in (False, True):
        buf = stdio.BytesIO()
        pq.write_table(table, buf, compression="zstd", write_page_checksum=checksums)
        files[checksums] = buf.getvalue()
    out: dict[str, Counter[str]] = {"no checksums": Counter(), "page checksums": Counter()}
    for case in range(cases):
        for checksums, label in ((False, "no checksums"), (True, "page checksums")):
            rng = random.Random(f"{seed}:pages:{case}")
            data = bytearray(files[checksums])
            pages_end = len(data) - _footer_len(bytes(data))
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(4, pages_end)
                data[i] ^= 1 << rng.randrange(8)
            try:
                got = pq.ParquetFile(stdio.BytesIO(bytes(data)), page_checksum_verification=checksums).read()
            except Exception:
                out[label]["typed"] += 1
                continue
            out[label]["valid" if got.equals(table) else "changed"] += 1
    return out


# =============================================================================== processes


def worker(corpus: Path, fmt: str, seed: int, start: int, stop: int) -> None:
    import warnings

    warnings.simplefilter("ignore")
    runner = Runner(corpus)
    for case in range(start, stop):
        print(f"S {case}", flush=True)
        outcome, mutation, detail = runner.run(fmt, seed, case)
        print("R " + json.dumps([case, outcome, mutation, detail[:2000]]), flush=True)


@dataclass
class Report:
    counts: dict[str, Counter[str]]
    findings: list[tuple[str, int, str, str, str]]  # format, case, outcome, mutation, detail
    seconds: float

    def table(self) -> str:
        lines = [f"{'format':<18}" + "".join(f"{o:>9}" for o in OUTCOMES) + f"{'total':>9}"]
        for fmt, c in self.counts.items():
            lines.append(f"{fmt:<18}" + "".join(f"{c[o]:>9}" for o in OUTCOMES) + f"{sum(c.values()):>9}")
        total: Counter[str] = Counter()
        for c in self.counts.values():
            total.update(c)
        lines.append(
            f"{'all':<18}" + "".join(f"{total[o]:>9}" for o in OUTCOMES) + f"{sum(total.values()):>9}"
        )
        return "\n".join(lines)


def run_cases(
    corpus: Path, fmt: str, seed: int, start: int, stop: int, *, timeout: float = 3600
) -> tuple[Counter[str], list[tuple[str, int, str, str, str]]]:
    """Cases ``start..stop`` of ``fmt`` in a worker subprocess, restarted after each abort."""
    counts: Counter[str] = Counter()
    findings: list[tuple[str, int, str, str, str]] = []
    deadline = time.monotonic() + timeout
    next_case = start
    while next_case < stop:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "worker",
            str(corpus),
            fmt,
            str(seed),
            str(next_case),
            str(stop),
        ]
        running: int | None = None
        with (
            tempfile.TemporaryFile("w+") as err,
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO) as proc,
        ):
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("S "):
                    running = int(line[2:])
                elif line.startswith("R "):
                    case, outcome, mutation, detail = json.loads(line[2:])
                    counts[outcome] += 1
                    if outcome in (*BAD, "abort"):
                        findings.append((fmt, case, outcome, mutation, detail))
                    running = None
                    next_case = case + 1
                if time.monotonic() > deadline:
                    proc.kill()
                    break
            proc.wait()
            err.seek(0)
            stderr = err.read()
        if time.monotonic() > deadline:
            break
        if running is not None:  # died inside a case
            counts["abort"] += 1
            findings.append((fmt, running, "abort", "", f"exit {proc.returncode}: {stderr[-500:]}"))
            next_case = running + 1
        elif next_case < stop:  # died outside a case: the corpus does not load
            raise RuntimeError(f"fuzz worker failed (exit {proc.returncode}):\n{stderr[-3000:]}")
    return counts, findings


def campaign(corpus: Path, cases: int, formats: tuple[str, ...], seed: int, jobs: int = 1) -> Report:
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    chunks = [
        (fmt, lo, min(lo + max(1, cases // jobs), cases))
        for fmt in formats
        for lo in range(0, cases, max(1, cases // jobs))
    ]
    counts: dict[str, Counter[str]] = {fmt: Counter() for fmt in formats}
    findings: list[tuple[str, int, str, str, str]] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for fmt_counts, fmt_findings, fmt in pool.map(
            lambda c: (*run_cases(corpus, c[0], seed, c[1], c[2]), c[0]), chunks
        ):
            counts[fmt].update(fmt_counts)
            findings.extend(fmt_findings)
    return Report(counts, sorted(findings), time.monotonic() - started)


def default_ref_tables() -> Path | None:
    env = os.environ.get("ICEFLOE_ORACLE_REF")
    path = Path(env) if env else Path.home() / ".cache" / "icefloe-oracle" / "ref-tables"
    return path if (path / "index.json").exists() else None


@contextlib.contextmanager
def temporary_corpus() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="icefloe-fuzz-") as tmp:
        yield build_corpus(Path(tmp) / "corpus", default_ref_tables())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker")
    w.add_argument("corpus", type=Path)
    w.add_argument("format")
    w.add_argument("seed", type=int)
    w.add_argument("start", type=int)
    w.add_argument("stop", type=int)
    c = sub.add_parser("campaign")
    c.add_argument("--formats", default=",".join(FORMATS))
    c.add_argument("--seed", type=int, default=int(os.environ.get("ICEFLOE_FUZZ_SEED", "1")))
    c.add_argument("--jobs", type=int, default=1)
    c.add_argument("--checksum-cases", type=int, default=0)
    r = sub.add_parser("replay")
    r.add_argument("format")
    r.add_argument("case", type=int)
    r.add_argument("--seed", type=int, default=int(os.environ.get("ICEFLOE_FUZZ_SEED", "1")))
    args = parser.parse_args(argv)
    if args.command == "worker":
        worker(args.corpus, args.format, args.seed, args.start, args.stop)
        return 0
    if args.command == "replay":
        with temporary_corpus() as corpus:
            print(Runner(corpus).run(args.format, args.seed, args.case))
        return 0
    cases = int(os.environ.get("ICEFLOE_FUZZ", "300"))
    with temporary_corpus() as corpus:
        report = campaign(corpus, cases, tuple(args.formats.split(",")), args.seed, args.jobs)
        print(report.table())
        print(f"{report.seconds:.0f} s, seed {args.seed}")
        for finding in report.findings:
            print(" | ".join(str(x) for x in finding)[:3000])
        if args.checksum_cases:
            for label, counter in page_checksum_experiment(corpus, args.checksum_cases, args.seed).items():
                print(f"page damage, {label}: {dict(counter)}")
    return 1 if any(f[2] in BAD for f in report.findings) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main(sys.argv[1:]))


__all__ = [
    "FORMATS",
    "OUTCOMES",
    "Report",
    "Runner",
    "campaign",
    "check_metadata",
    "mutate_bytes",
    "mutate_json",
    "temporary_corpus",
]
