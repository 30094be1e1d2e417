#!/usr/bin/env bash
# Create .venv and install icefloe with its dev extras; fast no-op when nothing changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${ICEFLOE_PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.icefloe-stamp
want="$(sha256sum pyproject.toml | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && .venv/bin/python -c "import icefloe" 2>/dev/null; then
  exit 0
fi
echo "installing icefloe and its dev dependencies into .venv ..."
.venv/bin/pip install -q --disable-pip-version-check -e ".[dev]" 2>&1 | grep -v -e "^WARNING: Location" -e "^$" || true
.venv/bin/python -c "import icefloe, pyarrow, fastavro, sqlalchemy"
echo "$want" > "$stamp"
