/* SPDX-License-Identifier: MIT */
/* cast.c — element type conversion between F32, F16, BF16, I32 and U32, rounding to
 * nearest even, counting what overflowed, underflowed or became subnormal; casts with an
 * FP8 side go to cast_fp8.c. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define CPU_CAST_X86 1
#include "avx512_lanes.h"
#include "avx2_lanes.h"
#endif

#include "cpu_backend.h"
#include "convert.h"
#include "../common/cast_ops.h"
#include "../common/ref_checks.h"

/* ---------------------------------------------------------------- F32 ↔ F16 */

static void f32_to_f16_portable(const float *x, uint16_t *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = cpu_f32_to_f16(x[i]);
}

static void f16_to_f32_portable(const uint16_t *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = cpu_f16_to_f32(x[i]);
}

#ifdef CPU_CAST_X86
/* The F16C instructions round exactly as convert.h does (round to nearest even,
 * subnormals kept, overflow to inf, NaN quieted with its top payload bits), which
 * tests/check_cast.c proves on every F16 and on millions of F32 inputs. The rounding
 * mode is given in the instruction, so MXCSR's does not matter. */
__attribute__((target("avx,f16c")))
static void f32_to_f16_f16c(const float *x, uint16_t *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        _mm_storeu_si128((__m128i *)(void *)(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    _mm256_zeroupper(); /* before the baseline ISA's tail (lanes_avx2.h, lanes_leave) */
    f32_to_f16_portable(x + i, y + i, n - i);
}

/* VCVTPH2PS quiets a signalling NaN (sets the top mantissa bit) where convert.h keeps
 * the bits as they were; a block of 8 that holds one goes the portable way, so both
 * paths give the same bits for every input. Infinities and NaNs are rare in training,
 * so the first pass only notes whether the run holds any (every exponent bit set) and
 * converts everything; only a run that does is converted again, block by block, with
 * the exact test. */
__attribute__((target("avx,f16c")))
static void f16_to_f32_f16c(const uint16_t *x, float *y, size_t n)
{
    const __m128i exp_mask = _mm_set1_epi16(0x7c00);
    __m128i special = _mm_setzero_si128();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + i));
        special = _mm_or_si128(special, _mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    /* before the baseline ISA's tail (lanes_avx2.h, lanes_leave); what follows is 128-bit */
    _mm256_zeroupper();
    f16_to_f32_portable(x + i, y + i, n - i);
    if (!_mm_movemask_epi8(special))
        return;
    const __m128i exp_quiet = _mm_set1_epi16(0x7e00), snan_exp = _mm_set1_epi16(0x7c00);
    const __m128i low_mant = _mm_set1_epi16(0x01ff), zero = _mm_setzero_si128();
    for (size_t j = 0; j + 8 <= n; j += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + j));
        __m128i is_snan_exp = _mm_cmpeq_epi16(_mm_and_si128(h, exp_quiet), snan_exp);
        __m128i has_payload = _mm_xor_si128(_mm_cmpeq_epi16(_mm_and_si128(h, low_mant), zero),
                                            _mm_set1_epi16(-1));
        if (_mm_movemask_epi8(_mm_and_si128(is_snan_exp, has_payload)))
            f16_to_f32_portable(x + j, y + j, 8);
    }
}
#endif

/* ---------------------------------------------------------------- F32 ↔ BF16 */

static void f32_to_bf16_portable(const float *x, uint16_t *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = cpu_f32_to_bf16(x[i]);
}

static void bf16_to_f32_portable(const uint16_t *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = cpu_bf16_to_f32(x[i]);
}

#ifdef CPU_CAST_X86
/* convert.h's rule on eight lanes at once, in integer arithmetic (avx2_f32_to_bf16,
 * shared with the AVX2 element-wise kernels). The same operations on the same bits, so
 * the same results; the tests of cpu_cast check them against an independent reference. */
AVX2_LANES_TARGET
static void f32_to_bf16_avx2(const float *x, uint16_t *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(y + i), avx2_f32_to_bf16(_mm256_loadu_ps(x + i)));
    _mm256_zeroupper(); /* before the baseline ISA's tail (lanes_avx2.h, lanes_leave) */
    f32_to_bf16_portable(x + i, y + i, n - i);
}

__attribute__((target("avx2")))
static void bf16_to_f32_avx2(const uint16_t *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + i));
        __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        _mm256_storeu_si256((__m256i *)(void *)(y + i), w);
    }
    _mm256_zeroupper(); /* before the baseline ISA's tail (lanes_avx2.h, lanes_leave) */
    bf16_to_f32_portable(x + i, y + i, n - i);
}
#endif

#ifdef CPU_CAST_X86
/* The same conversions sixteen lanes at a time, the last block masked (so a short run,
 * such as a 7×7 feature map's 49 elements, does not end one element at a time).
 * VCVTPS2PH and VCVTPH2PS on zmm registers round exactly as their F16C forms do; F16 →
 * F32 quiets a signalling NaN as well, so a block that produced any NaN is converted
 * again the portable way (a quiet NaN comes out the same either way, so redoing it is
 * only a few wasted cycles in a run that holds one). BF16 is convert.h's integer rule
 * again, with a mask in place of the blend and VPMOVDW in place of the pack
 * (avx512_lanes.h, shared with the element-wise kernels). */
/* FP32 → the 16-bit type dt (its rounding in avx512_store). */
AVX512_LANES_TARGET
static inline void narrow_avx512(const float *x, uint16_t *y, size_t n, enum gan_dtype dt)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = avx512_lanes((int64_t)i, (int64_t)n);
        avx512_store(y, dt, (int64_t)i, m, _mm512_maskz_loadu_ps(m, x + i));
    }
}

AVX512_LANES_TARGET
static void f32_to_f16_avx512(const float *x, uint16_t *y, size_t n)
{
    narrow_avx512(x, y, n, GAN_F16);
}

AVX512_LANES_TARGET
static void f16_to_f32_avx512(const uint16_t *x, float *y, size_t n)
{
    __mmask16 nan = 0;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = avx512_lanes((int64_t)i, (int64_t)n);
        __m512 v = avx512_load(x, GAN_F16, (int64_t)i, m);
        nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
        _mm512_mask_storeu_ps(y + i, m, v);
    }
    if (!nan)
        return;
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = avx512_lanes((int64_t)j, (int64_t)n);
        __m512 v = _mm512_maskz_loadu_ps(m, y + j);
        if (_mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q)) {
            _mm256_zeroupper(); /* before the baseline ISA (lanes_avx512.h, lanes_leave) */
            f16_to_f32_portable(x + j, y + j, n - j < 16 ? n - j : 16);
        }
    }
}

AVX512_LANES_TARGET
static void f32_to_bf16_avx512(const float *x, uint16_t *y, size_t n)
{
    narrow_avx512(x, y, n, GAN_BF16);
}

AVX512_LANES_TARGET
static void bf16_to_f32_avx512(const uint16_t *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = avx512_lanes((int64_t)i, (int64_t)n);
        _mm512_mask_storeu_ps(y + i, m, avx512_load(x, GAN_BF16, (int64_t)i, m));
    }
}
#endif

/* ---------------------------------------------------------------- float ↔ float */

/* The converters of each level, indexed by enum cpu_isa. */
struct float_converters {
    void (*f32_to_f16)(const float *, uint16_t *, size_t);
    void (*f16_to_f32)(const uint16_t *, float *, size_t);
    void (*f32_to_bf16)(const float *, uint16_t *, size_t);
    void (*bf16_to_f32)(const uint16_t *, float *, size_t);
};

#define PORTABLE_CONVERTERS \
    { f32_to_f16_portable, f16_to_f32_portable, f32_to_bf16_portable, bf16_to_f32_portable }
static const struct float_converters converters[] = {
    [CPU_ISA_PORTABLE] = PORTABLE_CONVERTERS,
#ifdef CPU_CAST_X86
    [CPU_ISA_F16C] = { f32_to_f16_f16c, f16_to_f32_f16c, f32_to_bf16_avx2, bf16_to_f32_avx2 },
    [CPU_ISA_AVX512] = { f32_to_f16_avx512, f16_to_f32_avx512, f32_to_bf16_avx512,
                          bf16_to_f32_avx512 },
#else
    [CPU_ISA_F16C] = PORTABLE_CONVERTERS,
    [CPU_ISA_AVX512] = PORTABLE_CONVERTERS,
#endif
};
#undef PORTABLE_CONVERTERS

static void float_convert(enum cpu_isa isa, const unsigned char *xp, enum gan_dtype xt,
                          unsigned char *yp, enum gan_dtype yt, size_t n)
{
    const struct float_converters *c = &converters[isa];
    if (xt == GAN_F32 && yt == GAN_F16)
        c->f32_to_f16((const float *)(const void *)xp, (uint16_t *)(void *)yp, n);
    else if (xt == GAN_F16 && yt == GAN_F32)
        c->f16_to_f32((const uint16_t *)(const void *)xp, (float *)(void *)yp, n);
    else if (xt == GAN_F32 && yt == GAN_BF16)
        c->f32_to_bf16((const float *)(const void *)xp, (uint16_t *)(void *)yp, n);
    else if (xt == GAN_BF16 && yt == GAN_F32)
        c->bf16_to_f32((const uint16_t *)(const void *)xp, (float *)(void *)yp, n);
    else /* F16 ↔ BF16: widening to FP32 is exact, so this rounds once. */
        for (size_t i = 0; i < n; i++)
            cpu_store(yp, yt, (int64_t)i, cpu_load(xp, xt, (int64_t)i));
}

void cpu_convert(enum cpu_isa isa, const void *x, enum gan_dtype xt, void *y,
                 enum gan_dtype yt, size_t n)
{
    if (xt == yt) {
        memcpy(y, x, n * gan_dtype_size(xt));
    } else if (n < 16 && isa != CPU_ISA_AVX512) {
        /* Too short for an unmasked vector path: convert.h's functions, which give the
         * same bits. */
        for (size_t i = 0; i < n; i++)
            cpu_store(y, yt, (int64_t)i, cpu_load(x, xt, (int64_t)i));
    } else {
        float_convert(isa, (const unsigned char *)x, xt, (unsigned char *)y, yt, n);
    }
}

/* The class of element i of a float array, from its bits (backends/common/cast_ops.h). */
static inline enum gan_fclass class_f32(const void *p, size_t i)
{
    uint32_t b;
    memcpy(&b, (const unsigned char *)p + 4 * i, 4);
    return gan_fclass_f32(b);
}

static inline enum gan_fclass class_f16(const void *p, size_t i)
{
    return gan_fclass_f16(((const uint16_t *)p)[i]);
}

static inline enum gan_fclass class_bf16(const void *p, size_t i)
{
    return gan_fclass_bf16(((const uint16_t *)p)[i]);
}

/* The counting pass, one instance per pair of types so the class tests inline. It
 * reads input and output after the conversion: a second pass over memory that is
 * still in cache for small tensors and costs a fraction of the conversion for big
 * ones, and it lets the conversion itself stay branch-free (and vectorised). */
#define DEFINE_COUNT(NAME, XCLASS, YCLASS)                                              \
    static void NAME(const void *x, const void *y, size_t n, struct gan_cast_counts *c) \
    {                                                                                   \
        struct gan_cast_tally t = { 0, 0, 0, 0 };                                       \
        for (size_t i = 0; i < n; i++)                                                  \
            gan_cast_tally_float(&t, XCLASS(x, i), YCLASS(y, i));                       \
        c->overflow = t.overflow;                                                       \
        c->underflow = t.underflow;                                                     \
        c->subnormal = t.subnormal;                                                     \
        c->nonfinite = t.nonfinite;                                                     \
    }

DEFINE_COUNT(count_f32_f32, class_f32, class_f32)
DEFINE_COUNT(count_f32_f16, class_f32, class_f16)
DEFINE_COUNT(count_f32_bf16, class_f32, class_bf16)
DEFINE_COUNT(count_f16_f32, class_f16, class_f32)
DEFINE_COUNT(count_f16_f16, class_f16, class_f16)
DEFINE_COUNT(count_f16_bf16, class_f16, class_bf16)
DEFINE_COUNT(count_bf16_f32, class_bf16, class_f32)
DEFINE_COUNT(count_bf16_f16, class_bf16, class_f16)
DEFINE_COUNT(count_bf16_bf16, class_bf16, class_bf16)

typedef void (*count_fn)(const void *, const void *, size_t, struct gan_cast_counts *);

/* Indexed by enum gan_dtype: F32 = 0, F16 = 1, BF16 = 2. */
static const count_fn float_counts[3][3] = {
    { count_f32_f32, count_f32_f16, count_f32_bf16 },
    { count_f16_f32, count_f16_f16, count_f16_bf16 },
    { count_bf16_f32, count_bf16_f16, count_bf16_bf16 },
};

/* ---------------------------------------------------------------- integers */

/* Conversions with an integer on either side, element by element, counting as they go. */
static void int_convert(const unsigned char *xp, enum gan_dtype xt, unsigned char *yp,
                        enum gan_dtype yt, size_t n, struct gan_cast_counts *c)
{
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    for (size_t i = 0; i < n; i++)
        gan_cast_int_element(xp, xt, yp, yt, (int64_t)i, &t);
    c->overflow += t.overflow;
    c->underflow += t.underflow;
    c->nonfinite += t.nonfinite;
}

/* ---------------------------------------------------------------- the kernel */

/* A float cast split across the instance's threads by ranges: the conversion is per
 * element and the counts are integers, summed after, so any split gives the same result. */
#define CAST_ALIGN 256

struct cast_job {
    enum cpu_isa isa;
    const unsigned char *x;
    unsigned char *y;
    enum gan_dtype xt, yt;
    int convert, count;
    struct gan_cast_counts part[CPU_MAX_PARTS];
};

static void cast_range(void *arg, int part, int64_t begin, int64_t end)
{
    struct cast_job *j = arg;
    const unsigned char *xp = j->x + (size_t)begin * gan_dtype_size(j->xt);
    unsigned char *yp = j->y + (size_t)begin * gan_dtype_size(j->yt);
    size_t n = (size_t)(end - begin);
    if (j->convert) {
        if (j->xt == j->yt)
            memcpy(yp, xp, n * gan_dtype_size(j->xt));
        else
            float_convert(j->isa, xp, j->xt, yp, j->yt, n);
    }
    if (j->count)
        float_counts[j->xt][j->yt](xp, yp, n, &j->part[part]);
}

void cpu_convert_threads(gan_backend *be, const void *x, enum gan_dtype xt, void *y,
                         enum gan_dtype yt, size_t n)
{
    if (n == 0)
        return;
    struct cast_job j = {
        .isa = be->isa, .x = x, .y = y, .xt = xt, .yt = yt, .convert = 1, .count = 0,
    };
    int parts = cpu_parallel_parts(be, (int64_t)n, CAST_ALIGN, 1);
    cpu_parallel_for(be, parts, (int64_t)n, CAST_ALIGN, cast_range, &j);
}

/* Conversions of rows, split across the threads over their elements taken in order:
 * the first conversion's rows, then the next one's. */
struct rows_job {
    enum cpu_isa isa;
    int count;
    struct cpu_convert_rows r[CPU_CONVERT_ROWS_MAX];
};

static void rows_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct rows_job *j = arg;
    int64_t first = 0; /* the element the conversion at hand starts at */
    for (int k = 0; k < j->count && first < end; k++) {
        const struct cpu_convert_rows *r = &j->r[k];
        const int64_t n = r->rows * r->cols;
        int64_t lo = begin > first ? begin - first : 0;
        const int64_t hi = end - first < n ? end - first : n;
        first += n;
        /* row by row, from column lo % cols of row lo / cols */
        while (lo < hi) {
            const int64_t row = lo / r->cols, col = lo % r->cols;
            const int64_t run = hi - lo < r->cols - col ? hi - lo : r->cols - col;
            cpu_convert(j->isa,
                        (const unsigned char *)r->x + (size_t)(row * r->x_ld + col) * gan_dtype_size(r->xt),
                        r->xt, (unsigned char *)r->y + (size_t)(row * r->y_ld + col) * gan_dtype_size(r->yt),
                        r->yt, (size_t)run);
            lo += run;
        }
    }
}

void cpu_convert_rows_threads(gan_backend *be, const struct cpu_convert_rows *r, int count)
{
    struct rows_job j = { .isa = be->isa, .count = 0 };
    int64_t total = 0;
    for (int k = 0; k < count && k < CPU_CONVERT_ROWS_MAX; k++) {
        if (r[k].rows <= 0 || r[k].cols <= 0)
            continue;
        struct cpu_convert_rows *q = &j.r[j.count++];
        *q = r[k];
        /* packed rows are one run, converted in one call per part */
        if (q->x_ld == q->cols && q->y_ld == q->cols) {
            q->cols *= q->rows;
            q->x_ld = q->y_ld = q->cols;
            q->rows = 1;
        }
        total += q->rows * q->cols;
    }
    if (total == 0)
        return;
    int parts = cpu_parallel_parts(be, total, CAST_ALIGN, 1);
    cpu_parallel_for(be, parts, total, CAST_ALIGN, rows_range, &j);
}

gan_status cpu_cast_flags(gan_backend *be, size_t n, const struct gan_ref *x,
                          const struct gan_ref *y, uint32_t flags,
                          struct gan_cast_counts *counts)
{
    gan_status st = gan_check_cast_refs(be->host, n, x, y);
    if (st == GAN_OK)
        st = gan_check_cast_types(be->host, x, y, flags);
    if (st == GAN_OK)
        st = cpu_kept_read(be, x->buf, n);
    if (st == GAN_OK)
        st = cpu_kept_ref_written(be, y, n);
    if (st != GAN_OK)
        return st;

    struct gan_cast_counts c = { .elements = n };
    if (n == 0) {
        if (counts)
            *counts = c;
        return GAN_OK;
    }

    unsigned char *xp = cpu_ref_ptr(x), *yp = cpu_ref_ptr(y);
    if ((st = gan_check_cast_overlap(be->host, n, x, xp, y, yp)) != GAN_OK)
        return st;
    size_t xbytes = n * gan_dtype_size(x->dtype);
    int same_view = xp == yp && x->dtype == y->dtype;

    if (gan_is_fp8(x->dtype) || gan_is_fp8(y->dtype)) {
        cpu_cast_fp8(be, xp, x->dtype, yp, y->dtype, n, (flags & GAN_CAST_SATURATE) != 0,
                     counts ? &c : NULL);
    } else if (cpu_is_float(x->dtype) && cpu_is_float(y->dtype)) {
        struct cast_job j = {
            .isa = be->isa, .x = xp, .y = yp, .xt = x->dtype, .yt = y->dtype,
            .convert = !same_view, .count = counts != NULL,
        };
        int parts = cpu_parallel_parts(be, (int64_t)n, CAST_ALIGN, counts ? 2 : 1);
        memset(j.part, 0, (size_t)parts * sizeof j.part[0]);
        cpu_parallel_for(be, parts, (int64_t)n, CAST_ALIGN, cast_range, &j);
        for (int p = 0; p < parts; p++) {
            c.overflow += j.part[p].overflow;
            c.underflow += j.part[p].underflow;
            c.subnormal += j.part[p].subnormal;
            c.nonfinite += j.part[p].nonfinite;
        }
    } else if (x->dtype == y->dtype) {
        if (!same_view)
            memcpy(yp, xp, xbytes);
    } else {
        int_convert(xp, x->dtype, yp, y->dtype, n, &c);
    }
    if (counts)
        *counts = c;
    return GAN_OK;
}

gan_status cpu_cast(gan_backend *be, size_t n, const struct gan_ref *x,
                    const struct gan_ref *y, struct gan_cast_counts *counts)
{
    return cpu_cast_flags(be, n, x, y, 0, counts);
}
