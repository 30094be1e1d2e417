"""The machinery of the fault-injection tests (see test_fault_injection.py for what runs).

A *trial* restores a small table from a template directory (same location, so every path in its
metadata stays valid), loads it through a `HarnessCatalog` whose FileIO and pointer calls are
counted, arms a `FaultPlan` ("fail the k-th FileIO call" or "fail the k-th catalog call", with
one of three fault kinds), runs one operation and then checks the table through a clean catalog:

1. it loads (through a clean catalog);
2. its rows are a committed state: the state before the operation or the state after it (the
   latter taken from a fault-free run of the same operation), never a mix — and exactly the
   state before when the operation reported a failure other than `CommitStateUnknownError`
   (a failed operation must not have committed), exactly the state after when it succeeded;
3. no file any snapshot, metadata-log entry or statistics entry references is missing;
4. when the operation failed without committing, running it again on the same `Table` object
   lands (the failed attempt left no stale state behind in the object);
5. ``remove_orphan_files(older_than=now)`` leaves exactly the referenced files;

and that the operation, when it failed, raised a typed `IcefloeError` (`CommitStateUnknownError`
when the fault made the outcome of the swap unknown), never a bare OSError or KeyError.
"""

from __future__ import annotations

import enum
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import pyarrow as pa

from icefloe.catalog._base import Identifier
from icefloe.catalog.memory import InMemoryCatalog
from icefloe.errors import CommitFailedError, CommitStateUnknownError, FileIOError, IcefloeError
from icefloe.io import FileInfo, FileIO, InputFile, OutputFile
from icefloe.io.local import local_path
from icefloe.manifest import read_manifest, read_manifest_list

IDENT: Identifier = ("ns", "t")
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()), ("v", pa.string())])


def rows(*ids: int, cat: str | None = None, v: str = "x") -> pa.Table:
    """Rows with the given ids; ``cat`` is "a" for odd ids and "b" for even ones unless given."""
    cats = [cat or ("a" if i % 2 else "b") for i in ids]
    return pa.table({"id": list(ids), "cat": cats, "v": [v] * len(ids)}, schema=SCHEMA)


class Kind(enum.Enum):
    """What the k-th call does.

    - ``RAISE``: fails before doing anything, with an I/O error (`FileIOError` from FileIO calls
      and ``OSError`` from a stream's write/close, as pyarrow streams raise; a catalog swap
      fails as a database error does, with `CommitFailedError`, a catalog load with
      `FileIOError`).
    - ``UNKNOWN_APPLIED``: the call takes effect (the file is written/deleted, the pointer is
      swapped), then the caller gets the error (`CommitStateUnknownError` from a swap).
    - ``UNKNOWN_NOT_APPLIED``: a swap that did not happen, reported as `CommitStateUnknownError`
      (for FileIO calls and catalog loads this is RAISE, so the sweeps skip it there).

    Against a SQL catalog's database (`sweep_sql`): RAISE fails ``connect()``/``begin()`` with
    SQLAlchemy's ``OperationalError``; the two unknown kinds fail a transaction's ``commit()``
    after committing it, or after rolling it back.
    """

    RAISE = "raise"
    UNKNOWN_APPLIED = "unknown-applied"
    UNKNOWN_NOT_APPLIED = "unknown-not-applied"


@dataclass
class FaultPlan:
    """Fail the ``k``-th call of ``layer`` (``"io"`` or ``"catalog"``) with ``kind``; k=0 never
    fails (a counting run). ``armed`` is off while the table is restored and loaded."""

    layer: str
    k: int
    kind: Kind
    armed: bool = False
    io_calls: int = 0
    catalog_calls: int = 0
    fired: str | None = None  # which call failed
    calls: list[str] = field(default_factory=list)

    def hit(self, layer: str, what: str) -> bool:
        """Count one call; True when this is the call to fail."""
        if not self.armed:
            return False
        if layer == "io":
            self.io_calls += 1
            n = self.io_calls
        else:
            self.catalog_calls += 1
            n = self.catalog_calls
        self.calls.append(f"{layer}:{what}")
        if layer == self.layer and n == self.k and self.fired is None:
            self.fired = what
            return True
        return False


def _io_error(what: str, location: str) -> FileIOError:
    return FileIOError(f"injected fault: {what} {location!r} failed", location=location, injected=True)


class _FaultyOutputStream:
    """An output stream whose write and close calls count (as pyarrow streams fail: OSError)."""

    def __init__(self, inner: IO[bytes], plan: FaultPlan, location: str) -> None:
        self._inner = inner
        self._plan = plan
        self._location = location
        self.closed = False

    def write(self, data: Any) -> int:
        if self._plan.hit("io", f"write {self._location}"):
            if self._plan.kind is Kind.UNKNOWN_APPLIED:
                self._inner.write(data)
            raise OSError(5, f"injected fault: write to {self._location} failed")
        return self._inner.write(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._plan.hit("io", f"close {self._location}"):
            # The handle goes either way (with RAISE the file may be incomplete on a real store).
            self._inner.close()
            raise OSError(5, f"injected fault: close of {self._location} failed")
        self._inner.close()

    def flush(self) -> None:
        self._inner.flush()

    def tell(self) -> int:
        return self._inner.tell()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def __enter__(self) -> _FaultyOutputStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _FaultyInput:
    def __init__(self, inner: InputFile, plan: FaultPlan) -> None:
        self._inner = inner
        self._plan = plan

    @property
    def location(self) -> str:
        return self._inner.location

    def __len__(self) -> int:
        return len(self._inner)

    def exists(self) -> bool:
        return self._inner.exists()

    def open(self, seekable: bool = True) -> IO[bytes]:
        if self._plan.hit("io", f"open {self.location}"):
            if self._plan.kind is Kind.UNKNOWN_APPLIED:
                self._inner.open(seekable).close()
            raise _io_error("open", self.location)
        return self._inner.open(seekable)


class _FaultyOutput:
    def __init__(self, inner: OutputFile, plan: FaultPlan) -> None:
        self._inner = inner
        self._plan = plan

    @property
    def location(self) -> str:
        return self._inner.location

    def exists(self) -> bool:
        return self._inner.exists()

    def create(self, overwrite: bool = False) -> IO[bytes]:
        if self._plan.hit("io", f"create {self.location}"):
            if self._plan.kind is Kind.UNKNOWN_APPLIED:
                self._inner.create(overwrite).close()
            raise _io_error("create", self.location)
        return _FaultyOutputStream(self._inner.create(overwrite), self._plan, self.location)  # type: ignore[return-value]


class FaultyFileIO:
    """Counts (and fails, per the plan) new_input, new_output, open, create, write, close,
    delete and list_prefix of ``inner``."""

    def __init__(self, inner: FileIO, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan
        self.properties: Mapping[str, str] = inner.properties

    def new_input(self, location: str) -> InputFile:
        if self.plan.hit("io", f"new_input {location}"):
            raise _io_error("new_input", location)
        return _FaultyInput(self.inner.new_input(location), self.plan)

    def new_output(self, location: str) -> OutputFile:
        if self.plan.hit("io", f"new_output {location}"):
            raise _io_error("new_output", location)
        return _FaultyOutput(self.inner.new_output(location), self.plan)

    def delete(self, location: str) -> None:
        if self.plan.hit("io", f"delete {location}"):
            if self.plan.kind is Kind.UNKNOWN_APPLIED:
                self.inner.delete(location)
            raise _io_error("delete", location)
        self.inner.delete(location)

    def exists(self, location: str) -> bool:
        return self.inner.exists(location)

    def list_prefix(self, prefix: str, *, recursive: bool = True) -> Iterator[FileInfo]:
        if self.plan.hit("io", f"list {prefix}"):
            raise _io_error("list", prefix)
        return self.inner.list_prefix(prefix, recursive=recursive)  # type: ignore[attr-defined,no-any-return]


class HarnessCatalog(InMemoryCatalog):
    """An in-memory catalog whose pointer loads and swaps count as catalog calls and whose
    FileIO is a `FaultyFileIO`, all following one `FaultPlan`."""

    def __init__(self, plan: FaultPlan, warehouse: str) -> None:
        super().__init__("faults", warehouse=warehouse)
        self.plan = plan

    def _io(self, location: str) -> FileIO:
        return FaultyFileIO(super()._io(location), self.plan)

    def _load_pointer(self, identifier: Identifier) -> str | None:
        if self.plan.hit("catalog", "load"):
            raise _io_error("load of the pointer of", ".".join(identifier))
        return super()._load_pointer(identifier)

    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        plan = self.plan
        if not plan.hit("catalog", "swap"):
            super()._swap_pointer(identifier, expected, new)
            return
        name = ".".join(identifier)
        if plan.kind is Kind.RAISE:
            raise CommitFailedError(
                f"injected fault: the database failed before committing {name!r}", identifier=identifier
            )
        if plan.kind is Kind.UNKNOWN_APPLIED:
            super()._swap_pointer(identifier, expected, new)
        raise CommitStateUnknownError(
            f"injected fault: commit of {name!r} timed out ({plan.kind.value})",
            identifier=identifier,
            metadata_location=new,
        )


# ---------------------------------------------------------------------- independent checks
def _local(location: str) -> str:
    return os.path.normpath(local_path(location))


def referenced(table: Any) -> set[str]:
    """Every file the table's metadata references: metadata files (current and logged), and for
    every snapshot its manifest list, manifests and live content files; statistics files."""
    md = table.metadata
    out = {_local(table.metadata_location)} | {_local(e.metadata_file) for e in md.metadata_log}
    for s in md.snapshots:
        out.add(_local(s.manifest_list))
        if not os.path.exists(_local(s.manifest_list)):
            continue  # reported as missing
        for m in read_manifest_list(table.io, s.manifest_list, cache=False):
            out.add(_local(m.manifest_path))
            if not os.path.exists(_local(m.manifest_path)):
                continue
            for e in read_manifest(table.io, m, cache=False):
                if e.is_live:
                    out.add(_local(e.data_file.file_path))
    for st in (*md.statistics, *md.partition_statistics):
        out.add(_local(st["statistics-path"]))
    return out


def files_under(location: str) -> set[str]:
    out = set()
    for d, _, names in os.walk(_local(location)):
        out |= {os.path.normpath(os.path.join(d, n)) for n in names}
    return out


def rows_of(table: Any) -> list[tuple[Any, ...]]:
    """The current rows of the main branch, as sorted tuples of (column, value) pairs."""
    data: pa.Table = table.scan().to_arrow()
    return sorted(tuple(sorted(r.items())) for r in data.to_pylist())


# ---------------------------------------------------------------------- templates and trials
@dataclass
class Template:
    """A table saved at ``saved`` that trials restore to ``location`` (its own location)."""

    name: str
    location: str
    saved: str
    metadata_location: str
    warehouse: str
    rows: list[tuple[Any, ...]]


def save_template(name: str, table: Any, saved: str, warehouse: str) -> Template:
    location = _local(table.location)
    shutil.copytree(location, saved)
    return Template(name, location, saved, table.metadata_location, warehouse, rows_of(table))


def restore(template: Template) -> None:
    shutil.rmtree(template.location, ignore_errors=True)
    shutil.copytree(template.saved, template.location)


Operation = Callable[[Any], object]


@dataclass
class Outcome:
    """What one trial did: the call that failed (None: the operation ran past the last call),
    the error the operation raised, and the calls it made."""

    fired: str | None
    error: BaseException | None
    io_calls: int
    catalog_calls: int
    pointer: str
    retry: Callable[[], str] | None = None  # runs the operation again, fault-free; the new pointer


def run(template: Template, op: Operation, plan: FaultPlan) -> tuple[Outcome, HarnessCatalog]:
    restore(template)
    cat = HarnessCatalog(plan, template.warehouse)
    cat._tables[IDENT] = template.metadata_location
    table = cat.load_table(IDENT)
    plan.armed = True
    error: BaseException | None = None
    try:
        op(table)
    except Exception as e:  # judged by check()
        error = e
    plan.armed = False
    pointer = cat._tables[IDENT]

    def retry() -> str:
        op(table)  # the same Table object the failed attempt used
        return cat._tables[IDENT]

    return Outcome(plan.fired, error, plan.io_calls, plan.catalog_calls, pointer, retry), cat


def clean_table(template: Template, pointer: str) -> Any:
    cat = InMemoryCatalog("check", warehouse=template.warehouse)
    cat._tables[IDENT] = pointer
    return cat.load_table(IDENT)


def check(template: Template, plan: FaultPlan, out: Outcome, after: list[tuple[Any, ...]]) -> None:
    """The checks of the module docstring and the typing of the error (AssertionError naming
    the trial)."""
    where = f"{template.name}: {plan.layer} call {plan.k} ({out.fired}) {plan.kind.value}"
    err = out.error
    if err is not None:
        assert isinstance(err, IcefloeError), f"{where}: untyped {type(err).__name__}: {err}"
        if plan.layer == "catalog" and out.fired == "swap" and plan.kind is not Kind.RAISE:
            assert isinstance(err, CommitStateUnknownError), f"{where}: {type(err).__name__}: {err}"
    table = clean_table(template, out.pointer)  # (1) it loads
    rows = rows_of(table)
    if err is None:
        assert rows == after, f"{where}: the operation succeeded but the rows are not its result"
    elif isinstance(err, CommitStateUnknownError):
        assert rows in (template.rows, after), f"{where}: rows are not a committed state"
    else:
        assert out.pointer == template.metadata_location, (
            f"{where}: the operation failed ({type(err).__name__}: {err}) but committed"
        )
        assert rows == template.rows, f"{where}: rows changed though nothing was committed"
    refs = referenced(table)  # (3) nothing referenced is missing
    missing = sorted(p for p in refs if not os.path.exists(p))
    assert not missing, f"{where}: referenced files are gone: {missing[:3]}"
    if err is not None and not isinstance(err, CommitStateUnknownError) and out.retry is not None:
        # Nothing was committed, so running the operation again on the same object must land.
        try:
            pointer = out.retry()
        except Exception as e:
            raise AssertionError(f"{where}: the retry of the failed operation raised {e!r}") from e
        table = clean_table(template, pointer)
        assert rows_of(table) == after, f"{where}: the retry of the failed operation did not land"
        refs = referenced(table)
    time.sleep(0.002)
    table.maintenance.remove_orphan_files(older_than=time.time_ns() // 1_000_000)  # (5)
    extra = files_under(template.location) - refs
    assert not extra, f"{where}: files left after orphan removal: {sorted(extra)[:3]}"


# ---------------------------------------------------------------------- sweeps
IO_KINDS = (Kind.RAISE, Kind.UNKNOWN_APPLIED)
CATALOG_KINDS = (Kind.RAISE, Kind.UNKNOWN_APPLIED, Kind.UNKNOWN_NOT_APPLIED)


@dataclass
class Figures:
    """What a sweep of one operation ran: trials (a fault fired and the checks ran) per layer and
    kind, the calls of a fault-free run, and the failed checks."""

    operation: str
    io_calls: int = 0
    catalog_calls: int = 0
    trials: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.trials.values())


#: Every sweep of the session, for the summary at the end (conftest.py prints it).
RESULTS: list[Figures] = []


def _ks(n: int, exhaustive: bool, samples: int, seed: int) -> Iterator[int]:
    if exhaustive:
        k = 1
        while True:
            yield k
            k += 1
    import random

    rnd = random.Random(seed)
    picked = {1, n} | set(rnd.sample(range(1, n + 1), min(n, samples)))
    yield from sorted(picked)


def sweep(template: Template, name: str, op: Operation, *, exhaustive: bool, samples: int) -> Figures:
    """Fail each chosen k-th FileIO call (every k with ``exhaustive``, else 1, the last and
    ``samples`` random ones) and every k-th catalog call, with each fault kind, and check each
    trial. The k sweep of an exhaustive run stops at the first k the operation never reaches."""
    figures = Figures(name)
    plan = FaultPlan("none", 0, Kind.RAISE)
    out, _ = run(template, op, plan)
    assert out.error is None, f"{name} fails without a fault: {out.error!r}"
    after = rows_of(clean_table(template, out.pointer))
    check(template, plan, out, after)
    figures.io_calls, figures.catalog_calls = out.io_calls, out.catalog_calls
    for layer, n, kinds in (("io", out.io_calls, IO_KINDS), ("catalog", out.catalog_calls, CATALOG_KINDS)):
        for kind in kinds:
            key = f"{layer}/{kind.value}"
            figures.trials[key] = 0
            every = exhaustive or layer == "catalog"
            for k in _ks(n, every, samples, zlib.crc32(f"{name}/{key}".encode())):
                plan = FaultPlan(layer, k, kind)
                out, _ = run(template, op, plan)
                if out.fired is None:
                    if every:
                        break
                    continue
                if layer == "catalog" and kind is not Kind.RAISE and out.fired != "swap":
                    continue  # a failed pointer load is the same under every kind
                figures.trials[key] += 1
                try:
                    check(template, plan, out, after)
                except AssertionError as e:
                    figures.failures.append(str(e).split("\n")[0])
                if k > 4 * n + 100:
                    figures.failures.append(f"{name}: {key} never completes (k={k})")
                    break
    RESULTS.append(figures)
    return figures


def digest(dict_rows: Iterable[Mapping[str, Any]]) -> str:
    """A digest of a set of rows (dicts), equal for equal row multisets in any order."""
    import hashlib

    canon = sorted(tuple(sorted(r.items())) for r in dict_rows)
    return hashlib.sha1(repr(canon).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------- the SQL catalog's database
class _FaultyTransaction:
    def __init__(self, inner: Any, plan: FaultPlan) -> None:
        self._inner = inner
        self._plan = plan

    def commit(self) -> None:
        if self._plan.hit("catalog", "db commit"):
            if self._plan.kind is Kind.UNKNOWN_APPLIED:
                self._inner.commit()
            else:
                self._inner.rollback()
            raise _db_error("commit")
        self._inner.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _FaultyConnection:
    def __init__(self, inner: Any, plan: FaultPlan) -> None:
        self._inner = inner
        self._plan = plan

    def begin(self) -> _FaultyTransaction:
        return _FaultyTransaction(self._inner.begin(), self._plan)

    def __enter__(self) -> _FaultyConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _FaultyEngine:
    """Fails ``connect()``/``begin()`` (the database is unreachable: RAISE) or a transaction's
    commit (the commit happened or not, and the client gets the error either way)."""

    def __init__(self, inner: Any, plan: FaultPlan) -> None:
        self._inner = inner
        self._plan = plan

    def connect(self) -> _FaultyConnection:
        if self._plan.hit("catalog", "db connect"):
            raise _db_error("connect")
        return _FaultyConnection(self._inner.connect(), self._plan)

    def begin(self) -> Any:
        if self._plan.hit("catalog", "db begin"):
            raise _db_error("begin")
        return self._inner.begin()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _db_error(what: str) -> Exception:
    from sqlalchemy.exc import OperationalError

    return OperationalError(f"injected fault: {what}", None, Exception("the database went away"))


def sql_catalog(plan: FaultPlan, template: Template, db: str) -> Any:
    """A SQL (SQLite) catalog holding the template's table, whose database calls follow ``plan``."""
    import icefloe

    if os.path.exists(db):
        os.remove(db)
    cat = icefloe.load_catalog("faults", type="sql", uri=f"sqlite:///{db}", warehouse=template.warehouse)
    cat.create_namespace(IDENT[:-1])
    cat.register_table(IDENT, template.metadata_location)
    cat._engine = _FaultyEngine(cat._engine, plan)
    return cat


def run_sql(template: Template, op: Operation, plan: FaultPlan, db: str) -> Outcome:
    """`run` through a SQL catalog whose database fails per ``plan`` (layer ``"catalog"``)."""
    restore(template)
    cat = sql_catalog(plan, template, db)
    table = cat.load_table(IDENT)
    plan.armed = True
    error: BaseException | None = None
    try:
        op(table)
    except Exception as e:  # judged by check()
        error = e
    plan.armed = False
    pointer = cat._load_pointer(IDENT)

    def retry() -> str:
        op(table)
        return str(cat._load_pointer(IDENT))

    return Outcome(plan.fired, error, plan.io_calls, plan.catalog_calls, pointer, retry)


def sweep_sql(template: Template, name: str, op: Operation, db: str) -> Figures:
    """Every k-th database call of the operation through a SQL catalog, with each fault kind."""
    figures = Figures(f"{name} (SQL catalog database)")
    plan = FaultPlan("none", 0, Kind.RAISE)
    out = run_sql(template, op, plan, db)
    assert out.error is None, f"{name} fails without a fault: {out.error!r}"
    after = rows_of(clean_table(template, out.pointer))
    figures.catalog_calls = out.catalog_calls
    for kind in CATALOG_KINDS:
        key = f"db/{kind.value}"
        figures.trials[key] = 0
        k = 0
        while True:
            k += 1
            plan = FaultPlan("catalog", k, kind)
            out = run_sql(template, op, plan, db)
            if out.fired is None:
                break
            if kind is not Kind.RAISE and out.fired != "db commit":
                continue  # a failed connect is the same under every kind
            figures.trials[key] += 1
            try:
                check_sql(template, plan, out, after)
            except AssertionError as e:
                figures.failures.append(str(e).split("\n")[0])
            if k > 4 * figures.catalog_calls + 20:
                figures.failures.append(f"{name}: {key} never completes (k={k})")
                break
    RESULTS.append(figures)
    return figures


def check_sql(template: Template, plan: FaultPlan, out: Outcome, after: list[tuple[Any, ...]]) -> None:
    """`check`, where an unknown commit is one whose database commit failed (not a connect)."""
    if out.fired == "db commit" and plan.kind is not Kind.RAISE and out.error is not None:
        where = f"{template.name}: db call {plan.k} ({out.fired}) {plan.kind.value}"
        assert isinstance(out.error, IcefloeError), f"{where}: untyped {type(out.error).__name__}"
    check(template, plan, out, after)
