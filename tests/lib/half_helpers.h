/* SPDX-License-Identifier: MIT */
/* half_helpers.h — what the CPU kernel tests share: FP16/BF16 written from their definitions,
 * seeded random numbers, raw access to test buffers, random operand views over them, and
 * padded GEMM operands in host memory. */
#ifndef GANCTL_TEST_HALF_HELPERS_H
#define GANCTL_TEST_HALF_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_fixture.h"

/* ---- 16-bit formats, from the IEEE and bfloat16 definitions (not the backend's code) ---- */

double f16_decode(uint16_t h);
/* Round to nearest even; overflow to inf, NaN to the quiet 0x7e00. */
uint16_t f16_encode(double v);
double bf16_decode(uint16_t b);
/* Round to nearest even; overflow to inf, NaN to the quiet 0x7fc0. */
uint16_t bf16_encode(double v);

/* ---- deterministic random numbers (splitmix64, one stream per test process) ---- */

void rng_seed(uint64_t seed);
uint64_t rng_next(void);
int rng_int(int n);                       /* in [0, n) */
double rng_uniform(double lo, double hi); /* in [lo, hi), 53 random bits */

/* ---- raw buffer access: element i of buf as dt ---- */

size_t dsize(enum gan_dtype dt);
double raw_get(const gan_buffer *buf, enum gan_dtype dt, size_t i);
uint32_t raw_bits(const gan_buffer *buf, enum gan_dtype dt, size_t i);
/* Stores v rounded to dt (to FP32 first: the tests' values are FP32 already). */
void raw_set(gan_buffer *buf, enum gan_dtype dt, size_t i, double v);

/* ---- operand views over test buffers ---- */

enum layout { L_CONTIG, L_PERMUTED, L_PADDED, L_REVERSED, L_BROADCAST, L_SCALAR, L_COUNT };
#define L_OUTPUT_COUNT L_BROADCAST /* layouts an output may have: no repeated elements */

struct view {
    struct gan_operand op;
    size_t cap; /* elements in the buffer: exactly one past the highest reached */
};

int64_t count_of(const struct gan_shape *s);
/* Element k (row-major over the shape) of a view, as a buffer index. */
size_t view_index(const struct view *v, const struct gan_shape *s, int64_t k);
/* A view of `shape` in one of the layouts, in a buffer of be's exactly as large as it
 * needs, filled with values uniform in [lo, hi] (as stored in dt). */
void view_make(gan_backend *be, struct view *v, const struct gan_shape *s, enum gan_dtype dt,
               int layout, double lo, double hi);
void view_free(gan_backend *be, struct view *v);
/* A random shape of `ndim` dimensions (odd sizes and size-1 dimensions included) with
 * at most max_elems elements. */
void random_shape(struct gan_shape *s, int ndim, int64_t max_elems);
/* FP32 half of the time, FP16 and BF16 a quarter each. */
enum gan_dtype random_dtype(void);

/* ---- inputs for comparing the backend's vector level with its portable one ---- */

/* n elements of dt in buf: numbers in [-3, 3) with, a third of the time, a special
 * value: quiet and signalling NaNs, ±0, ±inf, FP32 and F16 subnormals, F16 overflow. */
void fill_special_values(gan_buffer *buf, enum gan_dtype dt, size_t n);

/* ---- GEMM operands in host memory (check_gemm16, check_gemm_thin) ---- */

/* Element i of host memory p of type dt, and v rounded to nearest even into it, through
 * the conversions above (not the backend's convert.h). */
float host_get(const unsigned char *p, enum gan_dtype dt, size_t i);
void host_set(unsigned char *p, enum gan_dtype dt, size_t i, float v);
/* `batch` matrices of rows × cols of dt, `stride` elements apart, each row stored with
 * ld = cols + 3: NaN in the padding (which a product must not read), random values the
 * type holds in [−1, 1) in the body (NaN too when not `random`). malloc'd. */
unsigned char *padded_operand(enum gan_dtype dt, int rows, int cols, int batch, int64_t stride,
                            int random);
/* The same with rows ld elements apart (ld ≥ cols; NaN in the ld − cols past each row). */
unsigned char *strided_operand(enum gan_dtype dt, int rows, int cols, int64_t ld, int batch,
                             int64_t stride, int random);
/* A buffer of be's holding `bytes` of p. */
gan_buffer *host_upload(gan_backend *be, const unsigned char *p, size_t bytes);
/* The settings of the vector levels with FMA this CPU runs, widest first
 * ("vector=avx512", "vector=f16c"), and how many: the backend's own GEMMs run there. */
int fma_levels(const char *names[2]);

#endif
