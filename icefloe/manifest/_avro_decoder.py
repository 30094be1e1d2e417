"""A decoder compiled from an Avro schema: the fastest way to turn a block of manifest records
into Python values here (measured in bench/scenarios/planning_decoders.py).

``compile_decoder(schema)`` generates, once per writer schema, the source of one Python function
that decodes ``count`` records from a block's bytes with every field read inline: no per-value
function call, no per-record schema walk, no dict per record. Values are *raw* (logical types
ignored: dates, times and timestamps stay ints, decimals and UUIDs stay bytes), records become
tuples in the schema's field order, and Iceberg's int-keyed maps (arrays of ``key``/``value``
records marked ``logicalType: map``) become dicts, like Avro maps. Callers find fields by
position (see :func:`field_positions`).

For the manifest list of a 1,000-manifest table this is about 1.5x faster than fastavro's
compiled block decoder, and for manifests about 2x (fastavro builds a dict per record and per
map entry, which the readers then converted again).

``compile_selector(schema, picks)`` generates a second kind of function for a record schema: it
builds per record only ``(offset, *picked fields)`` and steps over every other field without
building it (a run of int/long fields in one regex match). Selective planning decodes the few
manifest-list fields partition pruning needs this way, then decodes in full only the records it
keeps, each from its offset with the ordinary decoder.

Bytes that do not fit the schema raise ``ValueError`` or ``IndexError`` (the caller names the
file): a length or union branch out of range, or bytes left over after the block's records.

Generated modules hold their constants (a prologue of assignments), so the code object alone is
the decoder: the on-disk cache (:func:`_code`) names an entry by the schema (and picks) plus a
digest of this module's source, and a fresh process that finds it generates no source at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from collections.abc import Callable
from functools import lru_cache
from types import CodeType
from typing import Any

__all__ = ["Decoder", "NotCompilable", "Pick", "compile_decoder", "compile_selector"]

#: ``decode(block_bytes, record_count) -> records`` (each a tuple in field order).
Decoder = Callable[[bytes, int], list[Any]]

#: A run of ``n`` varints (``_VARINTS % n``), stepped over by one regex match.
_VARINTS = rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}"

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

#: One value a selector returns per record: the position of a top-level field of the record
#: schema, with (for an array of records) the positions of the element fields to keep, in the
#: order wanted (``None``: a ``None`` there); or ``None`` for a field the schema does not have.
Pick = tuple[int, tuple[int | None, ...] | None] | None


class NotCompilable(ValueError):
    """The schema uses something the generator does not handle (a recursive type)."""


class _Gen:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}  # always empty: constants are in ``prologue``
        self.prologue: list[str] = ["import re as _re", "import struct as _struct"]
        self.named: dict[str, Any] = {}
        self._counter = 0
        self._active: set[str] = set()
        #: id() of an element record schema -> the element fields to build its tuple from
        self.reorder: dict[int, tuple[int | None, ...]] = {}

    def var(self, prefix: str = "v") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def const(self, expression: str) -> str:
        """A module-level name for the value of ``expression`` (source evaluated once when the
        generated module runs): the code object then holds everything, so a cached one needs
        nothing generated beside it."""
        name = f"_c{len(self.prologue)}"
        self.prologue.append(f"{name} = {expression}")
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def long(self, ind: int, target: str) -> None:
        """Read one zig-zag varint into ``target``: one or two bytes inline (union branches,
        lengths, small counts), longer ones by a call (which keeps the source, and its compile
        time, small)."""
        self.emit(ind, "b = data[pos]")
        self.emit(ind, "if b < 128:")
        self.emit(ind + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(ind + 1, "pos += 1")
        self.emit(ind, "elif data[pos + 1] < 128:")  # two bytes (a path's length, a file size)
        self.emit(ind + 1, "b = (b & 127) | (data[pos + 1] << 7)")
        self.emit(ind + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(ind + 1, "pos += 2")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{target}, pos = _long(data, pos)")

    def sized(self, ind: int, target: str, size: str, decode: bool) -> None:
        self.emit(ind, f"if {size} < 0 or pos + {size} > end:")
        self.emit(ind + 1, f"raise ValueError('a length of ' + str({size}) + ' past the end of the block')")
        self.emit(ind, f"{target} = data[pos:pos + {size}]{'.decode()' if decode else ''}")
        self.emit(ind, f"pos += {size}")

    def value(self, schema: Any, ind: int, target: str) -> None:
        if isinstance(schema, list):
            self.union(schema, ind, target)
            return
        if isinstance(schema, dict):
            kind = schema.get("type")
            if isinstance(kind, dict | list):
                self.value(kind, ind, target)
                return
            if kind == "record" or kind == "error":
                self.record(schema, ind, target)
            elif kind == "array":
                self.array(schema, ind, target)
            elif kind == "map":
                self.map(schema, ind, target)
            elif kind == "fixed":
                self.register(schema)
                size = int(schema["size"])
                self.emit(ind, f"if pos + {size} > end:")
                self.emit(ind + 1, "raise ValueError('a fixed value past the end of the block')")
                self.emit(ind, f"{target} = data[pos:pos + {size}]")
                self.emit(ind, f"pos += {size}")
            elif kind == "enum":
                self.register(schema)
                symbols = self.const(repr(tuple(str(x) for x in schema["symbols"])))
                i = self.var("i")
                self.long(ind, i)
                self.emit(ind, f"if not 0 <= {i} < len({symbols}):")
                self.emit(ind + 1, f"raise ValueError('enum index ' + str({i}) + ' out of range')")
                self.emit(ind, f"{target} = {symbols}[{i}]")
            elif kind in _PRIMITIVES:
                self.primitive(kind, ind, target)
            else:
                raise NotCompilable(f"unknown Avro type {kind!r}")
            return
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                self.primitive(schema, ind, target)
                return
            named = self.named.get(schema)
            if named is None:
                raise NotCompilable(f"unknown Avro type {schema!r}")
            if schema in self._active:
                raise NotCompilable(f"recursive Avro type {schema!r}")
            self.value(named, ind, target)
            return
        raise NotCompilable(f"not an Avro schema: {schema!r}")

    def register(self, schema: dict[str, Any]) -> None:
        name = schema.get("name")
        if isinstance(name, str):
            self.named[name] = schema
            namespace = schema.get("namespace")
            if isinstance(namespace, str) and namespace and "." not in name:
                self.named[f"{namespace}.{name}"] = schema

    def primitive(self, kind: str, ind: int, target: str) -> None:
        if kind == "null":
            self.emit(ind, f"{target} = None")
        elif kind == "boolean":
            self.emit(ind, f"{target} = data[pos] != 0")
            self.emit(ind, "pos += 1")
        elif kind in ("int", "long"):
            self.long(ind, target)
        elif kind in ("float", "double"):
            width = 4 if kind == "float" else 8
            unpack = self.const(f"_struct.Struct({'<f' if kind == 'float' else '<d'!r}).unpack_from")
            self.emit(ind, f"if pos + {width} > end:")
            self.emit(ind + 1, "raise ValueError('a number past the end of the block')")
            self.emit(ind, f"{target} = {unpack}(data, pos)[0]")
            self.emit(ind, f"pos += {width}")
        else:
            size = self.var("n")
            self.long(ind, size)
            self.sized(ind, target, size, decode=kind == "string")

    def union(self, branches: list[Any], ind: int, target: str) -> None:
        if len(branches) <= 63:
            # The branch index is a varint; below 64 it is the single byte 2 * index (zig-zag),
            # so the branches are told apart by that byte, the nullable value's first.
            u = self.var("u")
            self.emit(ind, f"{u} = data[pos]")
            self.emit(ind, "pos += 1")
            order = sorted(range(len(branches)), key=lambda k: branches[k] == "null")
            for n, k in enumerate(order):
                self.emit(ind, f"{'if' if n == 0 else 'elif'} {u} == {2 * k}:")
                self.value(branches[k], ind + 1, target)
            self.emit(ind, "else:")
            self.emit(ind + 1, f"raise ValueError('union branch byte ' + str({u}) + ' out of range')")
            return
        i = self.var("u")
        self.long(ind, i)
        for k, branch in enumerate(branches):
            self.emit(ind, f"{'if' if k == 0 else 'elif'} {i} == {k}:")
            self.value(branch, ind + 1, target)
        self.emit(ind, "else:")
        self.emit(ind + 1, f"raise ValueError('union branch ' + str({i}) + ' out of range')")

    def record(self, schema: dict[str, Any], ind: int, target: str) -> None:
        self.register(schema)
        name = schema.get("name")
        if isinstance(name, str):
            self._active.add(name)
        fields = [self.var("f") for _ in schema.get("fields", ())]
        for f, var in zip(schema.get("fields", ()), fields, strict=True):
            self.value(f["type"], ind, var)
        if isinstance(name, str):
            self._active.discard(name)
        order = self.reorder.get(id(schema))
        if order is not None:
            fields = [fields[k] if k is not None else "None" for k in order]
        self.emit(ind, f"{target} = ({', '.join(fields)}{',' if len(fields) == 1 else ''})")

    # -------------------------------------------------------------- skipping (selectors)

    def skip_varints(self, ind: int, n: int) -> None:
        """Step over ``n`` consecutive varints: one alone byte by byte, a run in one regex match."""
        if n == 1:
            self.emit(ind, "while data[pos] > 127:")
            self.emit(ind + 1, "pos += 1")
            self.emit(ind, "pos += 1")
            return
        match = self.const(f"_re.compile({_VARINTS % n!r}, _re.S).match")
        m = self.var("m")
        self.emit(ind, f"{m} = {match}(data, pos)")
        self.emit(ind, f"if {m} is None:")
        self.emit(ind + 1, "raise ValueError('a number past the end of the block')")
        self.emit(ind, f"pos = {m}.end()")

    def skip_width(self, ind: int, width: int | str) -> None:
        self.emit(ind, f"if pos + {width} > end:")
        self.emit(ind + 1, "raise ValueError('a value past the end of the block')")
        self.emit(ind, f"pos += {width}")

    def _resolve(self, schema: Any) -> Any:
        """A named type's definition, a ``{"type": <type>}`` wrapper's type; else ``schema``."""
        while True:
            if isinstance(schema, str) and schema not in _PRIMITIVES:
                named = self.named.get(schema)
                if named is None:
                    raise NotCompilable(f"unknown Avro type {schema!r}")
                if schema in self._active:
                    raise NotCompilable(f"recursive Avro type {schema!r}")
                return named
            if isinstance(schema, dict) and isinstance(schema.get("type"), dict | list):
                schema = schema["type"]
                continue
            return schema

    def _kind(self, schema: Any) -> Any:
        schema = self._resolve(schema)
        return schema.get("type") if isinstance(schema, dict) else schema

    def skip(self, schema: Any, ind: int) -> None:
        """Emit code that steps over one value of ``schema`` without building it (named types
        are still registered: a later field may refer to them)."""
        schema = self._resolve(schema)
        if isinstance(schema, list):
            u = self.var("u")
            self.long(ind, u)
            for k, branch in enumerate(schema):
                self.emit(ind, f"{'if' if k == 0 else 'elif'} {u} == {k}:")
                self.emit(ind + 1, "pass")
                self.skip(branch, ind + 1)
            self.emit(ind, "else:")
            self.emit(ind + 1, f"raise ValueError('union branch ' + str({u}) + ' out of range')")
            return
        kind = schema.get("type") if isinstance(schema, dict) else schema
        if kind == "null":
            return
        if kind == "boolean":
            self.skip_width(ind, 1)
        elif kind in ("int", "long", "enum"):
            if kind == "enum":
                self.register(schema)
            self.skip_varints(ind, 1)
        elif kind in ("float", "double"):
            self.skip_width(ind, 4 if kind == "float" else 8)
        elif kind in ("bytes", "string"):
            n = self.var("n")
            self.long(ind, n)
            self.emit(ind, f"if {n} < 0:")
            self.emit(ind + 1, f"raise ValueError('a negative length ' + str({n}))")
            self.skip_width(ind, n)
        elif kind == "fixed":
            self.register(schema)
            self.skip_width(ind, int(schema["size"]))
        elif kind == "record" or kind == "error":
            self.register(schema)
            name = schema.get("name")
            if isinstance(name, str):
                self._active.add(name)
            self.skip_fields(schema.get("fields", ()), ind)
            if isinstance(name, str):
                self._active.discard(name)
        elif kind in ("array", "map"):
            count, size = self.var("c"), self.var("z")
            self.emit(ind, "while True:")
            self.long(ind + 1, count)
            self.emit(ind + 1, f"if {count} == 0:")
            self.emit(ind + 2, "break")
            self.emit(ind + 1, f"if {count} < 0:")
            self.long(ind + 2, size)  # the block's size in bytes: step over it whole
            self.emit(ind + 2, f"if {size} < 0:")
            self.emit(ind + 3, f"raise ValueError('a negative block size ' + str({size}))")
            self.skip_width(ind + 2, size)
            self.emit(ind + 2, "continue")
            self.emit(ind + 1, f"for _ in range({count}):")
            self.emit(ind + 2, "pass")
            if kind == "array":
                self.skip(schema["items"], ind + 2)
            else:
                self.skip("string", ind + 2)
                self.skip(schema["values"], ind + 2)
        else:
            raise NotCompilable(f"unknown Avro type {kind!r}")

    def skip_fields(self, fields: Any, ind: int) -> None:
        """Skip record fields in order, runs of int/long fields in one step."""
        run = 0
        for f in fields:
            if self._kind(f["type"]) in ("int", "long"):
                run += 1
                continue
            if run:
                self.skip_varints(ind, run)
                run = 0
            self.skip(f["type"], ind)
        if run:
            self.skip_varints(ind, run)

    def _blocks(self, ind: int, body: Callable[[int], None]) -> None:
        """Avro's array/map encoding: blocks of ``count`` items until a 0 count; a negative count
        is followed by the block's size in bytes."""
        count, skip = self.var("c"), self.var("z")
        self.emit(ind, "while True:")
        self.long(ind + 1, count)
        self.emit(ind + 1, f"if {count} == 0:")
        self.emit(ind + 2, "break")
        self.emit(ind + 1, f"if {count} < 0:")
        self.emit(ind + 2, f"{count} = -{count}")
        self.long(ind + 2, skip)
        self.emit(ind + 1, f"for _ in range({count}):")
        body(ind + 2)

    def array(self, schema: dict[str, Any], ind: int, target: str) -> None:
        items = schema["items"]
        kv = self._map_record(items) if schema.get("logicalType") == "map" else None
        if kv is not None:
            key_schema, value_schema = kv
            k, v = self.var("k"), self.var("v")
            self.emit(ind, f"{target} = {{}}")

            def entry(i: int) -> None:
                self.value(key_schema, i, k)
                self.value(value_schema, i, v)
                self.emit(i, f"{target}[{k}] = {v}")

            self._blocks(ind, entry)
            return
        item = self.var("e")
        self.emit(ind, f"{target} = []")

        def element(i: int) -> None:
            self.value(items, i, item)
            self.emit(i, f"{target}.append({item})")

        self._blocks(ind, element)

    def _map_record(self, items: Any) -> tuple[Any, Any] | None:
        record = self.named.get(items) if isinstance(items, str) else items
        if not isinstance(record, dict) or record.get("type") != "record":
            return None
        fields = record.get("fields", ())
        if [f.get("name") for f in fields] != ["key", "value"]:
            return None
        self.register(record)
        return fields[0]["type"], fields[1]["type"]

    def map(self, schema: dict[str, Any], ind: int, target: str) -> None:
        k, v = self.var("k"), self.var("v")
        self.emit(ind, f"{target} = {{}}")

        def entry(i: int) -> None:
            self.primitive("string", i, k)
            self.value(schema["values"], i, v)
            self.emit(i, f"{target}[{k}] = {v}")

        self._blocks(ind, entry)


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """A varint of more than one byte at ``pos``: (value, position after it)."""
    b = data[pos]
    n = b & 127
    shift = 7
    pos += 1
    while b & 128:
        b = data[pos]
        pos += 1
        n |= (b & 127) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def _source(schema: Any) -> tuple[str, dict[str, Any]]:
    gen = _Gen()
    gen.emit(0, "def decode(data, count):")
    gen.emit(1, "pos = 0")
    gen.emit(1, "end = len(data)")
    gen.emit(1, "out = []")
    gen.emit(1, "for _ in range(count):")
    gen.value(schema, 2, "r")
    gen.emit(2, "out.append(r)")
    gen.emit(1, "if pos != end:")
    gen.emit(2, "raise ValueError(str(end - pos) + ' bytes left over after the records of a block')")
    gen.emit(1, "return out")
    return "\n".join(gen.prologue + gen.lines) + "\n", gen.consts


def _selector_source(schema: Any, picks: tuple[Pick, ...]) -> tuple[str, dict[str, Any]]:
    gen = _Gen()
    schema = gen._resolve(schema)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise NotCompilable("a selector needs a record schema")
    gen.register(schema)
    fields = list(schema.get("fields", ()))
    wanted: dict[int, str] = {}
    for pick in picks:
        if pick is None:
            continue
        position, order = pick
        if not 0 <= position < len(fields):
            raise NotCompilable(f"no field at position {position}")
        wanted[position] = gen.var("p")
        if order is not None:
            element = gen._resolve(fields[position]["type"])
            if isinstance(element, list):  # a nullable array
                element = next((gen._resolve(b) for b in element if b != "null"), None)
            items = gen._resolve(element.get("items")) if isinstance(element, dict) else None
            if not isinstance(items, dict) or items.get("type") != "record":
                raise NotCompilable(f"field {position} is not an array of records")
            if element.get("logicalType") == "map":  # decoded as a dict, not as a list of tuples
                raise NotCompilable(f"field {position} is a map")
            gen.reorder[id(items)] = order
    gen.emit(0, "def select(data, count):")
    gen.emit(1, "pos = 0")
    gen.emit(1, "end = len(data)")
    gen.emit(1, "out = []")
    gen.emit(1, "for _ in range(count):")
    gen.emit(2, "start = pos")
    run: list[dict[str, Any]] = []
    for position, f in enumerate(fields):
        if position not in wanted:
            run.append(f)
            continue
        gen.skip_fields(run, 2)
        run = []
        gen.value(f["type"], 2, wanted[position])
    gen.skip_fields(run, 2)
    values = ["start"] + [wanted[p[0]] if p is not None else "None" for p in picks]
    gen.emit(2, f"out.append(({', '.join(values)},))")
    gen.emit(1, "if pos != end:")
    gen.emit(2, "raise ValueError(str(end - pos) + ' bytes left over after the records of a block')")
    gen.emit(1, "return out")
    return "\n".join(gen.prologue + gen.lines) + "\n", gen.consts


#: Where compiled decoders are kept across processes: ``$ICEFLOE_CODE_CACHE_DIR`` when set (empty
#: turns the cache off), else ``$XDG_CACHE_HOME/icefloe/avro-decoders`` (``~/.cache`` by default).
CODE_CACHE_ENV = "ICEFLOE_CODE_CACHE_DIR"
_FILENAME = "<icefloe avro decoder>"


def _cache_dir() -> str | None:
    configured = os.environ.get(CODE_CACHE_ENV)
    if configured is not None:
        return configured or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "icefloe", "avro-decoders")


@lru_cache(maxsize=1)
def _generator_digest() -> str | None:
    """SHA-256 of this module's source: part of every schema-keyed cache entry's name, so code
    generated by another version of the generator is never found. None when the source cannot
    be read (entries are then keyed by the generated source only)."""
    try:
        with open(__file__, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except Exception:
        return None


def _code(source: str | Callable[[], str], key: str | None = None) -> CodeType:
    """``compile(source)``, through an on-disk cache of marshalled code objects.

    Compiling the generated source is most of a fresh process's cost of its first manifest list
    and manifest (about 2 ms for both); loading the marshalled code takes a few microseconds.
    An entry is named by the SHA-256 of the interpreter's bytecode tag and ``key`` (what the
    source was generated from, with the generator's own digest), else of the exact source; it
    holds the SHA-256 of its payload, so a damaged or foreign file is never used: any problem
    reading or writing the cache falls back silently to compiling. With a ``key``, ``source`` may
    be a function: a cache hit then skips generating the source too.
    """
    directory = _cache_dir()
    if directory is None:
        return compile(source if isinstance(source, str) else source(), _FILENAME, "exec")
    tag = sys.implementation.cache_tag or "nocache"
    if key is None:
        if not isinstance(source, str):
            source = source()
        key = source
    name = hashlib.sha256(f"{tag}\0{key}".encode()).hexdigest()
    path = os.path.join(directory, f"{name}.{tag}.bin")
    try:
        with open(path, "rb") as f:
            blob = f.read()
        digest, payload = blob[:32], blob[32:]
        if len(digest) == 32 and hashlib.sha256(payload).digest() == digest:
            code = marshal.loads(payload)
            if isinstance(code, CodeType) and code.co_filename == _FILENAME:
                return code
    except Exception:  # missing, unreadable or damaged entry: compile instead
        pass
    code = compile(source if isinstance(source, str) else source(), _FILENAME, "exec")
    try:
        import tempfile

        payload = marshal.dumps(code)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".bin")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)  # atomic: readers see the old entry, none, or the whole new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except Exception:  # read-only home, full disk, ...: the cache is only an optimisation
        pass
    return code


def _function(kind: str, key_text: str, generate: Callable[[], tuple[str, dict[str, Any]]]) -> Decoder:
    """The generated function ``kind`` ("decode" or "select"), its code through the cache under
    a key made of ``key_text`` and the generator's digest (a hit generates nothing)."""
    digest = _generator_digest()
    if digest is None:
        code = _code(generate()[0])
    else:
        code = _code(lambda: generate()[0], f"{digest}\0{kind}\0{key_text}")
    namespace: dict[str, Any] = {"_long": _long}
    exec(code, namespace)  # our own generated source
    function: Decoder = namespace[kind]
    return function


@lru_cache(maxsize=128)
def _compile(schema_text: str) -> Decoder:
    import json

    return _function("decode", schema_text, lambda: _source(json.loads(schema_text)))


@lru_cache(maxsize=128)
def _compile_selector(schema_text: str, picks: tuple[Pick, ...]) -> Decoder:
    import json

    return _function(
        "select", f"{picks!r}\0{schema_text}", lambda: _selector_source(json.loads(schema_text), picks)
    )


def compile_selector(schema_text: str, picks: tuple[Pick, ...]) -> Decoder:
    """A decoder of blocks written with the record schema ``schema_text`` that builds, per
    record, only ``(start, *picked values)``: ``start`` is the record's offset in the block, and
    every other field is stepped over without building its value (runs of numbers in one regex
    match). Picking the few fields a filter needs, then decoding the records it keeps from their
    offsets (with :func:`compile_decoder`'s decoder on ``block[start:next_start]``), is how a
    selective scan plan reads a long manifest list. The bytes are checked as
    :func:`compile_decoder`'s are (lengths and branches in range, nothing left over)."""
    return _compile_selector(schema_text, picks)


def compile_decoder(schema_text: str) -> Decoder:
    """The decoder of blocks written with the Avro schema ``schema_text`` (JSON), cached per
    schema. Raises :class:`NotCompilable` for a schema it cannot handle (a recursive type)."""
    return _compile(schema_text)
