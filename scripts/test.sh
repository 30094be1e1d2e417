#!/usr/bin/env bash
# The test suite: the oracle harness (Iceberg Java, PyIceberg, DuckDB) is set up first so the
# interoperability tests run; ICEFLOE_SKIP_ORACLE=1 skips them for a quick local run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${ICEFLOE_SKIP_ORACLE:-0}" != 1 ]; then
  oracle_dir="${ICEFLOE_ORACLE_DIR:-$(cd .. && pwd)/shared/oracle}"
  if [ -f "$oracle_dir/setup.sh" ]; then
    bash "$oracle_dir/setup.sh" >/tmp/icefloe-oracle-setup.log 2>&1 || { cat /tmp/icefloe-oracle-setup.log; exit 1; }
    export ICEFLOE_ORACLE_DIR="$oracle_dir"
    export ICEFLOE_ORACLE_REF="${ICEFLOE_ORACLE_REF:-$HOME/.cache/icefloe-oracle/ref-tables}"
    scripts/oracle_ref_tables.sh "$ICEFLOE_ORACLE_REF"
    scripts/rest_engines_setup.sh
  fi
fi
scripts/browser_setup.sh || true
exec .venv/bin/python -m pytest "$@"
