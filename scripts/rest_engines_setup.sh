#!/usr/bin/env bash
# What the REST catalog interop tests need beside the oracle venv (idempotent, a few seconds when
# done): DuckDB's httpfs extension (its iceberg extension talks HTTP through it) from PyPI, and
# HttpClient 5 for Iceberg Java's RESTCatalog (the oracle's PyPI runtime jar lacks it) from
# Debian, relocated into Iceberg's shaded package by tests/interop/rest_java_jars.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cache="${ICEFLOE_REST_CACHE:-$HOME/.cache/icefloe-rest}"
mkdir -p "$cache"
if ! ls "$cache"/duckdb-ext/duckdb_extension_httpfs/extensions/*/httpfs.duckdb_extension >/dev/null 2>&1; then
  # the wheel pins duckdb==1.5.5 (the oracle's); only its extension file is used
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    --target "$cache/duckdb-ext" "duckdb-extension-httpfs==1.5.5" \
    || echo "warning: could not install duckdb-extension-httpfs; the DuckDB REST test will not run" >&2
fi
if [ ! -f /usr/share/java/httpclient5.jar ] || [ ! -f /usr/share/java/httpcore5.jar ]; then
  if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo apt-get"; fi
  $apt_get install -y -q libhttpclient5-java libhttpcore5-java >/dev/null 2>&1 \
    || { $apt_get update -q >/dev/null 2>&1; $apt_get install -y -q libhttpclient5-java libhttpcore5-java >/dev/null; } \
    || echo "warning: could not install HttpClient 5; the Iceberg Java REST test will not run" >&2
fi
jar="$cache/iceberg-shaded-httpclient5.jar"
if [ -f /usr/share/java/httpclient5.jar ] && { [ ! -f "$jar" ] || [ tests/interop/rest_java_jars.py -nt "$jar" ]; }; then
  .venv/bin/python tests/interop/rest_java_jars.py "$jar" >/dev/null
fi
