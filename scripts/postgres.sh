#!/usr/bin/env bash
# A throw-away PostgreSQL server on 127.0.0.1 for the SQL catalog (Debian postgresql-15 packages;
# installed with apt-get when missing and run as root).
#
#   scripts/postgres.sh start DIR [--port N] [--durable]   # prints ICEFLOE_PG_URI=... lines
#   scripts/postgres.sh stop DIR
#   eval "$(scripts/postgres.sh start /tmp/pg --port 20510)"; echo "$ICEFLOE_PG_URI"
#
# DIR holds the data directory, the log (DIR/postgres.log) and DIR/server.json (pid, port,
# password, URLs); remove it after `stop`. Without --port a free port is taken. The server runs
# as the `postgres` user when started by root, listens on 127.0.0.1 only (no Unix socket), and
# requires the generated password. It is not durable (fsync=off) unless --durable.
# The same code backs the test suite's session fixture: icefloe/testing/postgres.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -x "$ROOT/.venv/bin/python" ] || "$ROOT/scripts/bootstrap.sh" >&2
exec "$ROOT/.venv/bin/python" -m icefloe.testing.postgres "$@"
