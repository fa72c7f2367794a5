#!/usr/bin/env bash
# Install a headless browser for the annotation app's browser tests (tests/test_annotate_browser.py):
# Debian's chromium and its WebDriver, chromium-driver, from Debian's package registry (root).
# Used by the tests and runnable by hand; idempotent: installed ones are left as they are.
#
#   bash scripts/browser.sh      # install if needed, print the versions
set -euo pipefail

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    chromium --version 2>/dev/null
    chromedriver --version
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "browser.sh: chromium and chromedriver are missing and installing them needs root" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver >/dev/null
chromium --version 2>/dev/null
chromedriver --version
