/* SPDX-License-Identifier: MIT */
/* convert.h — the CPU backend's names for the shared FP32 ↔ FP16/BF16 conversions and
 * typed element loads and stores (backends/common/convert.h). */
#ifndef GANCTL_CPU_CONVERT_H
#define GANCTL_CPU_CONVERT_H

/* The conversions are written once for both backends; the CPU's kernels, its vector
 * paths' tails and its tests keep the names they have always used. */
#include "../common/convert.h"

#define cpu_f32_bits gan_f32_bits
#define cpu_bits_f32 gan_bits_f32
#define cpu_f32_to_f16 gan_f32_to_f16
#define cpu_f16_to_f32 gan_f16_to_f32
#define cpu_f32_to_bf16 gan_f32_to_bf16
#define cpu_bf16_to_f32 gan_bf16_to_f32
#define cpu_load gan_load
#define cpu_store gan_store
#define cpu_is_float gan_is_float

#endif
