#!/bin/sh
# Install Debian's chromium for the fleet view test (tests/fleet/test_browser.py), when absent.
# playwright (a test extra) drives it; no browser is downloaded. Must run as root.
set -eu
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium
