#!/usr/bin/env bash
# fresh_debian_check.sh: the README's two commands on a fresh, minimal Debian 12, to catch a
# missing install step that a developer's machine (which has more packages) would hide.
#
#   tools/fresh_debian_check.sh [ROOT_DIR]     (as root; ROOT_DIR default /tmp/opd-fresh-root)
#
# Builds a minimal Debian 12 root file system with `debootstrap --variant=minbase bookworm`
# (reused when ROOT_DIR already holds one), clones this repository's HEAD into it, mounts
# /proc, /sys and /dev, and inside a chroot runs `tools/dev.sh test` (which installs what is
# missing, builds and passes the tests) and then `tools/dev.sh run` with the client example
# against it. Prints each step's time. Without debootstrap, or when not root, it says so and
# exits 0 (skipped); `apt-get install debootstrap` makes it runnable. It needs Debian's
# package mirror (the chroot installs the project's packages from it).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh_debian_check: SKIP: needs root (debootstrap, chroot, mounts)"
  exit 0
fi
if ! command -v debootstrap >/dev/null; then
  echo "fresh_debian_check: SKIP: debootstrap is not installed (apt-get install debootstrap)"
  exit 0
fi

root=${1:-/tmp/opd-fresh-root}
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

step() { # step NAME COMMAND...: runs and times one step
  local name=$1 t0=$SECONDS
  shift
  echo "fresh_debian_check: $name ..."
  "$@"
  echo "fresh_debian_check: $name took $((SECONDS - t0)) s"
}

mirror=${OPD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ ! -x "$root/usr/bin/apt-get" ]; then
  step "debootstrap --variant=minbase bookworm" \
    debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
fi

for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  case $m in
  proc) mount -t proc proc "$root/proc" ;;
  sys) mount -t sysfs sys "$root/sys" ;;
  *) mount --bind "/$m" "$root/$m" ;;
  esac
  mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"

rm -rf "$root/opd"
git clone -q --no-hardlinks "$repo" "$root/opd"

in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 bash -c "$1"; }

step "tools/dev.sh test" in_root "cd /opd && tools/dev.sh test"

run_example() {
  in_root "cd /opd && (tools/dev.sh run >/tmp/opd-run.log 2>&1 &) &&
    for i in \$(seq 1 600); do grep -q ' ready' /tmp/opd-run.log && break; sleep 0.1; done &&
    ./build-release/client/hello_add tcp://127.0.0.1:7470; rc=\$?;
    pkill -TERM -x opd; exit \$rc"
}
step "tools/dev.sh run and the client example" run_example
echo "fresh_debian_check: passed"
