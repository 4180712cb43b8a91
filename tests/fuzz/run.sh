#!/usr/bin/env bash
# The sanitizer build and a fuzzing run, as CI does them (see tests/fuzz/README.md).
#
#   tests/fuzz/run.sh [SECONDS]      build with clang, ASan+UBSan and the libFuzzer harnesses into
#                                    build-fuzz/, run the whole test suite there, then fuzz each
#                                    harness for SECONDS (default 60) over a copy of the corpus;
#                                    0 builds and tests without fuzzing
#
# Installs clang and its sanitizer runtimes with apt when they are missing, and fails (never skips)
# when it cannot. A crash, a UBSan report, a timeout of 10 s on one input or one allocation above
# 256 MiB is a failure; libFuzzer writes the input that caused it to build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"

packages=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
command -v clang++ >/dev/null || { echo "fuzz: clang++ is not installed" >&2; exit 1; }

log=build-fuzz.log
{ CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEADCOUNT_FUZZ=ON &&
  cmake --build build-fuzz -j"$(nproc)"; } > "$log" 2>&1 || { tail -n 40 "$log"; echo "fuzz: build failed (log: $log)" >&2; exit 1; }

echo "fuzz: the test suite under ASan and UBSan" >&2
(cd build-fuzz && ctest --output-on-failure -j"$(nproc)")

[ "$seconds" -gt 0 ] || exit 0
mkdir -p build-fuzz/artifacts
for harness in fuzz_model fuzz_bytes fuzz_gguf fuzz_fidelity; do
  work=$(mktemp -d)
  seeds=(tests/fuzz/corpus tests/fuzz/regressions)
  [ "$harness" != fuzz_gguf ] || seeds=(tests/fuzz/corpus-gguf tests/fuzz/regressions-gguf)
  [ "$harness" != fuzz_fidelity ] || seeds=(tests/fuzz/corpus-fidelity)
  echo "fuzz: $harness for ${seconds}s" >&2
  build-fuzz/tests/fuzz/$harness -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=256 \
    -max_len=300000 -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/ "$work" "${seeds[@]}" \
    2> "build-fuzz/$harness.log" || { tail -n 60 "build-fuzz/$harness.log"; rm -rf "$work"; exit 1; }
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)|cov: ' "build-fuzz/$harness.log" | tail -n 3 >&2
  rm -rf "$work"
done
echo "fuzz: no findings" >&2
