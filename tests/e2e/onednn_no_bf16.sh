#!/bin/sh
# SPDX-License-Identifier: MIT
# onednn_no_bf16.sh — tests/unit/check_onednn as on a CPU without a BF16 dot product,
# on any x86-64 CPU: GANCTL_TEST_NO_BF16_DOT makes the backend take this CPU for one
# without, and DNNL_MAX_CPU_ISA=AVX2 holds oneDNN to the kernels of such a CPU (an AVX2
# one with no AVX-512). The FP32, FP16 and BF16 convolutions run, on those kernels (the
# 16-bit ones staged through FP32); the BF16 GEMMs stay off oneDNN under "auto". Skips
# (77) as check_onednn does: no oneDNN, not x86-64.
GANCTL_TEST_NO_BF16_DOT=1
DNNL_MAX_CPU_ISA=AVX2
export GANCTL_TEST_NO_BF16_DOT DNNL_MAX_CPU_ISA
test -x ./tests/unit/check_onednn || { echo "tests/unit/check_onednn is not built"; exit 99; }
exec ./tests/unit/check_onednn
