"""A catalog in a relational database, with the tables of Iceberg Java's JdbcCatalog.

Same database, same rows: PyIceberg's `SqlCatalog`, Iceberg Java's `JdbcCatalog` and icefloe can
share one catalog (rows are keyed by ``catalog_name``, so use the same catalog name everywhere).

``iceberg_tables``: catalog_name, table_namespace, table_name (primary key, VARCHAR(255)),
metadata_location, previous_metadata_location (VARCHAR(1000)) and, in the "V1" schema,
iceberg_type VARCHAR(5) = 'TABLE' | 'VIEW' (NULL counts as a table).
``iceberg_namespace_properties``: catalog_name, namespace, property_key (primary key),
property_value. Namespaces are stored joined by '.'. A namespace exists when it has property rows
(creating one writes ``exists=true``, as Java does) or when a table or a deeper namespace lies
under it.

New databases get the V1 schema, like PyIceberg; Iceberg Java detects the iceberg_type column
and uses it. An existing V0 database is used as V0 (no column added) unless
``schema-version=V1`` asks for the migration, which both peers perform the same way.

The commit is one statement::

    UPDATE iceberg_tables SET metadata_location = :new, previous_metadata_location = :old
     WHERE catalog_name = :c AND table_namespace = :ns AND table_name = :t
       AND metadata_location = :old [AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)]

one row changed = won; zero = lost (CommitFailedError); an error before COMMIT = not applied
(CommitFailedError); an error during COMMIT = unknown unless a re-read shows our location
(CommitStateUnknownError).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    MetaData,
    String,
    Table,
    and_,
    create_engine,
    delete,
    event,
    insert,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.elements import ColumnElement

from icefloe.catalog._base import (
    Catalog,
    Identifier,
    Namespace,
    NamespaceLike,
    PropertiesUpdateSummary,
    child_namespaces,
    to_namespace,
)
from icefloe.errors import (
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    IcefloeError,
    NamespaceAlreadyExistsError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
)

__all__ = ["SqlCatalog"]

_log = logging.getLogger(__name__)

TABLES = "iceberg_tables"
NAMESPACE_PROPERTIES = "iceberg_namespace_properties"
RECORD_TYPE = "iceberg_type"
TABLE_RECORD = "TABLE"
NAMESPACE_EXISTS = "exists"

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _tables_schema(with_record_type: bool) -> tuple[Table, Table]:
    md = MetaData()
    columns: list[Column[Any]] = [
        Column("catalog_name", String(255), primary_key=True, nullable=False),
        Column("table_namespace", String(255), primary_key=True, nullable=False),
        Column("table_name", String(255), primary_key=True, nullable=False),
        Column("metadata_location", String(1000), nullable=True),
        Column("previous_metadata_location", String(1000), nullable=True),
    ]
    if with_record_type:
        columns.append(Column(RECORD_TYPE, String(5), nullable=True))
    tables = Table(TABLES, md, *columns)
    namespaces = Table(
        NAMESPACE_PROPERTIES,
        md,
        Column("catalog_name", String(255), primary_key=True, nullable=False),
        Column("namespace", String(255), primary_key=True, nullable=False),
        Column("property_key", String(255), primary_key=True, nullable=False),
        Column("property_value", String(1000), nullable=True),
    )
    return tables, namespaces


def _like_children(prefix: str) -> str:
    """LIKE pattern for namespaces strictly below ``prefix`` (escape character '!')."""
    return prefix.replace("!", "!!").replace("_", "!_").replace("%", "!%") + ".%"


class SqlCatalog(Catalog):
    """Properties: ``uri`` (SQLAlchemy URL: ``sqlite:///path.db``, ``sqlite:///:memory:``,
    ``postgresql+psycopg://user@host/db``), ``warehouse``, ``init-catalog-tables`` (default true),
    ``schema-version`` (V1 default for new databases; V1 on a V0 database migrates it),
    ``sqlite.busy-timeout-ms`` (default 30000), ``echo``."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        uri = self.properties.get("uri")
        if not uri:
            raise ConfigError(
                f"SQL catalog {name!r} needs a 'uri' property",
                hint="for example SqlCatalog('prod', uri='sqlite:////data/catalog.db', "
                "warehouse='file:///data/warehouse')",
            )
        self._engine = _make_engine(uri, self.properties)
        # A catalog dropped without close() (a handle per Spark job, a script) still closes its
        # pooled connections when it is garbage collected, instead of leaving them to the server.
        self._dispose = weakref.finalize(self, self._engine.dispose)
        self._tables_t, self._ns_t = _tables_schema(with_record_type=True)
        self._v1 = True
        try:
            self._init_schema()
        except BaseException:
            self._dispose()
            raise

    def close(self) -> None:
        self._dispose()

    def _prop(self, *names: str) -> str | None:
        for n in names:
            if n in self.properties:
                return self.properties[n]
        return None

    def _init_schema(self) -> None:
        init_raw = (
            self._prop("init-catalog-tables", "init_catalog_tables", "jdbc.init-catalog-tables") or "true"
        ).lower()
        if init_raw not in _TRUE | _FALSE:
            raise ConfigError(f"invalid init-catalog-tables value {init_raw!r}", hint="use true or false")
        version_raw = (self._prop("schema-version", "schema_version", "jdbc.schema-version") or "").upper()
        if version_raw not in ("", "V0", "V1"):
            raise ConfigError(f"invalid schema-version {version_raw!r}", hint="use V0 or V1")

        existing = set(inspect(self._engine).get_table_names())
        if TABLES not in existing or NAMESPACE_PROPERTIES not in existing:
            if init_raw in _FALSE:
                raise ConfigError(
                    f"the database of catalog {self.name!r} has no Iceberg catalog tables "
                    f"and init-catalog-tables is false",
                    hint="set init-catalog-tables=true to create them, or point uri at the right database",
                )
            v1 = version_raw != "V0" if TABLES not in existing else self._has_record_type()
            tables, _ = _tables_schema(with_record_type=v1)
            try:
                tables.metadata.create_all(self._engine, checkfirst=True)
            except SQLAlchemyError:
                # another process may have created them at the same moment
                existing = set(inspect(self._engine).get_table_names())
                if TABLES not in existing or NAMESPACE_PROPERTIES not in existing:
                    raise
        v1 = self._has_record_type()
        if not v1 and version_raw == "V1":
            with self._engine.begin() as conn:
                conn.exec_driver_sql(f"ALTER TABLE {TABLES} ADD COLUMN {RECORD_TYPE} VARCHAR(5)")
            v1 = True
        self._v1 = v1
        self._tables_t, self._ns_t = _tables_schema(with_record_type=v1)

    def _has_record_type(self) -> bool:
        columns = inspect(self._engine).get_columns(TABLES)
        return any(c["name"].lower() == RECORD_TYPE for c in columns)

    @property
    def schema_version(self) -> str:
        """``V1`` when the database has the iceberg_type column, else ``V0``."""
        return "V1" if self._v1 else "V0"

    # ------------------------------------------------------------------ row filters
    def _table_key(self, identifier: Identifier) -> ColumnElement[bool]:
        t = self._tables_t.c
        cond = and_(
            t.catalog_name == self.name,
            t.table_namespace == ".".join(identifier[:-1]),
            t.table_name == identifier[-1],
        )
        return and_(cond, self._is_table()) if self._v1 else cond

    def _is_table(self) -> ColumnElement[bool]:
        col = self._tables_t.c[RECORD_TYPE]
        return or_(col == TABLE_RECORD, col.is_(None))

    # ------------------------------------------------------------------ namespaces
    def namespace_exists(self, namespace: NamespaceLike) -> bool:
        ns = to_namespace(namespace)
        if not ns:
            return True
        text = ".".join(ns)
        t, p = self._tables_t.c, self._ns_t.c
        pattern = _like_children(text)
        q1 = (
            select(t.table_namespace)
            .where(
                t.catalog_name == self.name,
                or_(t.table_namespace == text, t.table_namespace.like(pattern, escape="!")),
            )
            .limit(1)
        )
        q2 = (
            select(p.namespace)
            .where(
                p.catalog_name == self.name,
                or_(p.namespace == text, p.namespace.like(pattern, escape="!")),
            )
            .limit(1)
        )
        with self._engine.connect() as conn:
            return conn.execute(q1).first() is not None or conn.execute(q2).first() is not None

    def create_namespace(self, namespace: NamespaceLike, properties: Mapping[str, str] | None = None) -> None:
        ns = to_namespace(namespace)
        if not ns:
            raise ValidationError("cannot create the root namespace", hint="name the namespace, e.g. 'db'")
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        if NAMESPACE_EXISTS in props:
            raise ValidationError(
                f"{NAMESPACE_EXISTS!r} is a reserved namespace property",
                hint="the catalog sets it itself to mark that the namespace exists",
            )
        if self.namespace_exists(ns):
            raise NamespaceAlreadyExistsError(
                f"namespace {'.'.join(ns)!r} already exists in catalog {self.name!r}", namespace=ns
            )
        props[NAMESPACE_EXISTS] = "true"
        rows = [
            {"catalog_name": self.name, "namespace": ".".join(ns), "property_key": k, "property_value": v}
            for k, v in props.items()
        ]
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(self._ns_t), rows)
        except IntegrityError as e:
            raise NamespaceAlreadyExistsError(
                f"namespace {'.'.join(ns)!r} already exists in catalog {self.name!r}", namespace=ns
            ) from e

    def _all_namespaces(self, conn: Connection, parent: Namespace) -> list[Namespace]:
        t, p = self._tables_t.c, self._ns_t.c
        q1 = select(t.table_namespace).where(t.catalog_name == self.name).distinct()
        q2 = select(p.namespace).where(p.catalog_name == self.name).distinct()
        if parent:
            pattern = _like_children(".".join(parent))
            q1 = q1.where(t.table_namespace.like(pattern, escape="!"))
            q2 = q2.where(p.namespace.like(pattern, escape="!"))
        names = {row[0] for row in conn.execute(q1)} | {row[0] for row in conn.execute(q2)}
        return [tuple(n.split(".")) for n in names if n]

    def list_namespaces(self, parent: NamespaceLike = ()) -> list[Namespace]:
        ns = to_namespace(parent)
        if ns:
            self._require_namespace(ns)
        with self._engine.connect() as conn:
            return child_namespaces(self._all_namespaces(conn, ns), ns)

    def drop_namespace(self, namespace: NamespaceLike) -> None:
        ns = to_namespace(namespace)
        self._check_droppable(ns)
        p = self._ns_t.c
        with self._engine.begin() as conn:
            conn.execute(delete(self._ns_t).where(p.catalog_name == self.name, p.namespace == ".".join(ns)))

    def _properties(self, conn: Connection, ns: Namespace) -> dict[str, str]:
        p = self._ns_t.c
        q = select(p.property_key, p.property_value).where(
            p.catalog_name == self.name, p.namespace == ".".join(ns)
        )
        return {row[0]: row[1] if row[1] is not None else "" for row in conn.execute(q)}

    def load_namespace_properties(self, namespace: NamespaceLike) -> dict[str, str]:
        ns = to_namespace(namespace)
        self._require_namespace(ns)
        with self._engine.connect() as conn:
            props = self._properties(conn, ns)
        props.pop(NAMESPACE_EXISTS, None)
        return props

    def update_namespace_properties(
        self,
        namespace: NamespaceLike,
        removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        ns = to_namespace(namespace)
        removals = list(removals)
        new = {str(k): str(v) for k, v in (updates or {}).items()}
        overlap = set(removals) & set(new)
        if overlap:
            raise ValidationError(
                f"properties both removed and updated: {sorted(overlap)}",
                hint="a key can be removed or set, not both",
            )
        if NAMESPACE_EXISTS in overlap | set(removals) | set(new):
            raise ValidationError(
                f"{NAMESPACE_EXISTS!r} is a reserved namespace property",
                hint="the catalog manages it itself",
            )
        self._require_namespace(ns)
        p = self._ns_t.c
        key = and_(p.catalog_name == self.name, p.namespace == ".".join(ns))
        with self._engine.begin() as conn:
            current = self._properties(conn, ns)
            removed = [k for k in removals if k in current]
            missing = [k for k in removals if k not in current]
            touched = removed + [k for k in new if k in current]
            if NAMESPACE_EXISTS not in current:
                # keep the namespace alive when its last property goes (PyIceberg writes no marker)
                new[NAMESPACE_EXISTS] = "true"
            if touched:
                conn.execute(delete(self._ns_t).where(key, p.property_key.in_(touched)))
            if new:
                conn.execute(
                    insert(self._ns_t),
                    [
                        {
                            "catalog_name": self.name,
                            "namespace": ".".join(ns),
                            "property_key": k,
                            "property_value": v,
                        }
                        for k, v in new.items()
                    ],
                )
        updated = [k for k in new if k != NAMESPACE_EXISTS]
        return PropertiesUpdateSummary(removed=removed, updated=updated, missing=missing)

    def list_tables(self, namespace: NamespaceLike) -> list[Identifier]:
        ns = to_namespace(namespace)
        self._require_namespace(ns)
        t = self._tables_t.c
        q = select(t.table_name).where(t.catalog_name == self.name, t.table_namespace == ".".join(ns))
        if self._v1:
            q = q.where(self._is_table())
        with self._engine.connect() as conn:
            return sorted((*ns, row[0]) for row in conn.execute(q))

    # ------------------------------------------------------------------ pointers
    def _load_pointer(self, identifier: Identifier) -> str | None:
        t = self._tables_t.c
        try:
            with self._engine.connect() as conn:
                row = conn.execute(select(t.metadata_location).where(self._table_key(identifier))).first()
        except SQLAlchemyError as e:
            raise IcefloeError(
                f"cannot read table {'.'.join(identifier)!r} from the catalog database: {e}",
                hint="the catalog database failed; retry",
                identifier=identifier,
            ) from e
        return None if row is None else row[0]

    def _insert_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        row: dict[str, Any] = {
            "catalog_name": self.name,
            "table_namespace": ".".join(identifier[:-1]),
            "table_name": identifier[-1],
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self._v1:
            row[RECORD_TYPE] = TABLE_RECORD
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(self._tables_t), [row])
        except IntegrityError as e:
            raise TableAlreadyExistsError(
                f"table {'.'.join(identifier)!r} already exists in catalog {self.name!r} "
                "(or a view with that name does)",
                identifier=identifier,
            ) from e

    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        t = self._tables_t.c
        stmt = (
            update(self._tables_t)
            .where(self._table_key(identifier), t.metadata_location == expected)
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        failed = CommitFailedError(
            f"table {'.'.join(identifier)!r} was changed by another commit "
            f"(its metadata is no longer {expected})",
            hint="refresh the table and retry",
            identifier=identifier,
        )
        conn: Connection | None = None
        try:
            try:
                conn = self._engine.connect()
                transaction = conn.begin()
                rowcount = conn.execute(stmt).rowcount
                if rowcount != 1:
                    transaction.rollback()
            except SQLAlchemyError as e:
                # nothing was committed: the transaction dies with the statement or the connection
                raise CommitFailedError(
                    f"commit to table {'.'.join(identifier)!r} failed in the database: {e}",
                    hint="the table is unchanged; retry",
                    identifier=identifier,
                ) from e
            if rowcount != 1:
                raise failed
            try:
                transaction.commit()
            except SQLAlchemyError as e:
                if self._landed(identifier, new):
                    return
                raise CommitStateUnknownError(
                    f"the database failed while committing table {'.'.join(identifier)!r}; "
                    f"the commit may or may not have happened: {e}",
                    hint=f"load the table again; if its metadata is {new} the commit landed",
                    identifier=identifier,
                    metadata_location=new,
                ) from e
        finally:
            if conn is not None:
                try:
                    conn.close()
                except SQLAlchemyError as e:
                    _log.debug("closing a connection failed: %s", e)

    def _swap_pointers(self, swaps: Sequence[tuple[Identifier, str, str]]) -> None:
        """Several compare-and-swaps in one database transaction: all rows move or none."""
        t = self._tables_t.c
        names = ", ".join(repr(".".join(ident)) for ident, _, _ in swaps)
        try:
            with self._engine.connect() as conn:
                transaction = conn.begin()
                try:
                    for identifier, expected, new in swaps:
                        stmt = (
                            update(self._tables_t)
                            .where(self._table_key(identifier), t.metadata_location == expected)
                            .values(metadata_location=new, previous_metadata_location=expected)
                        )
                        if conn.execute(stmt).rowcount != 1:
                            transaction.rollback()
                            raise CommitFailedError(
                                f"table {'.'.join(identifier)!r} was changed by another commit "
                                f"(its metadata is no longer {expected}); no table was changed",
                                hint="refresh the tables and retry",
                                identifier=identifier,
                            )
                except SQLAlchemyError as e:
                    transaction.rollback()
                    raise CommitFailedError(
                        f"commit to tables {names} failed in the database: {e}",
                        hint="the tables are unchanged; retry",
                    ) from e
                try:
                    transaction.commit()
                except SQLAlchemyError as e:
                    if all(self._landed(ident, new) for ident, _, new in swaps):
                        return
                    raise CommitStateUnknownError(
                        f"the database failed while committing tables {names}; "
                        f"the commit may or may not have happened: {e}",
                        hint="load the tables again to see whether the commit landed",
                    ) from e
        except SQLAlchemyError as e:
            raise CommitFailedError(
                f"cannot reach the database to commit tables {names}: {e}", hint="retry"
            ) from e

    def _landed(self, identifier: Identifier, new: str) -> bool:
        try:
            return self._load_pointer(identifier) == new
        except IcefloeError:
            return False

    def _delete_pointer(self, identifier: Identifier) -> bool:
        with self._engine.begin() as conn:
            return bool(conn.execute(delete(self._tables_t).where(self._table_key(identifier))).rowcount)

    def _rename_pointer(self, source: Identifier, target: Identifier) -> None:
        stmt = (
            update(self._tables_t)
            .where(self._table_key(source))
            .values(table_namespace=".".join(target[:-1]), table_name=target[-1])
        )
        try:
            with self._engine.begin() as conn:
                count = conn.execute(stmt).rowcount
        except IntegrityError as e:
            raise TableAlreadyExistsError(
                f"cannot rename {'.'.join(source)!r}: {'.'.join(target)!r} already exists",
                identifier=target,
            ) from e
        if count == 0:
            raise NoSuchTableError(f"table {'.'.join(source)!r} does not exist", identifier=source)


def _make_engine(uri: str, properties: Mapping[str, str]) -> Engine:
    echo = properties.get("echo", "false").lower() in _TRUE
    if not uri.startswith("sqlite"):
        return create_engine(uri, echo=echo, pool_pre_ping=True)
    try:
        busy_ms = int(properties.get("sqlite.busy-timeout-ms", "30000"))
    except ValueError:
        raise ConfigError(
            "invalid sqlite.busy-timeout-ms", hint="give a whole number of milliseconds, e.g. 30000"
        ) from None
    in_memory = uri in ("sqlite://", "sqlite:///:memory:") or "mode=memory" in uri
    kwargs: dict[str, Any] = {
        "echo": echo,
        "connect_args": {"check_same_thread": False, "timeout": busy_ms / 1000.0},
    }
    if in_memory:
        # one shared connection, or every connection would see its own empty database
        kwargs["poolclass"] = StaticPool
    engine = create_engine(uri, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            if not in_memory:
                try:
                    cursor.execute("PRAGMA journal_mode = WAL")
                except Exception as e:  # another process holds a lock; WAL is an optimisation
                    _log.debug("could not switch %s to WAL: %s", uri, e)
        finally:
            cursor.close()

    return engine
