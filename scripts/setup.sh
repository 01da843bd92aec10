#!/usr/bin/env bash
# Installs every Debian package actorps needs (idempotent) and builds it in build/ (Release).
# Usage: scripts/setup.sh            (as root, or with sudo available)
#        ACTORPS_SKIP_BUILD=1 scripts/setup.sh   install only
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake make pkg-config
  libcaf-dev capnproto libcapnp-dev
  libboost-program-options-dev doctest-dev
  libopenblas-dev zlib1g-dev nlohmann-json3-dev libabsl-dev libyaml-cpp-dev
  libonnx-dev libprotobuf-dev libopencv-dnn-dev
  dataset-fashion-mnist
  python3 python3-matplotlib python3-yaml
  python3-dev python3-numpy python3-torch python3-onnx pybind11-dev
  iproute2 iperf3
  openssl libssl-dev
  prometheus-cpp-dev prometheus python3-prometheus-client
  clang libclang-rt-14-dev
  time
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

if [ "${ACTORPS_SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
  cmake --build build -j "$(nproc)"
  # `python3 -c "import actorps"` from anywhere: the user's site directory gets a .pth file
  # naming build/python (an editable install: a rebuild is seen at once, nothing is copied).
  if [ -f build/python/actorps/__init__.py ]; then
    site=$(/usr/bin/python3 -m site --user-site)
    mkdir -p "$site"
    echo "$PWD/build/python" > "$site/actorps-build.pth"
  fi
fi
