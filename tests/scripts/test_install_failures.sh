#!/usr/bin/env bash
# The install step's failure paths (scripts/common.sh, scripts/check_fresh_machine.sh):
# a package that cannot be installed stops the script with the package's name and
# the exact apt-get line, before any CMake step; the fresh-machine check says in
# one sentence when it is not run as root.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fails=0 passes=0
check() {  # check NAME EXPECTED_RC PATTERN OUTPUT RC
  local name="$1" want_rc="$2" pattern="$3" out="$4" rc="$5"
  if [[ "$rc" == "$want_rc" ]] && grep -qE -- "$pattern" <<<"$out"; then
    passes=$((passes + 1)); echo "ok: $name"
  else
    fails=$((fails + 1)); echo "FAIL: $name (exit $rc, wanted $want_rc and /$pattern/); output:"; sed 's/^/  | /' <<<"$out"
  fi
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# 1. apt-get fails (no network, unknown package): a fake apt-get first in PATH.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "E: Unable to locate package $*" >&2\nexit 100\n' >"$tmp/bin/apt-get"
chmod +x "$tmp/bin/apt-get"
out="$(PATH="$tmp/bin:$PATH" bash -c "source '$ROOT/scripts/common.sh'; oar_require_packages oar-no-such-package-1; echo reached-cmake" 2>&1)"
check "apt-get failure names the package and the command" 1 \
  "apt-get install -y --no-install-recommends oar-no-such-package-1" "$out" $?
grep -q reached-cmake <<<"$out" && { fails=$((fails + 1)); echo "FAIL: the script went on after a failed install"; }

# 2. Installed packages need nothing (and never call apt-get).
out="$(PATH="$tmp/bin:$PATH" bash -c "source '$ROOT/scripts/common.sh'; oar_require_packages bash coreutils; echo fine" 2>&1)"
check "installed packages pass without apt-get" 0 "^fine$" "$out" $?

# 3. Not root (and no password-less sudo): a sentence and the line to run as root.
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
  out="$(cd "$tmp" && setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="/usr/bin:/bin" \
    bash -c "source '$ROOT/scripts/common.sh'; oar_require_packages oar-no-such-package-2; echo reached-cmake" 2>&1)"
  rc=$?
  check "non-root says why it cannot install" 1 "not running as root" "$out" $rc
  check "non-root prints the command to run" 1 \
    "apt-get update && apt-get install -y --no-install-recommends oar-no-such-package-2" "$out" $rc
  grep -q reached-cmake <<<"$out" && { fails=$((fails + 1)); echo "FAIL: the script went on as non-root"; }
  out="$(cd "$tmp" && setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="/usr/bin:/bin" \
    bash "$ROOT/scripts/check_fresh_machine.sh" 2>&1)"
  check "fresh-machine check as non-root says so" 1 "must run as root" "$out" $?
else
  echo "note: not root or no setpriv; the non-root cases were not run"
fi

# 4. The fresh-machine check without debootstrap on PATH says so.
if [[ $(id -u) -eq 0 ]]; then
  mkdir -p "$tmp/nodeb"
  for t in bash git id dirname sed grep awk head mktemp; do ln -sf "$(command -v "$t")" "$tmp/nodeb/$t"; done
  out="$(PATH="$tmp/nodeb" bash "$ROOT/scripts/check_fresh_machine.sh" 2>&1)"
  check "fresh-machine check without debootstrap says so" 1 "needs debootstrap" "$out" $?
fi
echo "$passes passed, $fails failed"
((fails == 0))
