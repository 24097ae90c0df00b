#!/bin/sh
# SPDX-License-Identifier: MIT
# data-parallel.sh — training throughput of 1 process × 1 thread against 2 ranks × 1
# thread (mpirun), on the paper's toy (etc/toy-paper.conf) and on Fashion-MNIST
# (etc/fashion-mnist.conf, left out without Debian's dataset-fashion-mnist), with the
# ratio and the share of a 2-rank step spent in the collectives (ganctl's own count:
# time inside the all-reduces, waiting for the other rank included).
#
#   bench/data-parallel.sh GANCTL PLUGIN_PATH OUT_DIR [TOY_ITERATIONS [IMAGE_ITERATIONS]]
#
# Needs a ganctl built with MPI and at least two idle cores: on a loaded machine the two
# ranks wait for each other and the ratio says more about the load than about ganctl.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 GANCTL PLUGIN_PATH OUT_DIR [TOY_ITERATIONS [IMAGE_ITERATIONS]]" >&2; exit 2; }
ganctl=$1
GANCTL_PLUGIN_PATH=$2
out=$3
toy_iterations=${4:-40}
image_iterations=${5:-40}
top=$(cd "$(dirname "$0")/.." && pwd)
GANCTL_CONFIG=/dev/null
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GANCTL_PLUGIN_PATH GANCTL_CONFIG OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
mkdir -p "$out"

# it/s of this session, from the result line.
rate() { sed -n 's/.* at \([0-9.]*\) it\/s;.*/\1/p' "$1"; }

measure() {
    name=$1 conf=$2 iterations=$3
    set -- -c "$top/etc/$conf" -s run.iterations="$iterations" -s backend.threads=1 \
        -s run.eval_every=0 -s run.image_every=0 -s run.metrics_time=false
    rm -rf "$out/$name-1" "$out/$name-2"
    "$ganctl" "$@" -s run.dir="$out/$name-1" >"$out/$name-1.out" 2>"$out/$name-1.err"
    mpirun --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
        "$ganctl" "$@" -s run.dir="$out/$name-2" >"$out/$name-2.out" 2>"$out/$name-2.err"
    one=$(rate "$out/$name-1.out")
    two=$(rate "$out/$name-2.out")
    share=$(sed -n 's/.*collectives (\([0-9.]*%\)).*/\1/p' "$out/$name-2.err")
    awk -v n="$name" -v a="$one" -v b="$two" -v s="$share" -v i="$iterations" 'BEGIN {
        printf "%-14s %5d it  1 rank %8.3f it/s  2 ranks %8.3f it/s  ratio %.2f  collectives %s of the 2-rank session\n",
               n, i, a, b, b / a, s }'
}

measure toy-paper toy-paper.conf "$toy_iterations"
if [ -d /usr/share/datasets/fashion-mnist ]; then
    measure fashion-mnist fashion-mnist.conf "$image_iterations"
fi
