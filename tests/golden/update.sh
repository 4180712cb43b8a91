#!/usr/bin/env bash
# Regenerates every golden file from the current build. Review `git diff tests/golden` like code:
# every changed number must be explained by the change that moved it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/headcount}
version=$("$bin" --version | head -n 1 | awk '{print $2}')
grep -v '^#' "$here/cases.txt" | while IFS='|' read -r name rc args; do
  name=$(echo $name); args=$(echo $args)
  [ -n "$name" ] || continue
  # The version is masked, as tests/golden/run.cmake does.
  (cd "$root/samples" && "$bin" $args | sed -e "s/headcount $version/headcount @VERSION@/g" \
      -e "s/\"version\": \"$version\"/\"version\": \"@VERSION@\"/g" -e "s/\"version\":\"$version\"/\"version\":\"@VERSION@\"/g" \
      -e "s/\"semanticVersion\": \"$version\"/\"semanticVersion\": \"@VERSION@\"/g" > "$here/$name") || true
  echo "wrote tests/golden/$name"
done
