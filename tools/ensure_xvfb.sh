#!/usr/bin/env bash
# The viewer's tests open a real window on a virtual X server: make sure `xvfb-run` exists
# (Debian's xvfb; installed with apt when missing, as root or with sudo).
set -u
if command -v xvfb-run >/dev/null 2>&1; then
  exit 0
fi
echo "xvfb-run missing: installing Debian's xvfb (for the viewer's tests)..."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq xvfb xauth >/dev/null
command -v xvfb-run >/dev/null 2>&1 || echo "warning: xvfb-run still missing" >&2
exit 0
