#!/usr/bin/env bash
# headcount quick start: installs what is missing (Debian packages), builds Release into build/,
# then either audits a bundled sample (default) or runs the whole test suite (`test`).
#
#   ./quickstart.sh          install + build + audit samples/bert_base_external.onnx
#   ./quickstart.sh test     install + build + run every test (ctest)
set -euo pipefail
cd "$(dirname "$0")"

packages=(cmake make g++ libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev libspdlog-dev catch2 nlohmann-json3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "headcount: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j"$(nproc)" >> build.log 2>&1 || { cat build.log; exit 1; }

case "${1:-audit}" in
  audit) exec build/headcount audit samples/bert_base_external.onnx ;;
  test) cd build && exec ctest --output-on-failure -j"$(nproc)" ;;
  *) echo "usage: ./quickstart.sh [audit|test]" >&2; exit 2 ;;
esac
