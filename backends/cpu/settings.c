/* SPDX-License-Identifier: MIT */
/* settings.c — the CPU backend's settings: each with the one default that the host, the
 * backend's readers (backends/common/settings.h) and --list-plugins use. */
#include "config.h"

#include "cpu_backend.h"

const struct gan_setting_spec cpu_settings[] = {
    { "threads", GAN_SETTING_INT, "0",
      "threads for OpenBLAS and the backend's own kernels; 0 = one per core it may run on" },
    { "vector", GAN_SETTING_STRING, "auto",
      "widest vector level for casts and element-wise kernels: auto, avx512, f16c, portable" },
    { "blas_threads", GAN_SETTING_INT, "0",
      "threads OpenBLAS's products run on (the backend's runs, or OpenBLAS's own threads), "
      "at most threads; 0 = threads" },
    { "gemm", GAN_SETTING_STRING, "auto",
      "library for GEMMs and convolutions: auto (oneDNN for FP32 and FP16 convolutions, and "
      "for BF16 where the CPU has BF16 dot products that oneDNN ran 1.2 times as fast as "
      "FP32; OpenBLAS or the backend's own GEMM for the rest), openblas, onednn" },
    { "bf16", GAN_SETTING_STRING, "auto",
      "where oneDNN is used, how BF16 is computed: auto (on oneDNN's BF16 kernels where the "
      "start-up probe ran them 1.2 times as fast as its FP32 ones, else staged), onednn "
      "(on oneDNN's BF16 kernels), staged (BF16 storage on the FP32 kernels)" },
    { "gemm16", GAN_SETTING_STRING, "auto",
      "where the operands of 16-bit products that oneDNN does not take are widened: auto "
      "(while the backend's own GEMM packs them, on AVX-512), packed (also on AVX2 with "
      "FMA), staged (a pass of their own before OpenBLAS's sgemm)" },
    { "channel_blocks", GAN_SETTING_STRING, "kept",
      "where oneDNN's convolutions leave their outputs: kept (in oneDNN's channel blocks "
      "until an op needs NCHW), moved (back to NCHW after every convolution)" },
    { NULL, 0, NULL, NULL },
};
