"""FileIO on ``pyarrow.fs``: object stores (s3://, gs://, abfs://), HDFS and local paths.

One file system object is built per scheme and bucket/host and reused, because building an S3
client is slow. S3 settings come from the Iceberg property names (``s3.endpoint``,
``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``, ``s3.region``,
``s3.path-style-access``; PyIceberg's ``s3.force-virtual-addressing``, ``s3.connect-timeout``,
``s3.request-timeout`` (seconds), ``s3.proxy-uri``, ``s3.role-arn``, ``s3.role-session-name``),
with the shared AWS client properties (``client.region``, ``client.access-key-id``,
``client.secret-access-key``, ``client.session-token``) as fallbacks, which is what REST catalogs
vend. ``s3.remote-signing-enabled=true`` is refused: pyarrow cannot have requests signed remotely.

Object stores have no exclusive create in pyarrow, so ``create()`` checks for an existing file
first. That check is not atomic; Iceberg's file names carry UUIDs, which is what really keeps
writers apart.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import IO, Any, cast
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from icefloe.errors import ConfigError, FileIOError
from icefloe.io import FileInfo
from icefloe.io.local import local_path

__all__ = ["ArrowFileIO", "ArrowInputFile", "ArrowOutputFile"]

S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_FORCE_VIRTUAL_ADDRESSING = "s3.force-virtual-addressing"
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_PROXY_URI = "s3.proxy-uri"
S3_ROLE_ARN = "s3.role-arn"
S3_ROLE_SESSION_NAME = "s3.role-session-name"
S3_REMOTE_SIGNING_ENABLED = "s3.remote-signing-enabled"
# AWS settings shared by every AWS client (Iceberg Java's AwsClientProperties, PyIceberg's client.*)
CLIENT_REGION = "client.region"
CLIENT_ACCESS_KEY_ID = "client.access-key-id"
CLIENT_SECRET_ACCESS_KEY = "client.secret-access-key"
CLIENT_SESSION_TOKEN = "client.session-token"

_TRUE = ("true", "1", "yes")


def _seconds(value: str, key: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ConfigError(
            f"invalid {key} value {value!r}", hint="give a positive number of seconds", property=key
        )
    return seconds


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
        if (p.get(S3_REMOTE_SIGNING_ENABLED) or "").lower() in _TRUE:
            raise ConfigError(
                "s3.remote-signing-enabled is set, but icefloe's S3 FileIO cannot have requests "
                "signed by the catalog",
                hint="have the catalog vend credentials instead (X-Iceberg-Access-Delegation: "
                "vended-credentials), or give s3.access-key-id / s3.secret-access-key",
                property=S3_REMOTE_SIGNING_ENABLED,
            )
        for arg, keys in (
            ("access_key", (S3_ACCESS_KEY_ID, CLIENT_ACCESS_KEY_ID)),
            ("secret_key", (S3_SECRET_ACCESS_KEY, CLIENT_SECRET_ACCESS_KEY)),
            ("session_token", (S3_SESSION_TOKEN, CLIENT_SESSION_TOKEN)),
            ("region", (S3_REGION, CLIENT_REGION)),
            ("proxy_options", (S3_PROXY_URI,)),
            ("role_arn", (S3_ROLE_ARN,)),
            ("session_name", (S3_ROLE_SESSION_NAME,)),
        ):
            value = next((p[k] for k in keys if p.get(k)), None)
            if value:
                kwargs[arg] = value
        for arg, key in (("connect_timeout", S3_CONNECT_TIMEOUT), ("request_timeout", S3_REQUEST_TIMEOUT)):
            if p.get(key):
                kwargs[arg] = _seconds(p[key], key)
        if S3_PATH_STYLE_ACCESS in p:
            # pyarrow uses path-style requests whenever an endpoint is overridden unless virtual
            # addressing is forced.
            kwargs["force_virtual_addressing"] = p[S3_PATH_STYLE_ACCESS].lower() not in _TRUE
        elif S3_FORCE_VIRTUAL_ADDRESSING in p:
            kwargs["force_virtual_addressing"] = p[S3_FORCE_VIRTUAL_ADDRESSING].lower() in _TRUE
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

    def list_prefix(self, prefix: str, *, recursive: bool = True) -> Iterator[FileInfo]:
        """The files below ``prefix`` (see `SupportsPrefixListing`), one ``pyarrow.fs`` listing
        (on object stores: paginated LIST requests by prefix). Returned locations keep the
        prefix's own spelling (scheme, authority)."""
        base = prefix.rstrip("/")
        fs, root = self.resolve(base)
        if isinstance(fs, pafs.LocalFileSystem):
            # pyarrow's local listing follows symbolic links to directories; ours does not
            from icefloe.io.local import LocalFileIO

            yield from LocalFileIO(self.properties).list_prefix(prefix, recursive=recursive)
            return
        root = root.rstrip("/") or "/"
        try:
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=recursive, allow_not_found=True))
        except (pa.ArrowException, OSError) as e:
            raise _error("list", prefix, e) from e
        strip = len(root) + (0 if root.endswith("/") else 1)
        for info in infos:
            if not info.path.startswith(root):
                continue  # never report anything outside the prefix
            relative = info.path[strip:]
            if not relative:
                continue
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            if info.type == pafs.FileType.Directory:
                if not recursive:
                    yield FileInfo(f"{base}/{relative}", 0, mtime, is_dir=True)
            elif info.type == pafs.FileType.File:
                yield FileInfo(f"{base}/{relative}", int(info.size or 0), mtime)

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
