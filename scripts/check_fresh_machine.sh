#!/usr/bin/env bash
# Runs the README's commands on a brand-new Debian 12, as a new user would:
# a minimal root made by `debootstrap --variant=minbase bookworm`, the
# repository's committed HEAD cloned into it, each command run there with
# chroot in a clean environment (env -i).
#
# Usage: scripts/check_fresh_machine.sh [--keep] [COMMAND | wheel]...
#   COMMAND  a shell command run in the clone's root inside the fresh root,
#            e.g. "bash scripts/run_demo.sh"; all commands share one root, in
#            order, so a later one builds incrementally like on a real machine.
#   wheel    builds the repaired wheel (scripts/build_wheel.sh) in that root,
#            then installs it into a venv in a second fresh root that has only
#            python3 and python3-venv (no libdnnl), imports oar, runs a matmul
#            and a conv2d on cpu and lists the plugins (scripts/wheel_smoke.py).
#   --keep   leave the roots under $OAR_FRESH_WORK for a look (mounts removed).
# Default: "bash scripts/run_demo.sh" "bash scripts/run_tests.sh" wheel.
#
# Needs root and the Debian package debootstrap. The untouched base root is
# cached in $OAR_FRESH_CACHE (default /var/cache/oar-fresh-machine, outside the
# repository) and copied for each run. Package access here depends on the
# machine's CA certificates, pip and apt configuration, so those are copied
# into the root (with /etc/resolv.conf). Not part of .ci/run: it takes long.
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${OAR_FRESH_CACHE:-/var/cache/oar-fresh-machine}"
WORK_PARENT="${OAR_FRESH_WORK:-/var/tmp}"
SUITE=bookworm

say() { echo "check_fresh_machine: $*"; }
die() { echo "check_fresh_machine: $*" >&2; exit 1; }

keep=0
commands=()
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) commands+=("$arg") ;;
  esac
done
((${#commands[@]})) || commands=("bash scripts/run_demo.sh" "bash scripts/run_tests.sh" wheel)

[[ $(id -u) -eq 0 ]] || die "must run as root (it uses debootstrap, mount and chroot); try: sudo bash scripts/check_fresh_machine.sh"
command -v debootstrap >/dev/null 2>&1 ||
  die "needs debootstrap, which is not installed; install it with: apt-get install -y debootstrap"
command -v git >/dev/null 2>&1 || die "needs git to clone the repository's HEAD; install it with: apt-get install -y git"
head_rev="$(git -C "$OAR_ROOT" rev-parse HEAD)" || die "$OAR_ROOT is not a git repository"
if [[ -n "$(git -C "$OAR_ROOT" status --porcelain --untracked-files=no)" ]]; then
  say "note: uncommitted changes are not checked; the root gets the committed HEAD $head_rev"
fi

# The mirror the host uses (deb.debian.org unless its sources name another).
mirror="$(grep -hoE '^(URIs:|deb) +http[^ ]*/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  grep -oE 'http[^ ]*' | head -n1 || true)"
mirror="${mirror:-http://deb.debian.org/debian}"

# ---- the cached base root -------------------------------------------------
base="$CACHE/$SUITE-minbase"
if [[ ! -f "$base/.oar-complete" ]]; then
  say "making the base root $base (debootstrap --variant=minbase $SUITE $mirror; once)"
  mkdir -p "$CACHE"
  rm -rf --one-file-system "$base.partial"
  debootstrap --variant=minbase "$SUITE" "$base.partial" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -n 20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
  touch "$base.partial/.oar-complete"
  rm -rf --one-file-system "$base"
  mv "$base.partial" "$base"
fi

# ---- per-run roots, mounts and cleanup --------------------------------------
work="$(mktemp -d "$WORK_PARENT/oar-fresh.XXXXXX")"
roots=()

mounted_under() {  # prints mount points at or below $1, deepest first
  awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}

unmount_root() {
  local r="$1" m p
  # Processes left running inside the root (a daemon a package started) hold its mounts.
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/root" 2>/dev/null)" == "$r"* ]] && { kill -9 "${p#/proc/}" 2>/dev/null || true; }
  done
  for m in $(mounted_under "$r"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}

cleanup() {
  local status=$? r
  set +e
  trap - EXIT INT TERM HUP
  for r in "${roots[@]}"; do unmount_root "$r"; done
  local left=""
  for r in "${roots[@]}"; do left+="$(mounted_under "$r")"; done
  if [[ -n "$left" ]]; then
    echo "check_fresh_machine: could not unmount: $left; NOT deleting $work (remove it by hand after unmounting)" >&2
  elif ((keep)); then
    say "kept the roots in $work"
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "check_fresh_machine: interrupted" >&2; exit 130' INT TERM HUP

new_root() {  # new_root NAME: sets $root to a mounted copy of the base with the host's package access
  local r="$work/$1"
  root="$r"
  cp -a "$base" "$r"
  rm -f "$r/.oar-complete"
  roots+=("$r")
  cp -L /etc/resolv.conf "$r/etc/resolv.conf"
  # Package access: CA certificates (also the local ones, which
  # update-ca-certificates keeps when ca-certificates is installed later),
  # pip's and apt's configuration.
  mkdir -p "$r/etc/ssl/certs" "$r/usr/local/share/ca-certificates"
  [[ -f /etc/ssl/certs/ca-certificates.crt ]] && cp -L /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/"
  [[ -d /usr/local/share/ca-certificates ]] && cp -a /usr/local/share/ca-certificates/. "$r/usr/local/share/ca-certificates/"
  [[ -f /etc/pip.conf ]] && cp -L /etc/pip.conf "$r/etc/pip.conf"
  [[ -d /etc/xdg/pip ]] && mkdir -p "$r/etc/xdg" && cp -a /etc/xdg/pip "$r/etc/xdg/"
  [[ -d /root/.config/pip ]] && mkdir -p "$r/root/.config" && cp -a /root/.config/pip "$r/root/.config/"
  [[ -d /etc/apt/apt.conf.d ]] && cp -a /etc/apt/apt.conf.d/. "$r/etc/apt/apt.conf.d/"
  [[ -d /etc/apt/auth.conf.d ]] && cp -a /etc/apt/auth.conf.d "$r/etc/apt/"
  # The host's sources replace debootstrap's (both would list the suite twice).
  rm -f "$r/etc/apt/sources.list"
  [[ -f /etc/apt/sources.list ]] && cp -L /etc/apt/sources.list "$r/etc/apt/sources.list"
  if [[ -d /etc/apt/sources.list.d ]]; then
    mkdir -p "$r/etc/apt/sources.list.d"
    find /etc/apt/sources.list.d -maxdepth 1 \( -name '*.list' -o -name '*.sources' \) -exec cp -L {} "$r/etc/apt/sources.list.d/" \;
  fi
  # No daemons may start inside the root (Debian's policy-rc.d convention).
  printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
  chmod +x "$r/usr/sbin/policy-rc.d"
  mount -t proc proc "$r/proc"
  mount -t sysfs sys "$r/sys"
  mount --rbind /dev "$r/dev"
  mount --make-rslave "$r/dev"
}

# in_root ROOT LABEL COMMAND: runs COMMAND in /work/oar of ROOT, clean env.
in_root() {
  local r="$1" label="$2" cmd="$3" log="$work/$2.log"
  say "[$label] $cmd"
  local start=$SECONDS
  if chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM=dumb /bin/bash -c "cd /work/oar && $cmd" >"$log" 2>&1 </dev/null; then
    say "[$label] passed in $((SECONDS - start)) s"
    return 0
  else
    local rc=$?  # the command's status (after `fi`, $? would be the if's: 0)
  fi
  echo "check_fresh_machine: FAILED: '$cmd' exited with status $rc after $((SECONDS - start)) s; its last lines:" >&2
  tail -n 40 "$log" | sed 's/^/  | /' >&2
  cp "$log" "$WORK_PARENT/oar-fresh-last-failure.log" 2>/dev/null &&
    echo "check_fresh_machine: whole log: $WORK_PARENT/oar-fresh-last-failure.log" >&2
  return "$rc"
}

new_root main
main_root="$root"
mkdir -p "$main_root/work"
git clone -q --no-hardlinks "$OAR_ROOT" "$main_root/work/oar"
git -C "$main_root/work/oar" checkout -q --detach "$head_rev"
say "fresh root $main_root with HEAD $head_rev"

n=0
for cmd in "${commands[@]}"; do
  n=$((n + 1))
  if [[ "$cmd" == wheel ]]; then
    in_root "$main_root" "$n-wheel-build" "bash scripts/build_wheel.sh"
    wheel_file="$(cd "$main_root/work/oar/dist" && ls -t oar-*manylinux*.whl 2>/dev/null | head -n1)"
    [[ -n "$wheel_file" ]] || die "scripts/build_wheel.sh passed but left no repaired wheel in dist/"
    new_root bare
    bare="$root"
    mkdir -p "$bare/work/oar"
    cp "$main_root/work/oar/dist/$wheel_file" "$main_root/work/oar/scripts/wheel_smoke.py" "$bare/work/oar/"
    # Only python3 and python3-venv: the wheel must bring everything else.
    in_root "$bare" "$n-wheel-install" \
      "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null &&
       ! dpkg-query -W libdnnl2 2>/dev/null && python3 -m venv /opt/venv && /opt/venv/bin/pip install -q ./$wheel_file &&
       cd / && /opt/venv/bin/python /work/oar/wheel_smoke.py"
  else
    in_root "$main_root" "$n" "$cmd"
  fi
done
say "all passed: ${commands[*]}"
