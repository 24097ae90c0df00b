#!/bin/sh
# SPDX-License-Identifier: MIT
# quickstart.sh — sets a fresh Debian 12 machine up for ganctl and builds it out of
# tree in build/; `run` then installs into inst/ and runs ganctl, `test` runs the tests.
#
#   ./quickstart.sh run [ganctl options]   build, install into ./inst, run ganctl
#   ./quickstart.sh test                   build, make check, make distcheck
#
# CONFIGURE_FLAGS is passed to configure (e.g. CONFIGURE_FLAGS=--without-cuda).
set -eu

action=${1:-run}
[ $# -gt 0 ] && shift
case $action in
run|test) ;;
*) echo "usage: $0 run [ganctl options] | $0 test" >&2; exit 2 ;;
esac

deps="build-essential autoconf automake libtool pkg-config groff-base
      libopenblas-dev libconfig-dev check libjansson-dev libpng-dev libjpeg-dev zlib1g-dev
      libcairo2-dev libdnnl-dev dataset-fashion-mnist libopenmpi-dev openmpi-bin"
missing=
for p in $deps; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "quickstart: installing$missing" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi
mkdir -p build
cd build
# shellcheck disable=SC2086 # CONFIGURE_FLAGS is a list of flags
[ -f Makefile ] || ../configure --prefix="$top/inst" --enable-werror ${CONFIGURE_FLAGS:-}
jobs=$(nproc 2>/dev/null || echo 2)

make -j"$jobs"
case $action in
run)
    make install >/dev/null
    exec "$top/inst/bin/ganctl" "$@"
    ;;
test)
    make -j"$jobs" check
    make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--without-cuda
    ;;
esac
