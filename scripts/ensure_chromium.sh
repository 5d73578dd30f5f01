#!/usr/bin/env bash
# The UI end-to-end test drives Debian's headless Chromium (no browser download at run time).
set -u
for b in /usr/bin/chromium /usr/bin/chromium-browser; do [ -x "$b" ] && exit 0; done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian chromium for the UI end-to-end test..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/finops-chromium-install.log 2>&1
fi
for b in /usr/bin/chromium /usr/bin/chromium-browser; do [ -x "$b" ] && exit 0; done
echo "ERROR: headless Chromium is required by tests/ui (install it: apt-get install chromium; log: /tmp/finops-chromium-install.log)"
exit 1
