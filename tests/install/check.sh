#!/usr/bin/env bash
# The installed tool, as a user gets it: builds the Debian package from a configured build folder,
# installs it with apt, then runs headcount from PATH, renders its man page and loads its bash and
# zsh completions. Needs root (or sudo); CI runs it after the test suite.
#
#   tests/install/check.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
fail() { echo "install check: $*" >&2; exit 1; }
apt_install() {  # once more after refreshing the package lists when the first try fails
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@" > /dev/null 2>&1 && return
  $sudo apt-get update -q > /dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@" > /dev/null 2>&1
}

apt_install dpkg-dev man-db zsh || fail "apt-get could not install dpkg-dev, man-db and zsh"
rm -f "$build"/headcount_*.deb
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$build" > /dev/null 2>&1 || fail "cpack could not build the package"
deb=$(ls "$build"/headcount_*.deb)
apt_install --reinstall "$deb" || fail "apt-get could not install $deb"

[ "$(command -v headcount)" = /usr/bin/headcount ] || fail "headcount is not /usr/bin/headcount on PATH"
version=$(headcount --version)
echo "$version" | grep -Eq '^headcount [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]+|unknown\)$' || fail "unexpected --version: $version"
echo "$version" | grep -Eq '^ONNX [0-9.]+, protobuf [0-9.]+$' || fail "--version names no ONNX and protobuf versions: $version"
# bert_tiny: 20,928 parameters, torch's count (samples/bert_tiny.counts.tsv).
headcount audit "$root/samples/bert_tiny.onnx" | grep -q "parameters  20,928 stored" || fail "the installed tool audits bert_tiny wrong"
man -l /usr/share/man/man1/headcount.1 2> /dev/null | grep -q "EXIT STATUS" || fail "man -l does not render the page"
man -l /usr/share/man/man1/headcount.1 2> /dev/null | grep -q -- "--max-params" || fail "the man page lacks the options"
bash -c 'source /usr/share/bash-completion/completions/headcount; complete -p headcount' | grep -q "_headcount headcount" ||
  fail "the bash completion is not registered"
words=$(bash -c 'source /usr/share/bash-completion/completions/headcount; COMP_WORDS=(headcount audit --format ""); COMP_CWORD=3; _headcount; echo "${COMPREPLY[*]}"')
[ "$words" = "text json jsonl markdown sarif github html" ] || fail "bash completes --format with '$words'"
zsh -n /usr/share/zsh/vendor-completions/_headcount || fail "the zsh completion does not parse"
zsh -c 'autoload -U compinit && compinit -u && [[ ${_comps[headcount]} == _headcount ]]' || fail "zsh does not register the completion"
[ -f /usr/share/headcount/headcount.schema.json ] || fail "the JSON Schema is not installed"
echo "install check: $(basename "$deb") installs and works ($(echo "$version" | head -1))"
