#!/usr/bin/env bash
# The health report's HTML page is checked in a real headless browser (tests/table/test_health.py):
# install Debian's chromium when it is missing (idempotent; the test skips if this fails).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo -n apt-get"; fi
export DEBIAN_FRONTEND=noninteractive
$apt_get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
  || { $apt_get update -q >/dev/null 2>&1 && $apt_get install -y -q --no-install-recommends chromium >/dev/null 2>&1; } \
  || echo "warning: could not install chromium; the health report's browser test will be skipped" >&2
