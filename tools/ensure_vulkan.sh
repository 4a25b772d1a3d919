#!/usr/bin/env bash
# Make sure wgpu finds a Vulkan adapter (a GPU, or Mesa's lavapipe on the CPU); without one,
# install Mesa's Vulkan drivers with apt. An OpenGL-only adapter (llvmpipe through GLES) does not
# count: the runtime needs Vulkan's features (64-bit atomics). Needs root (or sudo) only to install.
set -u
PY=${1:-.venv/bin/python}
probe() {
  "$PY" - <<'PY' 2>/dev/null
import wgpu
for a in wgpu.gpu.enumerate_adapters_sync():
    if a.info.get("backend_type") == "Vulkan":
        print(a.info.get("device", "?"), "/", a.info.get("adapter_type", "?"), "/ Vulkan")
        break
PY
}
if out=$(probe) && [ -n "$out" ]; then
  echo "GPU adapter: $out"
  exit 0
fi
echo "No Vulkan adapter found: installing Mesa's Vulkan drivers (mesa-vulkan-drivers)..."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
if out=$(probe) && [ -n "$out" ]; then
  echo "GPU adapter: $out"
else
  echo "warning: still no Vulkan adapter; GPU features will be unavailable" >&2
fi
exit 0
