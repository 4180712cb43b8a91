#!/usr/bin/env bash
# Regenerates every golden file from the current build. Review `git diff tests/golden` like code:
# every changed number must be explained by the change that moved it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/headcount}
grep -v '^#' "$here/cases.txt" | while IFS='|' read -r name rc args; do
  name=$(echo $name); args=$(echo $args)
  [ -n "$name" ] || continue
  (cd "$root/samples" && "$bin" $args > "$here/$name") || true
  echo "wrote tests/golden/$name"
done
