/* SPDX-License-Identifier: MIT */
/* half_helpers.c — what the CPU kernel tests share: FP16/BF16 written from their definitions,
 * seeded random numbers, raw access to test buffers, and random operand views over them. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "half_helpers.h"

/* ---- 16-bit formats, written from their definitions (not the backend's code) ---- */

double f16_decode(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double mag = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -mag : mag;
}

/* Round-to-nearest-even through nearbyint, whose default mode is exactly that. */
uint16_t f16_encode(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v))
        return 0x7e00;
    if (isinf(a)) /* frexp leaves the exponent of an infinity unspecified */
        return sign | 0x7c00;
    if (a < 0x1p-14)
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24)); /* 1024 is 2^-14: fine */
    int e;
    frexp(a, &e); /* a = f · 2^e, f in [0.5, 1) */
    e -= 1;
    if (e > 15)
        return sign | 0x7c00;
    double q = nearbyint((ldexp(a, -e) - 1.0) * 1024.0); /* may carry into the exponent */
    int bits = ((e + 15) << 10) + (int)q;
    return (uint16_t)(sign | (bits >= 0x7c00 ? 0x7c00 : bits));
}

double bf16_decode(uint16_t b)
{
    int e = (b >> 7) & 255, m = b & 127;
    double mag = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
    return (b & 0x8000) ? -mag : mag;
}

uint16_t bf16_encode(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v))
        return 0x7fc0;
    if (a < 0x1p-126)
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p133));
    int e;
    frexp(a, &e);
    e -= 1;
    if (e > 127)
        return sign | 0x7f80;
    double q = nearbyint((ldexp(a, -e) - 1.0) * 128.0);
    int bits = ((e + 127) << 7) + (int)q;
    return (uint16_t)(sign | (bits >= 0x7f80 ? 0x7f80 : bits));
}

/* ---- deterministic random numbers (splitmix64) ---- */

static uint64_t rng_state;

void rng_seed(uint64_t seed)
{
    rng_state = seed;
}

uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int rng_int(int n)
{
    return (int)(rng_next() % (uint64_t)n);
}

double rng_uniform(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rng_next() >> 11) * 0x1p-53);
}

/* ---- raw buffer access ---- */

size_t dsize(enum gan_dtype dt)
{
    return dt == GAN_F32 ? 4 : 2;
}

double raw_get(const gan_buffer *buf, enum gan_dtype dt, size_t i)
{
    if (dt == GAN_F32) {
        float f;
        memcpy(&f, buf->data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, buf->data + 2 * i, 2);
    return dt == GAN_F16 ? f16_decode(h) : bf16_decode(h);
}

uint32_t raw_bits(const gan_buffer *buf, enum gan_dtype dt, size_t i)
{
    if (dt == GAN_F32) {
        uint32_t u;
        memcpy(&u, buf->data + 4 * i, 4);
        return u;
    }
    uint16_t h;
    memcpy(&h, buf->data + 2 * i, 2);
    return h;
}

/* Stores v rounded to dt (to FP32 first: the test's values are FP32 already). */
void raw_set(gan_buffer *buf, enum gan_dtype dt, size_t i, double v)
{
    if (dt == GAN_F32) {
        float f = (float)v;
        memcpy(buf->data + 4 * i, &f, 4);
        return;
    }
    uint16_t h = dt == GAN_F16 ? f16_encode(v) : bf16_encode(v);
    memcpy(buf->data + 2 * i, &h, 2);
}

/* ---- operand views over test buffers ---- */

int64_t count_of(const struct gan_shape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        n *= s->dim[d];
    return n;
}

/* Element k (row-major over the shape) of a view, as a buffer index. */
size_t view_index(const struct view *v, const struct gan_shape *s, int64_t k)
{
    int64_t idx = (int64_t)v->op.offset;
    for (int d = s->ndim - 1; d >= 0; d--) {
        idx += (k % s->dim[d]) * v->op.stride[d];
        k /= s->dim[d];
    }
    return (size_t)idx;
}

/* A view of `shape` in one of the layouts, in a buffer exactly as large as it needs,
 * filled with values uniform in [lo, hi] (as stored in dt). */
void view_make(gan_backend *be, struct view *v, const struct gan_shape *s, enum gan_dtype dt,
               int layout, double lo, double hi)
{
    int nd = s->ndim;
    int64_t *st = v->op.stride;
    memset(v, 0, sizeof *v);
    v->op.dtype = dt;
    int64_t pitch = 1;
    switch (layout) {
    case L_PERMUTED: {
        int perm[GAN_MAX_DIMS];
        for (int d = 0; d < nd; d++)
            perm[d] = d;
        for (int d = nd - 1; d > 0; d--) {
            int j = rng_int(d + 1), t = perm[d];
            perm[d] = perm[j];
            perm[j] = t;
        }
        for (int k = nd - 1; k >= 0; k--) {
            st[perm[k]] = pitch;
            pitch *= s->dim[perm[k]];
        }
        break;
    }
    case L_PADDED:
        pitch = 1 + rng_int(2);
        for (int d = nd - 1; d >= 0; d--) {
            st[d] = pitch;
            pitch = pitch * s->dim[d] + rng_int(3);
        }
        break;
    case L_BROADCAST:
        for (int d = nd - 1; d >= 0; d--) {
            if (rng_int(2)) {
                st[d] = 0;
                continue;
            }
            st[d] = pitch;
            pitch *= s->dim[d];
        }
        break;
    case L_SCALAR:
        break; /* all strides 0 */
    default: /* L_CONTIG and L_REVERSED */
        for (int d = nd - 1; d >= 0; d--) {
            st[d] = pitch;
            pitch *= s->dim[d];
        }
        if (layout == L_REVERSED && nd > 0) {
            int d = rng_int(nd);
            st[d] = -st[d];
        }
        break;
    }
    /* Lowest and highest index reached from offset 0; shift so the lowest is at a
     * small random offset, and size the buffer to end right after the highest. */
    int64_t lo_i = 0, hi_i = 0;
    for (int d = 0; d < nd; d++) {
        int64_t span = st[d] * (s->dim[d] - 1);
        if (span < 0)
            lo_i += span;
        else
            hi_i += span;
    }
    size_t off = (size_t)rng_int(4);
    v->op.offset = off - (size_t)lo_i;
    v->cap = off + (size_t)(hi_i - lo_i) + 1;
    ck_assert_int_eq(cpu_buffer_alloc(be, v->cap * dsize(dt), &v->op.buf), GAN_OK);
    for (size_t i = 0; i < v->cap; i++)
        raw_set(v->op.buf, dt, i, (float)rng_uniform(lo, hi));
}

void view_free(gan_backend *be, struct view *v)
{
    cpu_buffer_free(be, v->op.buf);
    v->op.buf = NULL;
}

/* A random shape of `ndim` dimensions (odd sizes and size-1 dimensions included)
 * with at most max_elems elements. */
void random_shape(struct gan_shape *s, int ndim, int64_t max_elems)
{
    static const int64_t sizes[] = { 1, 2, 3, 5, 7, 4, 1, 9, 13 };
    memset(s, 0, sizeof *s);
    s->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        s->dim[d] = sizes[rng_int((int)(sizeof sizes / sizeof sizes[0]))];
    while (count_of(s) > max_elems) {
        int d = rng_int(ndim);
        s->dim[d] = (s->dim[d] + 1) / 2;
    }
}

enum gan_dtype random_dtype(void)
{
    static const enum gan_dtype t[] = { GAN_F32, GAN_F32, GAN_F16, GAN_BF16 };
    return t[rng_int(4)];
}

/* Ordinary numbers with specials mixed in, stored as dt; see half_helpers.h. */
void fill_special_values(gan_buffer *buf, enum gan_dtype dt, size_t n)
{
    static const uint32_t specials[] = {
        0x7fc00000u, 0xffc12345u, 0x7f812345u, 0xff800001u, /* quiet and signalling NaNs */
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, /* ±0, ±inf */
        0x00000001u, 0x807fffffu,                           /* FP32 subnormals */
        0x33800000u, 0xb3c00000u, 0x387fc000u,              /* F16 subnormals, 2^-24.. */
        0x47800000u, 0xc7000000u, 0x3f800000u, 0xbf800000u, /* 65536, -32768, ±1 */
    };
    const size_t nspecial = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < n; i++) {
        if (rng_int(3) == 0) {
            uint32_t bits = specials[rng_int((int)nspecial)];
            if (dt == GAN_F32) {
                memcpy(buf->data + 4 * i, &bits, 4);
            } else if (dt == GAN_BF16) {
                uint16_t h = (uint16_t)(bits >> 16);
                if ((h & 0x7f80u) == 0x7f80u && !(h & 0x7fu) && (bits & 0x7fffffu))
                    h |= 1; /* keep a NaN a NaN when its payload was below BF16's bits */
                memcpy(buf->data + 2 * i, &h, 2);
            } else {
                float f;
                memcpy(&f, &bits, 4);
                uint16_t h = isnan(f) ? (uint16_t)(0x7c00u | ((bits >> 31) << 15) |
                                                   (bits & 0x200u ? 0x155u : 0x255u))
                                      : f16_encode(f);
                memcpy(buf->data + 2 * i, &h, 2);
            }
        } else {
            raw_set(buf, dt, i, rng_uniform(-3.0, 3.0));
        }
    }
}

/* ---- GEMM operands in host memory ---- */

float host_get(const unsigned char *p, enum gan_dtype dt, size_t i)
{
    uint16_t h;
    if (dt == GAN_F32) {
        float v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    memcpy(&h, p + 2 * i, 2);
    return (float)(dt == GAN_F16 ? f16_decode(h) : bf16_decode(h));
}

void host_set(unsigned char *p, enum gan_dtype dt, size_t i, float v)
{
    if (dt == GAN_F32) {
        memcpy(p + 4 * i, &v, 4);
        return;
    }
    uint16_t h = dt == GAN_F16 ? f16_encode(v) : bf16_encode(v);
    memcpy(p + 2 * i, &h, 2);
}

unsigned char *padded_operand(enum gan_dtype dt, int rows, int cols, int batch, int64_t stride,
                            int random)
{
    return strided_operand(dt, rows, cols, cols + 3, batch, stride, random);
}

unsigned char *strided_operand(enum gan_dtype dt, int rows, int cols, int64_t ld, int batch,
                             int64_t stride, int random)
{
    const int64_t one = rows * ld;
    const size_t elems = (size_t)(stride * (batch - 1) + one);
    unsigned char *p = malloc(elems * gan_dtype_size(dt));
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < elems; i++)
        host_set(p, dt, i, NAN);
    for (int b = 0; b < batch; b++)
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                host_set(p, dt, (size_t)(b * stride + r * ld + c),
                         random ? (float)rng_uniform(-1.0, 1.0) : NAN);
    return p;
}

gan_buffer *host_upload(gan_backend *be, const unsigned char *p, size_t bytes)
{
    gan_buffer *buf = NULL;
    ck_assert_int_eq(cpu_buffer_alloc(be, bytes, &buf), GAN_OK);
    memcpy(buf->data, p, bytes);
    return buf;
}

int fma_levels(const char *names[2])
{
    int n = 0;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (!__builtin_cpu_supports("fma"))
        return 0;
    if (cpu_isa_best() >= CPU_ISA_AVX512)
        names[n++] = "vector=avx512";
    if (cpu_isa_best() >= CPU_ISA_F16C)
        names[n++] = "vector=f16c";
#else
    (void)names;
#endif
    return n;
}
