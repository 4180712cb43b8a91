#!/usr/bin/env bash
# headcount quick start: installs what is missing (Debian packages), builds Release into build/,
# then audits a bundled sample (default), runs the whole test suite (`test`) or makes the Debian
# package (`deb`).
#
#   ./quickstart.sh          install + build + audit samples/bert_base_external.onnx
#   ./quickstart.sh test     install + build (with the Python module) + run every test (ctest); the
#                            GGUF side-by-side test's independent parser comes from npm
#   ./quickstart.sh deb      install + build + build/headcount_VERSION_ARCH.deb
#   ./quickstart.sh python   install + build the Python module into build/python (import headcount)
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-audit}"
case "$mode" in
  audit | test | deb | python) ;;
  *) echo "usage: ./quickstart.sh [audit|test|deb|python]" >&2; exit 2 ;;
esac

# What the tool needs; the test suite adds Catch2 and the schema checker.
packages=(cmake make g++ libcurl4-openssl-dev libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev libspdlog-dev nlohmann-json3-dev libtomlplusplus-dev)
[ "$mode" = test ] && packages+=(catch2 python3 python3-jsonschema pybind11-dev python3-dev python3-pytest python3-torch python3-onnx
                                  chromium chromium-driver python3-selenium nodejs nginx-light)
[ "$mode" = deb ] && packages+=(dpkg-dev)  # dpkg-shlibdeps: the package's dependencies
[ "$mode" = python ] && packages+=(python3 pybind11-dev python3-dev)
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

# Debian's nodejs comes without npm (a package of its own); NodeSource's nodejs has it, and
# conflicts with Debian's npm: npm is installed only when the command is missing.
if [ "$mode" = test ] && ! command -v npm > /dev/null; then
  echo "headcount: installing npm" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends npm
fi

# The audit builds the tool alone; the tests build everything. Build output goes to build.log,
# whose end is shown when a step fails.
tests=OFF python=OFF
[ "$mode" = test ] && tests=ON python=ON  # the Python module's tests need torch
[ "$mode" = python ] && python=ON
step() {
  "$@" >> build.log 2>&1 || { echo "headcount: '$*' failed; the end of build.log:" >&2; tail -n 40 build.log >&2; exit 1; }
}
: > build.log
step cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHEADCOUNT_TESTS=$tests -DHEADCOUNT_PYTHON=$python
step cmake --build build -j"$(nproc)"

# The GGUF side-by-side test's independent parser, from npm, once.
if [ "$mode" = test ] && [ ! -d build/npm/node_modules/@huggingface/gguf ]; then
  step npm install --prefix build/npm --no-audit --no-fund --loglevel=error @huggingface/gguf@0.4.6
fi

case "$mode" in
  audit) exec build/headcount audit samples/bert_base_external.onnx ;;
  test) cd build && exec ctest --output-on-failure -j"$(nproc)" ;;
  deb)
    rm -f build/headcount_*.deb
    step cpack -G DEB --config build/CPackConfig.cmake -B build
    deb=$(ls build/headcount_*.deb)
    echo "headcount: built $deb; install it with: sudo apt-get install ./$deb" ;;
  python) echo "headcount: built build/python/headcount; use it with: export PYTHONPATH=$PWD/build/python" ;;
esac
