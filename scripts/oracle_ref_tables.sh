#!/usr/bin/env bash
# (Re)generate the Iceberg Java reference tables used by tests/interop into a cache directory.
#
#   scripts/oracle_ref_tables.sh [DIR]
#
# DIR defaults to $ICEFLOE_ORACLE_REF, else ~/.cache/icefloe-oracle/ref-tables.
# Idempotent: does nothing when DIR/index.json exists and DIR/.oracle-hash equals the hash of
# the oracle scripts (a DIR without a stamp, e.g. made by hand, is trusted as is). When the
# scripts changed, DIR is rebuilt. Tables are written in place (their metadata holds absolute
# paths, so they cannot be built elsewhere and moved); a lock file serialises concurrent runs.
# Needs the oracle venv (ORACLE_DIR/setup.sh); ICEFLOE_ORACLE_DIR overrides ../shared/oracle.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ORACLE="${ICEFLOE_ORACLE_DIR:-$(cd "$HERE/../.." && pwd)/shared/oracle}"
DIR="${1:-${ICEFLOE_ORACLE_REF:-$HOME/.cache/icefloe-oracle/ref-tables}}"
VENV="${ORACLE_VENV:-$HOME/.cache/icefloe-oracle/venv}"

[ -f "$ORACLE/make_reference_tables.py" ] || { echo "oracle scripts not found in $ORACLE" >&2; exit 2; }
[ -x "$VENV/bin/python" ] || { echo "oracle venv missing ($VENV): run $ORACLE/setup.sh" >&2; exit 2; }

# hash: "<name>\n<content>" for every *.py and *.sh of the oracle, names in C order
# (tests/interop/interop_support.py:oracle_hash computes the same)
hash="$(cd "$ORACLE" && for f in $(ls -1 -- *.py *.sh | LC_ALL=C sort); do
          printf '%s\n' "$f"; cat -- "$f"; done | sha256sum | cut -c1-16)"

mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9

if [ -f "$DIR/index.json" ]; then
  if [ ! -f "$DIR/.oracle-hash" ] || [ "$(cat "$DIR/.oracle-hash")" = "$hash" ]; then
    echo "reference tables up to date in $DIR"
    exit 0
  fi
  echo "oracle scripts changed: rebuilding $DIR"
fi
rm -rf -- "$DIR"
mkdir -p "$DIR"
"$VENV/bin/python" "$ORACLE/make_reference_tables.py" "$DIR" --catalog-db "$DIR/catalog.db"
echo "$hash" > "$DIR/.oracle-hash"
echo "reference tables written to $DIR"
