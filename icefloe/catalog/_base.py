"""The `Catalog` contract and the behaviour every catalog shares.

A catalog maps table identifiers to the location of each table's current metadata file and
keeps namespaces with their properties. Concrete catalogs implement a handful of pointer
primitives (load, insert, swap, delete, rename) plus namespace storage; everything that reads or
writes metadata files lives here, once, so that all catalogs behave alike.

The commit path (`Catalog.commit_table`)::

    load pointer -> read base metadata -> validate requirements -> apply updates
      -> write NNNNN-<uuid>.metadata.json (exclusive create, NNNNN = previous + 1)
      -> compare-and-swap the pointer (the only atomic step)
           lost  -> delete the new file, CommitFailedError (retryable)
           unknown -> keep the new file, CommitStateUnknownError
"""

from __future__ import annotations

import difflib
import posixpath
import threading
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.catalog._files import (
    delete_files,
    metadata_file_location,
    parse_metadata_version,
    read_metadata_file,
    removed_metadata_files,
    write_metadata_file,
)
from icefloe.catalog._purge import PurgePlan, PurgeReport, plan_purge
from icefloe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    PartitionSpecError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO, load_file_io
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.spec.partition import PartitionSpec
    from icefloe.spec.sort_order import SortOrder
    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.spec.updates import MetadataUpdate, TableRequirement
    from icefloe.table import Table

__all__ = [
    "Catalog",
    "Identifier",
    "IdentifierLike",
    "Namespace",
    "NamespaceLike",
    "PropertiesUpdateSummary",
    "TableCommit",
    "to_identifier",
    "to_namespace",
]

Namespace = tuple[str, ...]
Identifier = tuple[str, ...]
NamespaceLike = str | Sequence[str]
IdentifierLike = str | Sequence[str]

WAREHOUSE = "warehouse"
LOCATION = "location"


@dataclass(frozen=True)
class PropertiesUpdateSummary:
    """What `update_namespace_properties` did: keys removed, keys set, and removals of keys that
    were not there."""

    removed: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TableCommit:
    """One table's share of a multi-table commit (`Catalog.commit_tables`): what must still hold
    and what to change, as in `Catalog.commit_table`."""

    identifier: Identifier
    requirements: Sequence[TableRequirement] = ()
    updates: Sequence[MetadataUpdate] = ()


# Names become path segments of table locations (<warehouse>/<namespace levels>/<table>), so a
# name must be one segment that stays where it is put. Java's catalogs leave this to the file
# system; here a name that could climb out of the warehouse never reaches a FileIO.
_NAME_HINT = (
    "namespace and table names become directories of the warehouse: use names without '/' or "
    "'\\' and without control characters, other than '.' and '..' (letters of any script, digits, "
    "spaces, '-', '_' are fine)"
)


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a namespace level or table name, or None when it can."""
    if name in (".", ".."):
        return f"{name!r} is a relative path segment"
    for sep in ("/", "\\"):
        if sep in name:
            return f"it contains the path separator {sep!r}"
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cs"):
            return f"it contains the control character {ch!r}"
    return None


def _check_name(name: object, kind: str, whole: object) -> str:
    if not isinstance(name, str) or not name:
        raise ValidationError(
            f"invalid {kind} name in {whole!r}: names must be non-empty strings",
            hint="write namespaces as 'db' or 'db.schema' and tables as 'db.table', or as tuples "
            "('db', 'table')",
            name=name,
        )
    problem = _name_problem(name)
    if problem is not None:
        raise ValidationError(f"invalid {kind} name {name!r}: {problem}", hint=_NAME_HINT, name=name)
    return name


def to_namespace(namespace: NamespaceLike) -> Namespace:
    """``"a.b"`` or ``("a", "b")`` -> ``("a", "b")``; ``""`` / ``()`` is the root.

    Every level must be a non-empty string that is a single, safe path segment (no '/', '\\',
    control characters, not '.' or '..'); a level cannot contain '.' either. `ValidationError`
    otherwise."""
    if isinstance(namespace, str):
        levels: tuple[Any, ...] = tuple(namespace.split(".")) if namespace else ()
    else:
        levels = tuple(namespace)
    for level in levels:
        _check_name(level, "namespace", namespace)
        if "." in level:
            raise ValidationError(
                f"invalid namespace level {level!r}: a level cannot contain '.'",
                hint="catalogs store namespaces joined by '.', the way Iceberg's JDBC catalog does",
                name=level,
            )
    return levels


def to_identifier(identifier: IdentifierLike) -> Identifier:
    """``"ns.tbl"``, ``"a.b.tbl"`` or ``("a", "b", "tbl")`` -> a tuple whose last element is the
    table name and whose other elements are the namespace levels.

    The table name follows the rules of namespace levels (`to_namespace`) except that it may
    contain '.' (``("db", "a.b")`` is table ``a.b``); `ValidationError` otherwise."""
    if isinstance(identifier, str):
        parts: tuple[Any, ...] = tuple(identifier.split("."))
    else:
        parts = tuple(identifier)
    if len(parts) < 2:
        raise ValidationError(
            f"invalid table identifier {identifier!r}",
            hint="name tables with their namespace: 'db.table' or ('db', 'table')",
        )
    to_namespace(parts[:-1])
    _check_name(parts[-1], "table", identifier)
    return parts


def _location_below(parent: str, *names: str) -> str:
    """``parent/name/...``, refused with `ValidationError` unless the result, normalised, lies
    strictly below ``parent`` (normalised too): a default location cannot leave its namespace's
    location, whatever the names hold."""
    base = parent.rstrip("/")
    location = "/".join([base, *names])
    if not _is_below(location, base):
        raise ValidationError(
            f"the location {location!r} would not lie inside {parent!r}",
            hint=_NAME_HINT,
            location=location,
            parent=parent,
        )
    return location


def _normalised(location: str) -> tuple[str, str]:
    scheme, sep, rest = location.partition("://")
    if not sep:
        scheme, rest = "", location
    path = rest.replace("\\", "/")
    return scheme.lower(), posixpath.normpath(path) if path else path


def _is_below(child: str, parent: str) -> bool:
    child_scheme, child_path = _normalised(child)
    parent_scheme, parent_path = _normalised(parent)
    if child_scheme != parent_scheme:
        return False
    prefix = parent_path if parent_path.endswith("/") else parent_path + "/"
    return child_path.startswith(prefix) and len(child_path) > len(prefix)


def child_namespaces(known: Iterable[Namespace], parent: Namespace) -> list[Namespace]:
    """The direct children of ``parent`` among every namespace that exists explicitly or through
    its tables (``("a", "b", "c")`` makes ``("a",)`` and ``("a", "b")`` exist too, as in Java's
    JDBC catalog)."""
    depth = len(parent) + 1
    children = {ns[:depth] for ns in known if len(ns) >= depth and ns[: len(parent)] == parent}
    return sorted(children)


def _dotted(levels: Sequence[str]) -> str:
    return ".".join(levels)


class Catalog(ABC):
    """A catalog of Iceberg tables, grouped in namespaces.

    ``commit_table`` is the only way a table changes, and its pointer swap is the only
    compare-and-swap in icefloe; transactions retry on `CommitFailedError`.
    """

    def __init__(self, name: str, **properties: str) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"invalid catalog name {name!r}", hint="pass a non-empty string")
        self.name = name
        self.properties: dict[str, str] = {k: str(v) for k, v in properties.items()}
        #: which files ``drop_table(purge=True)`` may delete (None: every file the table
        #: references); a REST server sets it to its allowed locations
        self.purge_filter: Callable[[str], bool] | None = None
        self._io_lock = threading.Lock()
        self._ios: dict[str, FileIO] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # noqa: B027 - most catalogs hold nothing to release
        """Release connections; the catalog is unusable afterwards."""

    # ------------------------------------------------------------------ namespaces
    @abstractmethod
    def create_namespace(self, namespace: NamespaceLike, properties: Mapping[str, str] | None = None) -> None:
        """Create a namespace; `NamespaceAlreadyExistsError` if it exists."""

    def create_namespace_if_not_exists(
        self, namespace: NamespaceLike, properties: Mapping[str, str] | None = None
    ) -> bool:
        """Create a namespace unless it exists (then its properties are left as they are);
        returns whether it was created. Safe to run again, and against a concurrent creator."""
        from icefloe.errors import NamespaceAlreadyExistsError

        if self.namespace_exists(namespace):
            return False
        try:
            self.create_namespace(namespace, properties)
        except NamespaceAlreadyExistsError:
            return False
        return True

    @abstractmethod
    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Namespace]:
        """Direct children of ``parent`` (top-level namespaces for the root)."""

    @abstractmethod
    def drop_namespace(self, namespace: NamespaceLike) -> None:
        """Drop an empty namespace; `NamespaceNotEmptyError` while it holds tables or namespaces."""

    @abstractmethod
    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]: ...

    @abstractmethod
    def update_namespace_properties(
        self,
        namespace: NamespaceLike,
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary: ...

    @abstractmethod
    def namespace_exists(self, namespace: NamespaceLike) -> bool: ...

    @abstractmethod
    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]: ...

    # ------------------------------------------------------------------ pointer primitives
    @abstractmethod
    def _load_pointer(self, identifier: Identifier) -> str | None:
        """Current metadata location of a table, None when there is no such table."""

    @abstractmethod
    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        """Add a table; `TableAlreadyExistsError` if the identifier is taken."""

    @abstractmethod
    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        """Atomically replace ``expected`` with ``new``. `CommitFailedError` when the pointer is no
        longer ``expected``; `CommitStateUnknownError` when the outcome cannot be known."""

    @abstractmethod
    def _delete_pointer(self, identifier: Identifier) -> bool:
        """Remove a table; False if it was not there."""

    @abstractmethod
    def _rename_pointer(self, source: Identifier, target: Identifier) -> None: ...

    def _swap_pointers(self, swaps: Sequence[tuple[Identifier, str, str]]) -> None:
        """Replace the pointers of several tables in one atomic step (``(identifier, expected,
        new)`` each): all or none. Catalogs that cannot do this leave it unimplemented."""
        raise UnsupportedFeatureError(
            f"catalog {self.name!r} ({type(self).__name__}) cannot commit several tables atomically",
            hint="commit each table on its own, or use a SQL, in-memory or REST catalog",
        )

    # ------------------------------------------------------------------ helpers
    def _io(self, location: str) -> FileIO:
        scheme = location.split("://", 1)[0] if "://" in location else "file"
        with self._io_lock:
            io = self._ios.get(scheme)
            if io is None:
                io = load_file_io(self.properties, location)
                self._ios[scheme] = io
            return io

    def _require_namespace(self, namespace: Namespace) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(
                f"namespace {_dotted(namespace)!r} does not exist in catalog {self.name!r}",
                hint=f"create it first: catalog.create_namespace({_dotted(namespace)!r})",
                namespace=namespace,
            )

    def _check_droppable(self, namespace: Namespace) -> None:
        """Shared checks of drop_namespace: it exists, and holds neither tables nor namespaces."""
        self._require_namespace(namespace)
        tables = self.list_tables(namespace)
        if tables:
            names = ", ".join(t[-1] for t in tables[:5]) + (" ..." if len(tables) > 5 else "")
            raise NamespaceNotEmptyError(
                f"namespace {_dotted(namespace)!r} is not empty: {len(tables)} table(s) ({names})",
                hint="drop or rename its tables first",
                namespace=namespace,
            )
        children = self.list_namespaces(namespace)
        if children:
            raise NamespaceNotEmptyError(
                f"namespace {_dotted(namespace)!r} has child namespaces: "
                + ", ".join(_dotted(c) for c in children),
                hint="drop the child namespaces first",
                namespace=namespace,
            )

    def _no_such_table(self, identifier: Identifier) -> NoSuchTableError:
        namespace, name = identifier[:-1], identifier[-1]
        hint: str | None = None
        try:
            known = self.list_tables(namespace) if self.namespace_exists(namespace) else None
        except NoSuchNamespaceError:
            known = None
        if known is None:
            hint = f"namespace {_dotted(namespace)!r} does not exist either"
        else:
            similar = difflib.get_close_matches(name, [t[-1] for t in known], n=3, cutoff=0.6)
            if similar:
                hint = "did you mean " + " or ".join(repr(_dotted((*namespace, s))) for s in similar) + "?"
            elif known:
                hint = f"tables in {_dotted(namespace)!r}: " + ", ".join(t[-1] for t in known[:10])
            else:
                hint = f"namespace {_dotted(namespace)!r} has no tables"
        return NoSuchTableError(
            f"table {_dotted(identifier)!r} does not exist in catalog {self.name!r}",
            hint=hint,
            identifier=identifier,
        )

    def _table(self, identifier: Identifier, metadata: TableMetadata, metadata_location: str) -> Table:
        from icefloe.table import Table

        return Table(identifier, metadata, metadata_location, self._io(metadata_location), self)

    def _read(self, metadata_location: str) -> TableMetadata:
        return read_metadata_file(self._io(metadata_location), metadata_location)

    def _default_location(self, identifier: Identifier) -> str:
        namespace, name = identifier[:-1], identifier[-1]
        ns_location = self.load_namespace_properties(namespace).get(LOCATION)
        if ns_location:
            return _location_below(ns_location, name)
        warehouse = self.properties.get(WAREHOUSE)
        if not warehouse:
            raise ConfigError(
                f"catalog {self.name!r} has no 'warehouse' property, so table "
                f"{_dotted(identifier)!r} needs an explicit location",
                hint="set warehouse='file:///path/to/warehouse' (or s3://bucket/prefix) on the catalog, "
                "or pass location= to create_table",
            )
        # Java's JdbcCatalog layout: <warehouse>/<ns level>/.../<table>
        ns_location = _location_below(warehouse, *namespace) if namespace else warehouse
        return _location_below(ns_location, name)

    # ------------------------------------------------------------------ tables
    def table_exists(self, identifier: IdentifierLike) -> bool:
        return self._load_pointer(to_identifier(identifier)) is not None

    def load_table(self, identifier: IdentifierLike) -> Table:
        ident = to_identifier(identifier)
        location = self._load_pointer(ident)
        if location is None:
            raise self._no_such_table(ident)
        return self._table(ident, self._read(location), location)

    def create_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Create a table with fresh field ids (as Java does), a partition spec from
        ``partition_by`` (``["day(ts)", "bucket(16, id)"]`` or a `PartitionSpec` over ``schema``)
        and format version 2 unless ``properties["format-version"]`` says otherwise."""
        ident = to_identifier(identifier)
        self._require_namespace(ident[:-1])
        if self._load_pointer(ident) is not None:
            raise TableAlreadyExistsError(
                f"table {_dotted(ident)!r} already exists in catalog {self.name!r}",
                hint="load it with load_table, or drop it first",
                identifier=ident,
            )
        table_location = (location or self._default_location(ident)).rstrip("/")
        metadata = _new_table_metadata(schema, partition_by, sort_order, table_location, properties)
        metadata_location = metadata_file_location(metadata, 0)
        io = self._io(metadata_location)
        write_metadata_file(io, metadata_location, metadata)
        try:
            self._insert_pointer(ident, metadata_location)
        except TableAlreadyExistsError:
            delete_files(io, [metadata_location])
            raise
        return self._table(ident, metadata, metadata_location)

    def stage_create_table(
        self,
        identifier: IdentifierLike,
        schema: Schema | pa.Schema,
        partition_by: Sequence[str] | PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> TableMetadata:
        """The metadata `create_table` would write, without writing it or adding the table (the
        start of a create transaction: commit it with an `AssertCreate` requirement)."""
        ident = to_identifier(identifier)
        self._require_namespace(ident[:-1])
        if self._load_pointer(ident) is not None:
            raise TableAlreadyExistsError(
                f"table {_dotted(ident)!r} already exists in catalog {self.name!r}",
                hint="load it with load_table, or drop it first",
                identifier=ident,
            )
        table_location = (location or self._default_location(ident)).rstrip("/")
        return _new_table_metadata(schema, partition_by, sort_order, table_location, properties)

    def register_table(
        self, identifier: IdentifierLike, metadata_location: str, overwrite: bool = False
    ) -> Table:
        """Add an existing table (for example one written by another catalog) by its metadata file.
        With ``overwrite`` an existing table of that name is pointed at ``metadata_location``
        instead (its files are left alone)."""
        return self._register(to_identifier(identifier), metadata_location, overwrite)

    def _register(
        self,
        ident: Identifier,
        metadata_location: str,
        overwrite: bool,
        metadata: TableMetadata | None = None,
    ) -> Table:
        """register_table, given the metadata already read from ``metadata_location`` when the
        caller has it (the REST server checks it before registering)."""
        self._require_namespace(ident[:-1])
        current = self._load_pointer(ident)
        if current is not None and not overwrite:
            raise TableAlreadyExistsError(
                f"table {_dotted(ident)!r} already exists in catalog {self.name!r}",
                hint="register it under another name, or drop the existing table first",
                identifier=ident,
            )
        if metadata is None:
            metadata = self._read(metadata_location)
        if current is not None:
            self._swap_pointer(ident, current, metadata_location)
        else:
            self._insert_pointer(ident, metadata_location)
        return self._table(ident, metadata, metadata_location)

    def drop_table(self, identifier: IdentifierLike, purge: bool = False) -> PurgeReport | None:
        """Remove a table from the catalog. With ``purge`` also delete every file its metadata
        references (data and delete files, manifests, manifest lists, statistics, metadata
        files); files are found through the metadata, never by listing.

        Returns None without ``purge``, else a `PurgeReport`. Damaged or missing manifest lists,
        manifests or metadata files do not stop a purge: the table is dropped, what can be
        reached is deleted, and the report lists the files it could not read (``unreadable``)
        or delete (``not_deleted``); ``report.complete`` tells whether nothing was left behind."""
        ident = to_identifier(identifier)
        location = self._load_pointer(ident)
        if location is None:
            raise self._no_such_table(ident)
        plan: PurgePlan | None = None
        if purge:
            plan = plan_purge(self._io(location), location)  # read everything before dropping
            if self.purge_filter is not None:
                plan.restrict(self.purge_filter)
        if not self._delete_pointer(ident):
            raise self._no_such_table(ident)
        return None if plan is None else plan.execute()

    def rename_table(self, from_identifier: IdentifierLike, to_identifier_: IdentifierLike) -> Table:
        """Rename (or move to another namespace); files stay where they are."""
        source, target = to_identifier(from_identifier), to_identifier(to_identifier_)
        if self._load_pointer(source) is None:
            raise self._no_such_table(source)
        if source == target:
            return self.load_table(source)
        self._require_namespace(target[:-1])
        if self._load_pointer(target) is not None:
            raise TableAlreadyExistsError(
                f"cannot rename {_dotted(source)!r}: table {_dotted(target)!r} already exists",
                hint="drop the target first or choose another name",
                identifier=target,
            )
        self._rename_pointer(source, target)
        return self.load_table(target)

    def commit_table(
        self,
        identifier: IdentifierLike,
        requirements: Iterable[TableRequirement],
        updates: Iterable[MetadataUpdate],
    ) -> tuple[TableMetadata, str]:
        """Apply ``updates`` if every requirement still holds, and make the result current with one
        compare-and-swap. Returns the new metadata and its location.

        Raises `CommitFailedError` (retryable) when a requirement fails or another writer won the
        swap (the new metadata file is deleted), and `CommitStateUnknownError` when the catalog
        cannot tell whether the swap happened (the new file is kept: it may be current now).
        """
        from icefloe.spec.updates import AssertCreate, apply_updates

        ident = to_identifier(identifier)
        requirements, updates = list(requirements), list(updates)
        current_location = self._load_pointer(ident)
        if current_location is None:
            if any(isinstance(r, AssertCreate) for r in requirements):
                return self._commit_create(ident, requirements, updates)
            raise self._no_such_table(ident)
        base = self._read(current_location)
        try:
            for requirement in requirements:
                requirement.validate(base)
        except CommitFailedError as e:
            # What the table is now, so that the commit retry loop need not read it again.
            e.context.setdefault("current_metadata", base)
            e.context.setdefault("current_location", current_location)
            raise
        if not updates:
            return base, current_location
        new_metadata = apply_updates(base, updates, current_location)
        new_location = metadata_file_location(new_metadata, parse_metadata_version(current_location) + 1)
        io = self._io(new_location)
        write_metadata_file(io, new_location, new_metadata)
        try:
            self._swap_pointer(ident, current_location, new_location)
        except CommitFailedError:
            delete_files(io, [new_location])
            raise
        self._delete_removed_metadata(io, base, new_metadata)
        return new_metadata, new_location

    def _delete_removed_metadata(self, io: FileIO, base: TableMetadata, new: TableMetadata) -> None:
        """After a commit landed: delete the metadata files it dropped from the log, when the
        table asks for it (``write.metadata.delete-after-commit.enabled``), best-effort."""
        removed = removed_metadata_files(base, new)
        if self.purge_filter is not None:
            removed = [p for p in removed if self.purge_filter(p)]
        if removed:
            delete_files(io, removed)

    def _commit_create(
        self, ident: Identifier, requirements: list[TableRequirement], updates: list[MetadataUpdate]
    ) -> tuple[TableMetadata, str]:
        """A commit that creates the table (requirement `AssertCreate`, as in the REST protocol):
        the insert of the pointer is the atomic step."""
        from icefloe.spec.updates import apply_updates

        self._require_namespace(ident[:-1])
        for requirement in requirements:
            requirement.validate(None)
        metadata = apply_updates(None, updates)
        location = metadata_file_location(metadata, 0)
        io = self._io(location)
        write_metadata_file(io, location, metadata)
        try:
            self._insert_pointer(ident, location)
        except TableAlreadyExistsError as e:
            delete_files(io, [location])
            raise CommitFailedError(
                f"table {_dotted(ident)!r} was created by another commit",
                hint="load the existing table, or drop it before creating it again",
                identifier=ident,
            ) from e
        return metadata, location

    def commit_tables(self, commits: Sequence[TableCommit]) -> list[tuple[TableMetadata, str]]:
        """Commit changes to several tables atomically: either every table moves or none does.

        Each `TableCommit` is checked and applied as in `commit_table`; the new metadata files
        are written first and the pointers are swapped in one step. Raises `CommitFailedError`
        (retryable, nothing changed) when a requirement fails or another writer moved one of the
        tables, and `UnsupportedFeatureError` when the catalog has no multi-table atomic step.
        """
        from icefloe.spec.updates import AssertCreate, apply_updates

        commits = list(commits)
        if not commits:
            return []
        idents = [to_identifier(c.identifier) for c in commits]
        if len(set(idents)) != len(idents):
            raise ValidationError(
                "a multi-table commit names the same table twice",
                hint="merge the changes of one table into a single TableCommit",
            )
        if len(commits) == 1:
            c = commits[0]
            return [self.commit_table(idents[0], c.requirements, c.updates)]
        if any(isinstance(r, AssertCreate) for c in commits for r in c.requirements):
            raise UnsupportedFeatureError(
                "a multi-table commit cannot create tables",
                hint="create the tables first, then commit the changes to all of them",
            )
        staged: list[tuple[Identifier, str, str, TableMetadata]] = []
        written: list[tuple[FileIO, str]] = []
        bases: dict[Identifier, TableMetadata] = {}
        try:
            for ident, c in zip(idents, commits, strict=True):
                current_location = self._load_pointer(ident)
                if current_location is None:
                    raise self._no_such_table(ident)
                base = self._read(current_location)
                for requirement in c.requirements:
                    requirement.validate(base)
                if not c.updates:
                    staged.append((ident, current_location, current_location, base))
                    continue
                new_metadata = apply_updates(base, list(c.updates), current_location)
                new_location = metadata_file_location(
                    new_metadata, parse_metadata_version(current_location) + 1
                )
                io = self._io(new_location)
                write_metadata_file(io, new_location, new_metadata)
                written.append((io, new_location))
                staged.append((ident, current_location, new_location, new_metadata))
                bases[ident] = base
            swaps = [(ident, old, new) for ident, old, new, _ in staged if old != new]
            if swaps:
                self._swap_pointers(swaps)
        except CommitStateUnknownError:
            raise
        except BaseException:
            for io, location in written:
                delete_files(io, [location])
            raise
        for ident, _, new, metadata in staged:
            if ident in bases:
                self._delete_removed_metadata(self._io(new), bases[ident], metadata)
        return [(metadata, new) for _, _, new, metadata in staged]


def _new_table_metadata(
    schema: Schema | pa.Schema,
    partition_by: Sequence[str] | PartitionSpec | None,
    sort_order: SortOrder | None,
    location: str,
    properties: Mapping[str, str] | None,
) -> TableMetadata:
    """The first metadata of a table. The builder assigns fresh ids the way Java does and maps
    the spec and sort order onto them by column name, so both are built against ``schema``."""
    from icefloe.spec.metadata_builder import TableMetadataBuilder
    from icefloe.spec.partition import UNPARTITIONED_SPEC, PartitionSpec, build_partition_spec
    from icefloe.spec.sort_order import UNSORTED_SORT_ORDER

    props = {str(k): str(v) for k, v in (properties or {}).items()}
    if not isinstance(schema, Schema):
        from icefloe.arrow.schema import arrow_to_schema

        # format v3 stores nanosecond timestamps (timestamp_ns) and null columns (unknown)
        version = props.get("format-version", "2")
        schema = arrow_to_schema(schema, format_version=int(version) if version.isdigit() else 2)

    if partition_by is None:
        spec = UNPARTITIONED_SPEC
    elif isinstance(partition_by, PartitionSpec):
        spec = partition_by
    elif isinstance(partition_by, str):
        raise PartitionSpecError(
            f"partition_by must be a list, got the string {partition_by!r}",
            hint=f"write partition_by=[{partition_by!r}]",
        )
    else:
        spec = build_partition_spec(schema, list(partition_by))

    order = UNSORTED_SORT_ORDER if sort_order is None else sort_order
    return TableMetadataBuilder.new_table(schema, spec, order, location, props).build()
