"""The on-disk cache of compiled Avro decoders (``_code`` in icefloe/manifest/_avro_decoder.py):
a second process loads the marshalled code instead of compiling; a damaged, foreign or
unwritable cache is never used and never fails a read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.manifest import _avro_decoder
from icefloe.manifest._avro_decoder import CODE_CACHE_ENV, _code, _long, _source

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "a", "type": "long"},
        {"name": "b", "type": ["null", "string"]},
        {"name": "c", "type": {"type": "array", "items": "double"}},
    ],
}


def _decode_with(code: Any, consts: dict[str, Any], block: bytes, n: int) -> list[Any]:
    namespace: dict[str, Any] = dict(consts, _long=_long)
    exec(code, namespace)
    return list(namespace["decode"](block, n))


def _block(records: list[dict[str, Any]]) -> bytes:
    import io

    out = io.BytesIO()
    parsed = fastavro.parse_schema(SCHEMA)
    for r in records:
        fastavro.schemaless_writer(out, parsed, r)
    return out.getvalue()


def _entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if not p.name.startswith(".tmp-"))


records_st = st.lists(
    st.fixed_dictionaries(
        {
            "a": st.integers(-(2**63), 2**63 - 1),
            "b": st.none() | st.text(max_size=8),
            "c": st.lists(st.floats(allow_nan=False), max_size=3),
        }
    ),
    max_size=5,
)


@settings(max_examples=25, deadline=None)
@given(records=records_st)
def test_cached_code_decodes_like_freshly_compiled_code(
    records: list[dict[str, Any]], tmp_path_factory: Any
) -> None:
    directory = tmp_path_factory.mktemp("codecache")
    source, consts = _source(SCHEMA)
    block = _block(records)
    expected = [(r["a"], r["b"], r["c"]) for r in records]
    old = os.environ.get(CODE_CACHE_ENV)
    os.environ[CODE_CACHE_ENV] = str(directory)
    try:
        first = _code(source)  # compiles and writes the entry
        assert len(_entries(directory)) == 1
        second = _code(source)  # loaded from the entry
    finally:
        if old is None:
            del os.environ[CODE_CACHE_ENV]
        else:
            os.environ[CODE_CACHE_ENV] = old
    assert _decode_with(first, consts, block, len(records)) == expected
    assert _decode_with(second, consts, block, len(records)) == expected


def test_second_call_loads_without_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CODE_CACHE_ENV, str(tmp_path))
    source, _ = _source(SCHEMA)
    _code(source)

    def no_compile(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("compiled although a valid cache entry exists")

    monkeypatch.setattr(_avro_decoder, "compile", no_compile, raising=False)
    code = _code(source)
    assert code.co_filename == "<icefloe avro decoder>"


def test_entries_are_keyed_by_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CODE_CACHE_ENV, str(tmp_path))
    other = dict(SCHEMA, fields=[*SCHEMA["fields"], {"name": "d", "type": "boolean"}])
    _code(_source(SCHEMA)[0])
    _code(_source(other)[0])
    assert len(_entries(tmp_path)) == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: b"",  # empty
        lambda blob: blob[:40],  # truncated
        lambda blob: blob[:50] + bytes([blob[50] ^ 0xFF]) + blob[51:],  # a flipped byte
        lambda blob: blob[:32] + b"not marshal data",  # payload replaced, digest kept
    ],
)
def test_damaged_entry_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    monkeypatch.setenv(CODE_CACHE_ENV, str(tmp_path))
    source, consts = _source(SCHEMA)
    _code(source)
    (entry,) = _entries(tmp_path)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    code = _code(source)
    block = _block([{"a": 5, "b": "x", "c": [1.5]}])
    assert _decode_with(code, consts, block, 1) == [(5, "x", [1.5])]
    assert entry.read_bytes() == good  # rewritten whole (atomically)


def test_foreign_code_object_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import marshal

    monkeypatch.setenv(CODE_CACHE_ENV, str(tmp_path))
    source, consts = _source(SCHEMA)
    _code(source)
    (entry,) = _entries(tmp_path)
    payload = marshal.dumps(compile("def decode(data, count):\n    return ['wrong']\n", "<other>", "exec"))
    entry.write_bytes(hashlib.sha256(payload).digest() + payload)
    code = _code(source)
    assert _decode_with(code, consts, _block([{"a": 1, "b": None, "c": []}]), 1) == [(1, None, [])]


def test_unusable_directory_falls_back_to_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(CODE_CACHE_ENV, str(blocker / "cache"))
    source, consts = _source(SCHEMA)
    code = _code(source)
    assert _decode_with(code, consts, _block([{"a": -3, "b": "é", "c": [0.0, 2.0]}]), 1) == [
        (-3, "é", [0.0, 2.0])
    ]
    assert blocker.read_text() == "not a directory"


def test_empty_setting_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CODE_CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    _code(_source(SCHEMA)[0])
    assert list(tmp_path.iterdir()) == []


def test_default_directory_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CODE_CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _code(_source(SCHEMA)[0])
    entries = _entries(tmp_path / "icefloe" / "avro-decoders")
    assert len(entries) == 1
    digest = entries[0].name.split(".")[0]
    assert len(digest) == 64 and int(digest, 16) >= 0  # named by a SHA-256, not by the schema
