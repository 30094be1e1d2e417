"""Where clients may put tables: the server's allowed location prefixes.

Clients name locations in several requests, and the server then writes metadata files there or
reads the file named::

    create table         location, properties write.data.path, write.metadata.path,
                         write.object-storage.path, write.folder-storage.path
                         (no location: the namespace's or the warehouse's default, checked too)
    register table       metadata-location (checked before it is read), then the location and
                         path properties of the metadata read from it
    commit, transaction  set-location, set-properties of the path properties
    namespace            the location property (create, update properties)

`LocationPolicy` allows the catalog's warehouse and the ``--allow-location`` prefixes, nothing
else; a refusal is a 403 ``ForbiddenException`` raised before anything is read or written.

Locations are compared as icefloe's FileIOs resolve them (`icefloe.io.local.local_path`,
`icefloe.io.arrow.ArrowFileIO.resolve`), after normalising::

    /x, file:/x, file:///x, file://localhost/x    one local path (a relative path: against the cwd)
    S3://b/k, s3a://b/k, s3n://b/k                s3://b/k (schemes are case-insensitive; aliases)
    hdfs://NameNode:8020/k                        hdfs://namenode:8020/k (host names too; bucket
                                                  names and paths are compared as written)
    /a/./b//c/../d/                               /a/b/d

A prefix matches whole segments (``s3://b/wh`` allows ``s3://b/wh/t``, not ``s3://b/wh2/t``).
Refused outright, as they cannot be compared safely: ``..`` above the root (or the bucket), a
``?`` or ``#`` in a URI (pyarrow drops what follows), a ``file:`` URI naming another host, and a
location that lies outside once its percent-escapes are decoded (storage that decodes them would
see that path).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from icefloe.errors import ConfigError, FileIOError
from icefloe.io.local import local_path
from icefloe.rest._errors import HINT_MARK, RestError
from icefloe.spec.updates import MetadataUpdate, SetLocation, SetProperties

if TYPE_CHECKING:
    from icefloe.spec.table_metadata import TableMetadata

__all__ = ["NAMESPACE_LOCATION", "PATH_PROPERTIES", "LocationPolicy"]

#: Table properties that move where files of the table are written (Java's names).
PATH_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)
#: The namespace property that tables of the namespace get their default location from.
NAMESPACE_LOCATION = "location"

# one storage under several schemes (the FileIOs serve them alike)
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "wasbs": "wasb"}
# schemes whose authority is a bucket name, compared as written; other authorities are host names
_BUCKET_SCHEMES = ("s3", "gs")


class _Unsafe(ValueError):
    """A location that cannot be compared safely."""


@dataclass(frozen=True)
class _Place:
    """A location normalised: ``root`` is the scheme and authority (``file://`` for local paths),
    ``segments`` the path's parts."""

    root: str
    segments: tuple[str, ...]

    def within(self, prefix: _Place) -> bool:
        n = len(prefix.segments)
        return self.root == prefix.root and self.segments[:n] == prefix.segments

    def __str__(self) -> str:
        return f"{self.root}/{'/'.join(self.segments)}"


def _segments(path: str) -> tuple[str, ...]:
    out: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not out:
                raise _Unsafe("'..' leads above the root")
            out.pop()
        else:
            out.append(segment)
    return tuple(out)


def _place(location: str) -> _Place:
    if not location or "\x00" in location:
        raise _Unsafe("not a location")
    try:
        parts = urlsplit(location)
    except ValueError as e:
        raise _Unsafe(f"not a location: {e}") from None
    scheme = parts.scheme.lower()
    if len(scheme) <= 1 or scheme == "file":  # a plain path (a one-letter scheme is a drive letter)
        try:
            path = local_path(location)
        except FileIOError:
            raise _Unsafe("a file: URI naming another host") from None
        if not path:
            raise _Unsafe("not a location")
        if not path.startswith("/"):
            path = f"{os.getcwd()}/{path}"
        return _Place("file://", _segments(path))
    if "?" in location or "#" in location:
        raise _Unsafe("a query or fragment in a URI")
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    authority = parts.netloc
    if scheme not in _BUCKET_SCHEMES:
        user, at, host = authority.rpartition("@")
        authority = f"{user}{at}{host.lower()}"
    return _Place(f"{scheme}://{authority}", _segments(parts.path))


def _places(location: str) -> list[_Place]:
    """The location as written and, when different, with its percent-escapes decoded."""
    places = [_place(location)]
    decoded = unquote(location)
    if decoded != location:
        places.append(_place(decoded))
    return places


class LocationPolicy:
    """The location prefixes a REST catalog server lets clients use: ``prefixes`` (normally the
    warehouse and the ``--allow-location`` ones). A location is allowed when it lies inside one of
    them; every check raises a 403 `RestError` otherwise."""

    def __init__(self, prefixes: Iterable[str]) -> None:
        self.prefixes: tuple[str, ...] = tuple(dict.fromkeys(p for p in prefixes if p))
        self._places: list[_Place] = []
        for prefix in self.prefixes:
            try:
                self._places.append(_place(prefix))
            except _Unsafe as e:
                raise ConfigError(
                    f"invalid allowed location {prefix!r}: {e}",
                    hint="give --warehouse / --allow-location as file:///path, /path or scheme://bucket/path",
                ) from None

    def allows(self, location: str) -> bool:
        try:
            places = _places(location)
        except _Unsafe:
            return False
        return all(any(place.within(prefix) for prefix in self._places) for place in places)

    def check(self, location: str, what: str) -> None:
        """Refuse ``location`` (``what`` says what it is, for the message) unless allowed."""
        if self.allows(location):
            return
        try:
            _places(location)
            reason = "outside the locations this server allows"
        except _Unsafe as e:
            reason = f"refused: {e}"
        if self.prefixes:
            hint = (
                f"use a location inside {', '.join(self.prefixes)}, or have the server's operator "
                "allow it with --allow-location"
            )
        else:
            hint = "the server allows no locations: start it with --warehouse or --allow-location"
        raise RestError(403, "ForbiddenException", f"{what} {location!r} is {reason}{HINT_MARK}{hint})")

    def check_properties(self, properties: Mapping[str, str], keys: Sequence[str], what: str) -> None:
        """Check the values of ``keys`` in ``properties``."""
        for key in keys:
            if key in properties:
                self.check(properties[key], f"{what} property {key}")

    def check_metadata(self, metadata: TableMetadata, what: str) -> None:
        """Check where a table's metadata sends the server's writes: its location and path
        properties."""
        self.check(metadata.location, f"{what} location")
        self.check_properties(metadata.properties, PATH_PROPERTIES, what)

    def check_updates(self, updates: Iterable[MetadataUpdate], what: str) -> None:
        """Check the locations a commit's updates set."""
        for update in updates:
            if isinstance(update, SetLocation):
                self.check(update.location, f"{what}: set-location")
            elif isinstance(update, SetProperties):
                self.check_properties(update.updates, PATH_PROPERTIES, f"{what}: set-properties")
