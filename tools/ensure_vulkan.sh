#!/usr/bin/env bash
# Make sure wgpu finds a GPU adapter; on a machine without one, install Mesa's Vulkan drivers
# (lavapipe, a CPU Vulkan implementation) with apt. Needs root (or sudo) only in that case.
set -u
PY=${1:-.venv/bin/python}
probe() {
  "$PY" - <<'PY' 2>/dev/null
import wgpu
a = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
print(a.info.get("device", "?"), "/", a.info.get("backend_type", "?"))
PY
}
if out=$(probe) && [ -n "$out" ]; then
  echo "GPU adapter: $out"
  exit 0
fi
echo "No GPU adapter found: installing Mesa's Vulkan drivers (mesa-vulkan-drivers)..."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
if out=$(probe) && [ -n "$out" ]; then
  echo "GPU adapter: $out"
else
  echo "warning: still no GPU adapter; GPU features will be unavailable" >&2
fi
exit 0
