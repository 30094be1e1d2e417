"""FileIO on ``pyarrow.fs``: object stores (s3://, gs://, abfs://), HDFS and local paths.

One file system object is built per scheme and bucket/host and reused, because building an S3
client is slow. S3 settings come from the Iceberg property names (``s3.endpoint``,
``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``, ``s3.region``,
``s3.path-style-access``).

Object stores have no exclusive create in pyarrow, so ``create()`` checks for an existing file
first. That check is not atomic; Iceberg's file names carry UUIDs, which is what really keeps
writers apart.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import IO, Any, cast
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from icefloe.errors import ConfigError, FileIOError
from icefloe.io.local import local_path

__all__ = ["ArrowFileIO", "ArrowInputFile", "ArrowOutputFile"]

S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"

_TRUE = ("true", "1", "yes")


def _error(action: str, location: str, e: BaseException) -> FileIOError:
    not_found = isinstance(e, FileNotFoundError)
    return FileIOError(f"cannot {action} {location!r}: {e}", location=location, not_found=not_found)


def _not_found(location: str) -> FileIOError:
    return FileIOError(f"cannot open {location!r}: no such file", location=location, not_found=True)


class ArrowFileIO:
    """FileIO over pyarrow file systems."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: Mapping[str, str] = dict(properties or {})
        self._lock = threading.Lock()
        self._filesystems: dict[tuple[str, str], pafs.FileSystem] = {}

    def __getstate__(self) -> dict[str, Any]:
        # File systems and locks do not pickle; workers rebuild them on first use.
        return {"properties": dict(self.properties)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["properties"])  # type: ignore[misc]

    def resolve(self, location: str) -> tuple[pafs.FileSystem, str]:
        """The file system serving ``location`` and the path inside it."""
        parts = urlsplit(location)
        scheme = parts.scheme.lower()
        if scheme in ("", "file") or len(scheme) == 1:
            return self._filesystem("file", ""), local_path(location)
        if scheme in ("s3", "s3a", "s3n"):
            return self._filesystem("s3", parts.netloc), parts.netloc + parts.path
        fs = self._filesystem(scheme, parts.netloc, location)
        if scheme in ("gs", "gcs", "abfs", "abfss"):
            return fs, parts.netloc + parts.path
        return fs, parts.path

    def _filesystem(self, scheme: str, netloc: str, location: str | None = None) -> pafs.FileSystem:
        key = (scheme, netloc)
        with self._lock:
            fs = self._filesystems.get(key)
            if fs is None:
                fs = self._build(scheme, location)
                self._filesystems[key] = fs
            return fs

    def _build(self, scheme: str, location: str | None) -> pafs.FileSystem:
        if scheme == "file":
            return pafs.LocalFileSystem()
        if scheme == "s3":
            return self._s3()
        try:
            fs, _ = pafs.FileSystem.from_uri(cast(str, location))
        except (pa.ArrowException, OSError, ValueError) as e:
            raise ConfigError(
                f"no pyarrow file system for scheme {scheme!r}: {e}",
                hint="check the location's scheme, or set io-impl to a FileIO that serves it",
                location=location,
            ) from e
        return fs

    def _s3(self) -> pafs.FileSystem:
        p = self.properties
        # Delayed open: a small file (all of Iceberg's metadata files, most data files of small
        # writes) is one PUT instead of a multipart upload's three requests; a failure shows at
        # close, which every writer checks.
        kwargs: dict[str, Any] = {"allow_delayed_open": True}
        endpoint = p.get(S3_ENDPOINT)
        if endpoint:
            if "://" in endpoint:
                parts = urlsplit(endpoint)
                kwargs["scheme"] = parts.scheme
                kwargs["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
            else:
                kwargs["endpoint_override"] = endpoint
        if p.get(S3_ACCESS_KEY_ID):
            kwargs["access_key"] = p[S3_ACCESS_KEY_ID]
        if p.get(S3_SECRET_ACCESS_KEY):
            kwargs["secret_key"] = p[S3_SECRET_ACCESS_KEY]
        if p.get(S3_SESSION_TOKEN):
            kwargs["session_token"] = p[S3_SESSION_TOKEN]
        if p.get(S3_REGION):
            kwargs["region"] = p[S3_REGION]
        if S3_PATH_STYLE_ACCESS in p:
            # pyarrow uses path-style requests whenever an endpoint is overridden unless virtual
            # addressing is forced.
            kwargs["force_virtual_addressing"] = p[S3_PATH_STYLE_ACCESS].lower() not in _TRUE
        try:
            return pafs.S3FileSystem(**kwargs)
        except (pa.ArrowException, OSError, ValueError, TypeError) as e:
            raise ConfigError(f"invalid S3 configuration: {e}", hint="check the s3.* properties") from e

    def new_input(self, location: str) -> ArrowInputFile:
        fs, path = self.resolve(location)
        return ArrowInputFile(location, fs, path)

    def new_output(self, location: str) -> ArrowOutputFile:
        fs, path = self.resolve(location)
        return ArrowOutputFile(location, fs, path)

    def delete(self, location: str) -> None:
        """Delete one file; a missing file is an error (``context["not_found"]`` is true)."""
        fs, path = self.resolve(location)
        try:
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                raise FileIOError(
                    f"cannot delete {location!r}: no such file", location=location, not_found=True
                )
            fs.delete_file(path)
        except (pa.ArrowException, OSError) as e:
            if isinstance(e, FileIOError):
                raise
            raise _error("delete", location, e) from e

    def exists(self, location: str) -> bool:
        fs, path = self.resolve(location)
        return _exists(fs, path, location)

    def __repr__(self) -> str:
        return "ArrowFileIO()"


def _exists(fs: pafs.FileSystem, path: str, location: str) -> bool:
    try:
        return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)
    except (pa.ArrowException, OSError) as e:
        raise _error("stat", location, e) from e


class ArrowInputFile:
    __slots__ = ("_fs", "_location", "_path")

    def __init__(self, location: str, fs: pafs.FileSystem, path: str) -> None:
        self._location = location
        self._fs = fs
        self._path = path

    @property
    def location(self) -> str:
        return self._location

    def __len__(self) -> int:
        try:
            info = self._fs.get_file_info(self._path)
        except (pa.ArrowException, OSError) as e:
            raise _error("stat", self._location, e) from e
        if info.type == pafs.FileType.NotFound:
            raise _not_found(self._location)
        return int(info.size)

    def exists(self) -> bool:
        return _exists(self._fs, self._path, self._location)

    def open(self, seekable: bool = True) -> IO[bytes]:
        try:
            if seekable:
                return cast(IO[bytes], self._fs.open_input_file(self._path))
            return cast(IO[bytes], self._fs.open_input_stream(self._path))
        except (pa.ArrowException, OSError) as e:
            raise _error("open", self._location, e) from e

    def __repr__(self) -> str:
        return f"ArrowInputFile({self._location!r})"


class ArrowOutputFile:
    __slots__ = ("_fs", "_location", "_path")

    def __init__(self, location: str, fs: pafs.FileSystem, path: str) -> None:
        self._location = location
        self._fs = fs
        self._path = path

    @property
    def location(self) -> str:
        return self._location

    def exists(self) -> bool:
        return _exists(self._fs, self._path, self._location)

    def create(self, overwrite: bool = False) -> IO[bytes]:
        if not overwrite and self.exists():
            raise FileIOError(
                f"cannot create {self._location!r}: the file already exists",
                hint="Iceberg never overwrites files; pick a new name or pass overwrite=True",
                location=self._location,
                already_exists=True,
            )
        try:
            if isinstance(self._fs, pafs.LocalFileSystem):
                self._fs.create_dir(self._parent(), recursive=True)
            return cast(IO[bytes], self._fs.open_output_stream(self._path))
        except (pa.ArrowException, OSError) as e:
            raise _error("create", self._location, e) from e

    def _parent(self) -> str:
        return self._path.rsplit("/", 1)[0] or "/"

    def __repr__(self) -> str:
        return f"ArrowOutputFile({self._location!r})"
