/* SPDX-License-Identifier: MIT */
/* elementwise.c — the CPU backend's strided, broadcasting unary and binary kernels.
 * Operands of any float type are loaded as FP32, computed in FP32 and rounded once on store. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"
#include "../common/elementwise_ops.h"
#include "../common/shape_checks.h"

/* Layout. Operands may have any strides, negative ones included (a reversed view);
 * validation computes the lowest and highest element each operand reaches and both
 * must lie inside its buffer. The walk first drops size-1 dimensions and merges
 * neighbours whose strides chain, so a contiguous tensor is one run and a bias row
 * broadcast is (rows, row). On the AVX-512 and AVX2 levels an innermost run whose
 * operands are all contiguous or broadcast goes whole to the vector kernels
 * (elementwise_lanes.h), which widen 16-bit operands in registers. Otherwise the run goes straight through memory when it is
 * contiguous FP32 (or broadcast, stride 0), and through a small FP32 staging block
 * when it is 16-bit or strided. An output identical to an input is safe: each block
 * (of the level's lanes, or of the staging size) is read completely before it is written.
 *
 * The per-element math, and its NaN and signed-zero semantics, is
 * backends/common/elementwise_ops.h, shared with the CUDA backend. */

/* Elements staged per block when an operand is 16-bit or strided. Three blocks of
 * FP32 live on the stack; 512 keeps them inside L1 together. */
#define EW_BLOCK 512

static const char *const unary_names[GAN_UNARY_OP_COUNT] = {
    "cpu_unary(COPY)", "cpu_unary(NEG)", "cpu_unary(SCALE)", "cpu_unary(ADD_SCALAR)",
    "cpu_unary(RELU)", "cpu_unary(LEAKY_RELU)", "cpu_unary(STEP)", "cpu_unary(TANH)",
    "cpu_unary(SIGMOID)", "cpu_unary(SQUARE)", "cpu_unary(SQRT)", "cpu_unary(RSQRT)",
    "cpu_unary(RECIPROCAL)", "cpu_unary(EXP)", "cpu_unary(LOG)", "cpu_unary(ABS)",
    "cpu_unary(SIGN)", "cpu_unary(FILL)", "cpu_unary(LEAKY_STEP)"
};

static const char *const binary_names[GAN_BINARY_OP_COUNT] = {
    "cpu_binary(ADD)", "cpu_binary(SUB)", "cpu_binary(MUL)", "cpu_binary(DIV)",
    "cpu_binary(MAX)", "cpu_binary(MIN)", "cpu_binary(GREATER)", "cpu_binary(MASK_POSITIVE)",
    "cpu_binary(MASK_LEAKY)", "cpu_binary(ADD_LEAKY)", "cpu_binary(ADD_RELU)"
};

/* y[i] = f(x[i]) over a contiguous FP32 run; y may be x. Each op is its own loop so
 * that the compiler vectorises the simple ones. */
static void unary_run(enum gan_unary_op op, float alpha, const float *x, float *y, int64_t n)
{
    int64_t i;
    switch (op) {
    case GAN_UNARY_COPY:
        if (x != y)
            memmove(y, x, (size_t)n * sizeof *y);
        break;
    case GAN_UNARY_NEG: for (i = 0; i < n; i++) y[i] = gan_ew_neg(x[i]); break;
    case GAN_UNARY_SCALE: for (i = 0; i < n; i++) y[i] = gan_ew_scale(alpha, x[i]); break;
    case GAN_UNARY_ADD_SCALAR: for (i = 0; i < n; i++) y[i] = gan_ew_add_scalar(alpha, x[i]); break;
    case GAN_UNARY_RELU: for (i = 0; i < n; i++) y[i] = gan_ew_relu(x[i]); break;
    case GAN_UNARY_LEAKY_RELU:
        for (i = 0; i < n; i++) y[i] = gan_ew_leaky_relu(alpha, x[i]);
        break;
    case GAN_UNARY_STEP: for (i = 0; i < n; i++) y[i] = gan_ew_step(x[i]); break;
    case GAN_UNARY_TANH: for (i = 0; i < n; i++) y[i] = cpu_tanhf(x[i]); break;
    case GAN_UNARY_SIGMOID:
        for (i = 0; i < n; i++) y[i] = gan_ew_sigmoid(x[i]);
        break;
    case GAN_UNARY_SQUARE: for (i = 0; i < n; i++) y[i] = gan_ew_square(x[i]); break;
    case GAN_UNARY_SQRT: for (i = 0; i < n; i++) y[i] = gan_ew_sqrt(x[i]); break;
    case GAN_UNARY_RSQRT: for (i = 0; i < n; i++) y[i] = gan_ew_rsqrt(x[i]); break;
    case GAN_UNARY_RECIPROCAL: for (i = 0; i < n; i++) y[i] = gan_ew_reciprocal(x[i]); break;
    case GAN_UNARY_EXP: for (i = 0; i < n; i++) y[i] = gan_ew_exp(x[i]); break;
    case GAN_UNARY_LOG: for (i = 0; i < n; i++) y[i] = gan_ew_log(x[i]); break;
    case GAN_UNARY_ABS: for (i = 0; i < n; i++) y[i] = gan_ew_abs(x[i]); break;
    case GAN_UNARY_SIGN:
        for (i = 0; i < n; i++) y[i] = gan_ew_sign(x[i]);
        break;
    case GAN_UNARY_FILL: for (i = 0; i < n; i++) y[i] = alpha; break;
    case GAN_UNARY_LEAKY_STEP:
        for (i = 0; i < n; i++) y[i] = gan_ew_leaky_step(alpha, x[i]);
        break;
    case GAN_UNARY_OP_COUNT: break;
    }
}

/* The four stride patterns a binary run can have after staging: both inputs
 * contiguous, or either (or both) broadcast from one value. Spelled out so that each
 * loop is a plain vectorisable one. */
#define BINARY_LOOPS(EXPR)                                                        \
    do {                                                                          \
        if (sa && sb) {                                                           \
            for (i = 0; i < n; i++) { float av = a[i], bv = b[i]; y[i] = (EXPR); } \
        } else if (sb) {                                                          \
            float av = a[0];                                                      \
            for (i = 0; i < n; i++) { float bv = b[i]; y[i] = (EXPR); }           \
        } else if (sa) {                                                          \
            float bv = b[0];                                                      \
            for (i = 0; i < n; i++) { float av = a[i]; y[i] = (EXPR); }           \
        } else {                                                                  \
            float av = a[0], bv = b[0], r = (EXPR);                               \
            for (i = 0; i < n; i++) y[i] = r;                                     \
        }                                                                         \
    } while (0)

/* Which NaN a sum, difference, product or quotient of two NaNs gives is the hardware's
 * choice (x86: the first operand's, quieted), and in a plain C loop the compiler's too:
 * a vectorised loop may swap the operands of + and *, its remainder may not, so the
 * choice would depend on where a run starts, and so on the thread count. Made explicit
 * here: the first NaN operand, quieted, as the vector levels' x86 intrinsics give. */
static inline float first_nan(float a, float b, float r)
{
    if (r == r)
        return r;
    float n = a != a ? a : b != b ? b : r;
    uint32_t bits;
    memcpy(&bits, &n, sizeof bits);
    bits |= 0x00400000u;
    memcpy(&n, &bits, sizeof n);
    return n;
}

/* The 1 of MASK_POSITIVE and MASK_LEAKY, read through a volatile once per run: with a
 * literal 1 the compiler may drop the multiply where the mask is 1 (it assumes no
 * signalling NaN), and a signalling NaN in a would then pass unquieted, unlike MUL(a,
 * STEP(b)) and the vector level, which both multiply. */
static volatile float mask_one = 1.0f;

/* y[i] = f(a[i·sa], b[i·sb]) with sa, sb ∈ {0, 1}, alpha the op's parameter; y may be a
 * or b. */
static void binary_run(enum gan_binary_op op, float alpha, const float *a, int sa,
                       const float *b, int sb, float *y, int64_t n)
{
    int64_t i;
    switch (op) {
    /* ADD_LEAKY and ADD_RELU: the sum alone; elementwise_range stores it and applies the
     * activation */
    case GAN_BINARY_ADD: case GAN_BINARY_ADD_LEAKY: case GAN_BINARY_ADD_RELU:
        BINARY_LOOPS(first_nan(av, bv, gan_ew_add(av, bv)));
        break;
    case GAN_BINARY_SUB: BINARY_LOOPS(first_nan(av, bv, gan_ew_sub(av, bv))); break;
    case GAN_BINARY_MUL: BINARY_LOOPS(first_nan(av, bv, gan_ew_mul(av, bv))); break;
    case GAN_BINARY_DIV: BINARY_LOOPS(first_nan(av, bv, gan_ew_div(av, bv))); break;
    case GAN_BINARY_MAX: BINARY_LOOPS(gan_ew_max(av, bv)); break;
    case GAN_BINARY_MIN: BINARY_LOOPS(gan_ew_min(av, bv)); break;
    case GAN_BINARY_GREATER: BINARY_LOOPS(gan_ew_greater(av, bv)); break;
    case GAN_BINARY_MASK_POSITIVE: {
        const float one = mask_one;
        BINARY_LOOPS(gan_ew_mask_positive(av, bv, one));
        break;
    }
    case GAN_BINARY_MASK_LEAKY: {
        const float one = mask_one;
        BINARY_LOOPS(gan_ew_mask_leaky(av, bv, alpha, one));
        break;
    }
    case GAN_BINARY_OP_COUNT: break;
    }
}

#undef BINARY_LOOPS

/* ADD_LEAKY and ADD_RELU after binary_run's sum in v (n ≤ EW_BLOCK values): the sum
 * stored in the result's dtype and read back, by the converters that store ADD's result
 * and read the activation's input, then the activation, in place. */
static void activate_stored_sum(enum cpu_isa isa, enum gan_binary_op op, float alpha,
                                enum gan_dtype dtype, float *v, int64_t n)
{
    if (dtype != GAN_F32) {
        float held[EW_BLOCK]; /* room for n values of any dtype of at most 4 bytes */
        cpu_convert(isa, v, GAN_F32, held, dtype, (size_t)n);
        cpu_convert(isa, held, dtype, v, GAN_F32, (size_t)n);
    }
    unary_run(op == GAN_BINARY_ADD_LEAKY ? GAN_UNARY_LEAKY_RELU : GAN_UNARY_RELU, alpha, v, v,
              n);
}

/* An input run of n elements starting at element `off` of `base`, as FP32: the
 * memory itself when it is contiguous FP32, one staged value when the stride is 0
 * (*unit = 0), otherwise converted into `stage`. */
static const float *input_run(enum cpu_isa isa, const unsigned char *base,
                              enum gan_dtype dtype, int64_t off, int64_t stride, int64_t n,
                              float *stage, int *unit)
{
    if (stride == 0) {
        *unit = 0;
        stage[0] = cpu_load(base, dtype, off);
        return stage;
    }
    *unit = 1;
    if (dtype == GAN_F32 && stride == 1)
        return (const float *)base + off;
    if (stride == 1) {
        /* A contiguous 16-bit run: the block converter (F16C) rather than one element
         * at a time, which cost more than the arithmetic itself. */
        cpu_convert(isa, base + (size_t)off * gan_dtype_size(dtype), dtype, stage, GAN_F32,
                    (size_t)n);
        return stage;
    }
    if (gan_dtype_size(dtype) == 2 && n <= EW_BLOCK) {
        /* A strided 16-bit run (a transposed or broadcast operand): gathered as bits,
         * then converted as a block. */
        uint16_t raw[EW_BLOCK];
        const uint16_t *src = (const uint16_t *)(const void *)base;
        for (int64_t i = 0; i < n; i++)
            raw[i] = src[off + i * stride];
        cpu_convert(isa, raw, dtype, stage, GAN_F32, (size_t)n);
        return stage;
    }
    for (int64_t i = 0; i < n; i++)
        stage[i] = cpu_load(base, dtype, off + i * stride);
    return stage;
}

/* Stores a computed FP32 run to the output unless it was computed in place there. */
static void output_run(enum cpu_isa isa, unsigned char *base, enum gan_dtype dtype,
                       int64_t off, int64_t stride, int64_t n, const float *vals)
{
    if (dtype == GAN_F32 && stride == 1)
        return;
    if (stride == 1) {
        cpu_convert(isa, vals, GAN_F32, base + (size_t)off * gan_dtype_size(dtype), dtype,
                    (size_t)n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        cpu_store(base, dtype, off + i * stride, vals[i]);
}

/* A run of the output that can be written directly (contiguous FP32), or NULL. */
static float *direct_output(unsigned char *base, enum gan_dtype dtype, int64_t off,
                            int64_t stride)
{
    return dtype == GAN_F32 && stride == 1 ? (float *)base + off : NULL;
}

/* The ops the vector kernels compute (elementwise_lanes.h); the others, whose scalar
 * form is a libm call, stay with the scalar loops. */
static int vector_unary_has(enum gan_unary_op op)
{
    switch (op) {
    case GAN_UNARY_COPY: case GAN_UNARY_NEG: case GAN_UNARY_SCALE:
    case GAN_UNARY_ADD_SCALAR: case GAN_UNARY_RELU: case GAN_UNARY_LEAKY_RELU:
    case GAN_UNARY_STEP: case GAN_UNARY_SQUARE: case GAN_UNARY_SQRT: case GAN_UNARY_RSQRT:
    case GAN_UNARY_RECIPROCAL: case GAN_UNARY_ABS: case GAN_UNARY_SIGN: case GAN_UNARY_FILL:
    case GAN_UNARY_TANH: case GAN_UNARY_LEAKY_STEP:
        return 1;
    default:
        return 0;
    }
}

static int vector_binary_has(enum gan_binary_op op)
{
    return op == GAN_BINARY_ADD || op == GAN_BINARY_SUB || op == GAN_BINARY_MUL ||
           op == GAN_BINARY_DIV || op == GAN_BINARY_GREATER || op == GAN_BINARY_MASK_POSITIVE ||
           op == GAN_BINARY_MASK_LEAKY || gan_ew_binary_stores_sum(op);
}

/* Whether the innermost runs go to the vector kernels whole: `isa` (the calling
 * instance's level) is that level, they compute the op, the output run is contiguous
 * and every input run contiguous or broadcast. Not when a contiguous F16 input meets an
 * FP32 output: the vector widening quiets a signalling NaN that the block converter
 * passes on unchanged, and COPY, NEG, ABS and RELU would carry that difference into
 * FP32 memory. */
static int vector_runs(enum cpu_isa isa, int is_unary, int op, const struct gan_iter *it,
                       int nin, const struct gan_operand *const *ops)
{
    int inner = it->ndim - 1;
    if (isa == CPU_ISA_PORTABLE || it->stride[nin][inner] != 1)
        return 0;
    if (is_unary ? !vector_unary_has((enum gan_unary_op)op)
                 : !vector_binary_has((enum gan_binary_op)op))
        return 0;
    if (is_unary && op == GAN_UNARY_FILL)
        return 1; /* x is not read */
    for (int k = 0; k < nin; k++) {
        int64_t s = it->stride[k][inner];
        if (s != 0 && s != 1)
            return 0;
        if (s == 1 && ops[k]->dtype == GAN_F16 && ops[nin]->dtype == GAN_F32)
            return 0;
    }
    return 1;
}

/* Input k's run at offset `off` for the vector kernels: the memory itself, or its one
 * value (read as the scalar path reads it) when the run is broadcast. */
static struct cpu_vec_in vector_input(const struct gan_operand *op, const unsigned char *base,
                                      int64_t off, int64_t stride)
{
    struct cpu_vec_in in = { base, op->dtype, off, 0.0f };
    if (stride == 0) {
        in.base = NULL;
        in.value = cpu_load(base, op->dtype, off);
    }
    return in;
}

/* One call's walk: the coalesced iteration space, the operands (operand nin is the
 * output; nin is 1 for unary, 2 for binary) and the choices made once for the call. */
struct ew_job {
    enum cpu_isa isa;
    int is_unary, op, nin;
    float alpha;
    const struct gan_iter *it;
    const struct gan_operand *const *ops;
    int vector;    /* whole runs go to the vector kernels */
    int64_t chunk; /* elements per block on the scalar path */
};

/* Walks elements [begin, end) of the iteration space in row-major order, calling the
 * run kernels on the innermost dimension: whole runs (or their part inside the range)
 * to the vector kernels where vector_runs allows, otherwise in blocks. Each element's
 * result depends on its operands alone, so a split into ranges gives the same bits as
 * one walk. */
static void elementwise_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct ew_job *j = arg;
    const struct gan_iter *it = j->it;
    const struct gan_operand *const *ops = j->ops;
    const int nin = j->nin, is_unary = j->is_unary, op = j->op, vector = j->vector;
    const enum cpu_isa isa = j->isa;
    const float alpha = j->alpha;
    float stage_in[2][EW_BLOCK];
    float stage_out[EW_BLOCK];
    unsigned char *base[3];
    int64_t off[3], idx[GAN_MAX_DIMS] = { 0 };
    int inner = it->ndim - 1;
    int64_t len = it->dim[inner];
    int64_t chunk = j->chunk;

    /* The odometer at the run holding element `begin`. */
    int64_t o = begin / len;
    for (int k = 0; k <= nin; k++) {
        base[k] = ops[k]->buf->data;
        off[k] = (int64_t)ops[k]->offset;
    }
    for (int64_t rest = o, d = inner - 1; d >= 0; d--) {
        idx[d] = rest % it->dim[d];
        rest /= it->dim[d];
        for (int k = 0; k <= nin; k++)
            off[k] += idx[d] * it->stride[k][d];
    }

    for (int64_t first = o * len; first < end; first += len) {
        int64_t lo = begin > first ? begin - first : 0;
        int64_t hi = end - first < len ? end - first : len;
        if (vector) {
            struct cpu_vec_in in[2];
            for (int k = 0; k < nin; k++)
                in[k] = vector_input(ops[k], base[k], off[k] + lo * it->stride[k][inner],
                                     it->stride[k][inner]);
            if (is_unary)
                (isa == CPU_ISA_AVX512 ? cpu_vec_unary_avx512 : cpu_vec_unary_avx2)(
                    (enum gan_unary_op)op, alpha, &in[0], base[nin], ops[nin]->dtype,
                    off[nin] + lo, hi - lo);
            else
                (isa == CPU_ISA_AVX512 ? cpu_vec_binary_avx512 : cpu_vec_binary_avx2)(
                    (enum gan_binary_op)op, alpha, &in[0], &in[1], base[nin], ops[nin]->dtype,
                    off[nin] + lo, hi - lo);
        }
        for (int64_t start = lo; !vector && start < hi; start += chunk) {
            int64_t n = hi - start < chunk ? hi - start : chunk;
            int64_t yoff = off[nin] + start * it->stride[nin][inner];
            int64_t ys = it->stride[nin][inner];
            float *y = direct_output(base[nin], ops[nin]->dtype, yoff, ys);
            float *dst = y ? y : stage_out;
            if (is_unary) {
                int unit;
                const float *x = NULL;
                if (op != GAN_UNARY_FILL) {
                    x = input_run(isa, base[0], ops[0]->dtype,
                                  off[0] + start * it->stride[0][inner], it->stride[0][inner],
                                  n, stage_in[0], &unit);
                    if (!unit) {
                        /* x broadcast along the run: compute one value, then fill. */
                        float v;
                        unary_run((enum gan_unary_op)op, alpha, x, &v, 1);
                        unary_run(GAN_UNARY_FILL, v, NULL, dst, n);
                        output_run(isa, base[nin], ops[nin]->dtype, yoff, ys, n, dst);
                        continue;
                    }
                }
                unary_run((enum gan_unary_op)op, alpha, x, dst, n);
            } else {
                int ua, ub;
                const float *a = input_run(isa, base[0], ops[0]->dtype,
                                           off[0] + start * it->stride[0][inner],
                                           it->stride[0][inner], n, stage_in[0], &ua);
                const float *b = input_run(isa, base[1], ops[1]->dtype,
                                           off[1] + start * it->stride[1][inner],
                                           it->stride[1][inner], n, stage_in[1], &ub);
                binary_run((enum gan_binary_op)op, alpha, a, ua, b, ub, dst, n);
                if (gan_ew_binary_stores_sum((enum gan_binary_op)op))
                    activate_stored_sum(isa, (enum gan_binary_op)op, alpha, ops[nin]->dtype,
                                        dst, n);
            }
            output_run(isa, base[nin], ops[nin]->dtype, yoff, ys, n, dst);
        }
        /* Odometer over the outer dimensions, innermost first. */
        for (int d = inner - 1; d >= 0; d--) {
            for (int k = 0; k <= nin; k++)
                off[k] += it->stride[k][d];
            if (++idx[d] < it->dim[d])
                break;
            for (int k = 0; k <= nin; k++)
                off[k] -= it->stride[k][d] * it->dim[d];
            idx[d] = 0;
        }
    }
}

/* What an element of `op` costs, in vectorised adds. bench/elementwise on a Zen 4,
 * 50,176 elements: an add 0.13–0.18 ns an element on AVX-512 and 0.31–0.63 on AVX2;
 * the backend's own tanh 1.5–1.7 ns (10–11 adds) and 2.6–3.3 ns (5–9 adds); SIGMOID,
 * EXP and LOG, a libm call an element on every level, 3.0–3.3 ns (17–25 adds) and
 * 3.0–4.2 ns (5–14 adds). At 16 the four split from 8,192 elements, so the generator's
 * tanh of 50,176 (64 images of 28 × 28, about 80 µs) is shared while an add of as many
 * stays on the calling thread. */
static int64_t unary_cost(enum gan_unary_op op)
{
    switch (op) {
    case GAN_UNARY_TANH: case GAN_UNARY_SIGMOID: case GAN_UNARY_EXP: case GAN_UNARY_LOG:
        return 16;
    default:
        return 1;
    }
}

/* A walk is split into ranges of whole blocks of CPU_EW_ALIGN elements, so that two
 * threads never write the same cache line of a contiguous output. */
#define CPU_EW_ALIGN 256

int cpu_elementwise_parts(const gan_backend *be, int nops, int op, int64_t total)
{
    const int64_t cost = nops == 2 ? unary_cost((enum gan_unary_op)op) : 1;
    return cpu_parallel_parts(be, total, CPU_EW_ALIGN, cost);
}

/* Plans the walk and splits it across the instance's threads. */
static gan_status elementwise_walk(gan_backend *be, const char *name, int nops, int op,
                                   float alpha, const struct gan_iter *it,
                                   const struct gan_operand *const *ops)
{
    (void)name; /* nothing here fails */
    const int is_unary = nops == 2, nin = nops - 1;
    int inner = it->ndim - 1;
    int staged = 0;
    for (int k = 0; k <= nin; k++) {
        int64_t s = it->stride[k][inner];
        /* an input broadcast along the run is one value; the output, whatever its stride,
         * is written from the staging block unless it is contiguous FP32 */
        if ((s != 0 || k == nin) && !(ops[k]->dtype == GAN_F32 && s == 1))
            staged = 1;
    }
    /* FILL never reads x, so x's layout does not force staging. */
    if (is_unary && op == GAN_UNARY_FILL) {
        int64_t s = it->stride[1][inner];
        staged = !(ops[1]->dtype == GAN_F32 && s == 1);
    }
    struct ew_job j = {
        .isa = be->isa,
        .is_unary = is_unary,
        .op = op,
        .nin = nin,
        .alpha = alpha,
        .it = it,
        .ops = ops,
        .vector = vector_runs(be->isa, is_unary, op, it, nin, ops),
        .chunk = staged ? EW_BLOCK : it->dim[inner],
    };
    /* A broadcast output (stride 0) would have two threads write one element, and a
     * strided one would put their elements in each other's cache lines: those stay on
     * one thread. */
    int64_t total = 1;
    int shared_output = it->stride[nin][inner] != 1;
    for (int d = 0; d < it->ndim; d++) {
        total *= it->dim[d];
        shared_output |= it->stride[nin][d] == 0;
    }
    int parts = shared_output ? 1 : cpu_elementwise_parts(be, nops, op, total);
    cpu_parallel_for(be, parts, total, CPU_EW_ALIGN, elementwise_range, &j);
    return GAN_OK;
}

/* The walk of a planned call. Where its operands include tensors kept in channel
 * blocks, it runs on the blocks (the call rewritten, and planned again) or makes them
 * NCHW first (kept_blocks.c); its output then holds what it says. */
static gan_status kept_walk(gan_backend *be, int nops, int op, float alpha,
                            const char *name, const struct gan_shape *shape,
                            const struct gan_operand *const *ops, const struct gan_iter *it)
{
    struct gan_shape s = *shape;
    struct gan_operand o[3];
    for (int i = 0; i < nops; i++)
        o[i] = *ops[i];
    struct gan_buffer channels;
    struct cpu_kept kept;
    gan_status st;
    if (!cpu_kept_elementwise(be, nops, &s, o, &channels, &kept, &st))
        return st != GAN_OK ? st : elementwise_walk(be, name, nops, op, alpha, it, ops);
    const struct gan_operand *const in[3] = { &o[0], &o[1], &o[2] };
    struct gan_iter blocks;
    st = nops == 2 ? gan_unary_plan(be->host, "cpu_unary", unary_names,
                                    (enum gan_unary_op)op, &s, in, &blocks)
                   : gan_binary_plan(be->host, "cpu_binary", binary_names,
                                     (enum gan_binary_op)op, 1 /* admitted by its slot */, &s,
                                     in, &blocks);
    if (st == GAN_OK)
        st = elementwise_walk(be, name, nops, op, alpha, &blocks, in);
    if (st == GAN_OK)
        cpu_kept_mark(ops[nops - 1]->buf, &kept);
    return st;
}

gan_status cpu_unary(gan_backend *be, enum gan_unary_op op, float alpha,
                     const struct gan_shape *shape, const struct gan_operand *x,
                     const struct gan_operand *y)
{
    const struct gan_operand *ops[2] = { x, y };
    struct gan_iter it;
    gan_status st = gan_unary_plan(be->host, "cpu_unary", unary_names, op, shape, ops, &it);
    if (st != GAN_OK || it.count == 0)
        return st;
    return kept_walk(be, 2, (int)op, alpha, unary_names[op], shape, ops, &it);
}

/* binary (with_alpha 0) and binary_alpha (1), as gan_binary_entry has them, through the
 * channel blocks' walk. */
static gan_status binary_entry(gan_backend *be, enum gan_binary_op op, int with_alpha,
                               float alpha, const struct gan_shape *shape,
                               const struct gan_operand *a, const struct gan_operand *b,
                               const struct gan_operand *y)
{
    const char *kernel = with_alpha ? "cpu_binary_alpha" : "cpu_binary";
    const struct gan_operand *ops[3] = { a, b, y };
    struct gan_iter it;
    gan_status st = gan_binary_plan(be->host, kernel, binary_names, op, with_alpha, shape, ops,
                                    &it);
    if (st != GAN_OK || it.count == 0)
        return st;
    return kept_walk(be, 3, (int)op, with_alpha ? alpha : 0.0f, binary_names[op], shape, ops,
                     &it);
}

gan_status cpu_binary(gan_backend *be, enum gan_binary_op op, const struct gan_shape *shape,
                      const struct gan_operand *a, const struct gan_operand *b,
                      const struct gan_operand *y)
{
    return binary_entry(be, op, 0, 0.0f, shape, a, b, y);
}

gan_status cpu_binary_alpha(gan_backend *be, enum gan_binary_op op, float alpha,
                            const struct gan_shape *shape, const struct gan_operand *a,
                            const struct gan_operand *b, const struct gan_operand *y)
{
    return binary_entry(be, op, 1, alpha, shape, a, b, y);
}
