"""``python -m icefloe.rest``: the command line of the REST catalog server (``icefloe serve``
reuses `add_arguments` and `run`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from icefloe.errors import IcefloeError
from icefloe.rest._serve import (
    DEFAULT_CATALOG_NAME,
    DEFAULT_PORT,
    open_backing_catalog,
    parse_credentials,
    serve,
)

__all__ = ["add_arguments", "main", "run"]

TOKEN_ENV = "ICEFLOE_REST_TOKEN"
CREDENTIAL_ENV = "ICEFLOE_REST_CREDENTIAL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--uri",
        default="sqlite:///icefloe-catalog.db",
        help="catalog database (SQLAlchemy URL: sqlite:///path.db, postgresql+psycopg://...; "
        "'memory:' for an in-memory catalog); default sqlite:///icefloe-catalog.db",
    )
    parser.add_argument(
        "--warehouse",
        required=True,
        help="where new tables go: file:///... or s3://...; clients may put tables inside it only",
    )
    parser.add_argument(
        "--allow-location",
        action="append",
        default=[],
        metavar="PREFIX",
        help="another location prefix clients may put tables in or register them from, besides "
        "the warehouse (repeatable)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        help=f"a bearer token clients may present (repeatable; also ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--credential",
        action="append",
        default=[],
        metavar="CLIENT_ID:SECRET",
        help=f"an OAuth2 client credential for /v1/oauth/tokens (repeatable; also ${CREDENTIAL_ENV})",
    )
    parser.add_argument(
        "--allow-anonymous",
        action="store_true",
        help="accept requests without a token (only with a loopback --host)",
    )
    parser.add_argument(
        "--catalog-name",
        default=DEFAULT_CATALOG_NAME,
        help=f"name of the catalog in the database (default {DEFAULT_CATALOG_NAME!r}; "
        "use the name Java's JdbcCatalog or PyIceberg's SqlCatalog use to share tables with them)",
    )
    parser.add_argument("--token-lifetime", type=int, default=3600, help="seconds an issued token lives")
    parser.add_argument(
        "--vend-credentials",
        action="store_true",
        help="hand the catalog's s3.* properties to clients that ask for vended credentials",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a property of the backing catalog (e.g. s3.endpoint=http://127.0.0.1:8333); repeatable",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )


def run(args: argparse.Namespace) -> None:
    """Start the server described by parsed ``args`` (blocks until interrupted)."""
    from icefloe.errors import ConfigError

    tokens = list(args.token)
    if os.environ.get(TOKEN_ENV):
        tokens.append(os.environ[TOKEN_ENV])
    credentials = list(args.credential)
    if os.environ.get(CREDENTIAL_ENV):
        credentials.append(os.environ[CREDENTIAL_ENV])
    properties: dict[str, str] = {}
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"invalid --property {item!r}", hint="write --property KEY=VALUE")
        properties[key] = value
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    catalog = open_backing_catalog(args.uri, args.warehouse, args.catalog_name, properties)
    try:
        serve(
            catalog,
            host=args.host,
            port=args.port,
            tokens=tokens,
            credentials=parse_credentials(credentials),
            allow_anonymous=args.allow_anonymous,
            token_lifetime_s=args.token_lifetime,
            vend_credentials=args.vend_credentials,
            log_level=args.log_level,
            allowed_locations=args.allow_location,
        )
    finally:
        catalog.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m icefloe.rest", description="Serve an icefloe catalog over the Iceberg REST protocol."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        run(args)
    except IcefloeError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except KeyboardInterrupt:
        return 0
    return 0
