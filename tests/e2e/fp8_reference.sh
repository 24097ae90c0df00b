#!/bin/sh
# SPDX-License-Identifier: MIT
# fp8_reference.sh — one FP8 WGAN-GP step of ganctl against an independent reference: a toy
# run in precision.mode "fp8" (recipe "current", level O1: products in FP8 with BF16
# results, everything else FP32) trains a few iterations, `ganctl grads` dumps both
# objectives and every parameter gradient at its checkpoint on a given batch (real, z,
# α), and fp8_reference.py recomputes the step with NumPy and ml_dtypes — the penalty's
# inner gradient and its double backward written out by hand, every product's operands
# cast to FP8 (E5M2 for gradients, E4M3 for the rest) — and compares. It also shows that
# the comparison can fail: the dump must be far from the same step without FP8, and the
# reference with E4M3 gradient operands (in the inner backward, the double backward, the
# first-order backward, everywhere) must not match it. Skipped (77) without a python3
# that can import ml_dtypes and numpy (pip install ml_dtypes); GANCTL_TEST_PYTHON names
# one to try first.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}

need_python "ml_dtypes, numpy" "pip install ml_dtypes"
reference="$srcdir/tests/e2e/fp8_reference.py"

test_begin fp8-reference
check_output=yes
# A passed comparison shows its table; the other checks' output is the run's log.
check_passed() {
    case $what in
    *reference*) sed 's/^/  /' "$work/check.out" ;;
    esac
}

# The mlp pair with leaky ReLU, small enough that the reference takes a moment. λ = 1
# keeps the Wasserstein term's first-order gradients and the penalty's second-order ones
# of one size in the critic's weights, so that the comparison sees each.
toy="-s precision.mode=fp8 -s precision.level=O1 -s fp8.recipe=current -s backend.threads=1
     -s generator.model.width=8 -s generator.model.depth=2 -s critic.model.width=8
     -s critic.model.depth=2 -s generator.model.activation=leaky_relu
     -s critic.model.activation=leaky_relu -s data.batch_size=16 -s critic.iterations=2
     -s loss.gradient-penalty.lambda=1 -s run.iterations=6 -s run.eval_every=0
     -s run.image_every=0 -s run.checkpoint_every=0"

# shellcheck disable=SC2086 # $toy is a list of options
check "a toy FP8 run (recipe current, O1) trains 6 iterations" \
    "$GANCTL" $toy -s run.dir="$work/run"
check "a batch of 16 with alpha" \
    "$python" "$reference" batch "$work/batch.safetensors" --size 16 --seed 1
check "ganctl grads dumps the step at the checkpoint" \
    "$GANCTL" grads --checkpoint "$work/run" --batch "$work/batch.safetensors" \
    --out "$work/grads.safetensors"
check "the dump says it computed in FP8" \
    grep -a -q '"precision":"fp8' "$work/grads.safetensors"
check "every gradient and loss agrees with the reference, which tells FP8 from FP32" \
    "$python" "$reference" check "$work/run/checkpoint.safetensors" "$work/batch.safetensors" \
    "$work/grads.safetensors"

# Another batch, of a size that is no power of two (the means' 1/B rounds), and the
# products split over two threads: the same agreement.
check "a batch of 24 with alpha" \
    "$python" "$reference" batch "$work/batch24.safetensors" --size 24 --seed 2
check "ganctl grads dumps it on two threads" \
    "$GANCTL" grads --checkpoint "$work/run" --batch "$work/batch24.safetensors" \
    -s backend.threads=2 --out "$work/grads24.safetensors"
check "that step too agrees with the reference (batch of 24)" \
    "$python" "$reference" check "$work/run/checkpoint.safetensors" \
    "$work/batch24.safetensors" "$work/grads24.safetensors"
test_end
