/* SPDX-License-Identifier: MIT */
/* elementwise.c — the CPU backend's strided, broadcasting unary and binary kernels.
 * Operands of any float type are loaded as FP32, computed in FP32 and rounded once on store. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"

/* Layout. Operands may have any strides, negative ones included (a reversed view);
 * validation computes the lowest and highest element each operand reaches and both
 * must lie inside its buffer. The walk first drops size-1 dimensions and merges
 * neighbours whose strides chain, so a contiguous tensor is one run and a bias row
 * broadcast is (rows, row). On the AVX-512 level an innermost run whose operands are
 * all contiguous or broadcast goes whole to elementwise_avx512.c, which widens 16-bit
 * operands in registers. Otherwise the run goes straight through memory when it is
 * contiguous FP32 (or broadcast, stride 0), and through a small FP32 staging block
 * when it is 16-bit or strided. An output identical to an input is safe: each block
 * (of 16 lanes, or of the staging size) is read completely before it is written.
 *
 * NaN and signed-zero semantics, chosen to match PyTorch where the header leaves room:
 *   RELU         x <= 0 ? +0 : x        NaN propagates; -0 becomes +0
 *   LEAKY_RELU   x > 0 ? x : alpha·x    NaN propagates
 *   STEP         x > 0 ? 1 : 0          NaN gives 0 (as the header specifies)
 *   SIGN         (x > 0) − (x < 0)      ±0 and NaN give 0
 *   ABS          fabsf                  NaN propagates (sign bit cleared)
 *   SQRT, RSQRT, LOG of a negative number give NaN; RSQRT(0) = +inf, LOG(0) = −inf,
 *   RECIPROCAL(±0) = ±inf, all as IEEE 754 and libm say.
 *   FILL         alpha, whatever x holds (x must be a valid view but is not read)
 *   MAX, MIN     fmaxf, fminf: a NaN loses to a number, so MAX(NaN, 1) = 1
 *   GREATER      a > b ? 1 : 0          any NaN gives 0
 *   MASK_POSITIVE  a · (b > 0 ? 1 : 0)  a real multiply, not a select, so that it is
 *                the bits of MUL(a, STEP(b)): a NaN or inf in a where b <= 0 (or b is
 *                NaN) gives NaN, and a negative a there gives −0
 * Everything else is plain FP32 arithmetic and propagates NaN. */

/* Elements staged per block when an operand is 16-bit or strided. Three blocks of
 * FP32 live on the stack; 512 keeps them inside L1 together. */
#define EW_BLOCK 512

static const char *const unary_names[GAN_UNARY_OP_COUNT] = {
    "cpu_unary(COPY)", "cpu_unary(NEG)", "cpu_unary(SCALE)", "cpu_unary(ADD_SCALAR)",
    "cpu_unary(RELU)", "cpu_unary(LEAKY_RELU)", "cpu_unary(STEP)", "cpu_unary(TANH)",
    "cpu_unary(SIGMOID)", "cpu_unary(SQUARE)", "cpu_unary(SQRT)", "cpu_unary(RSQRT)",
    "cpu_unary(RECIPROCAL)", "cpu_unary(EXP)", "cpu_unary(LOG)", "cpu_unary(ABS)",
    "cpu_unary(SIGN)", "cpu_unary(FILL)"
};

static const char *const binary_names[GAN_BINARY_OP_COUNT] = {
    "cpu_binary(ADD)", "cpu_binary(SUB)", "cpu_binary(MUL)", "cpu_binary(DIV)",
    "cpu_binary(MAX)", "cpu_binary(MIN)", "cpu_binary(GREATER)", "cpu_binary(MASK_POSITIVE)"
};

/* The iteration space after validation: size-1 dimensions dropped and adjacent
 * dimensions merged wherever every operand's strides allow, so that a contiguous
 * tensor becomes one run and a row broadcast becomes (rows, row). Strides are per
 * operand, in elements; negative strides are allowed. */
struct cpu_iter {
    int ndim;                              /* ≥ 1 after planning */
    int64_t dim[GAN_MAX_DIMS];
    int64_t stride[3][GAN_MAX_DIMS];
    int empty;                             /* some dimension is 0: nothing to do */
};

gan_status cpu_check_shape(gan_backend *be, const char *fn, const struct gan_shape *shape,
                           int64_t *count)
{
    if (!shape)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID, "%s: the shape is NULL", fn);
    if (shape->ndim < 0 || shape->ndim > GAN_MAX_DIMS)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: ndim is %d; it must be 0 (a scalar) to %d (GAN_MAX_DIMS)",
                              fn, shape->ndim, GAN_MAX_DIMS);
    /* The product of the non-zero sizes must fit too, so that any sub-product a
     * kernel forms (the kept dimensions of an empty reduction) cannot overflow. */
    int64_t nonzero = 1;
    int empty = 0;
    for (int d = 0; d < shape->ndim; d++) {
        int64_t n = shape->dim[d];
        if (n < 0)
            return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                                  "%s: dimension %d is %lld; sizes must be 0 or more",
                                  fn, d, (long long)n);
        if (n == 0) {
            empty = 1;
            continue;
        }
        if (n > INT64_MAX / nonzero)
            return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                                  "%s: the shape has more than 2^63 elements (dimension %d "
                                  "is %lld)", fn, d, (long long)n);
        nonzero *= n;
    }
    if (count)
        *count = empty ? 0 : nonzero;
    return GAN_OK;
}

gan_status cpu_check_operand(gan_backend *be, const char *fn, const char *name,
                             const struct gan_shape *shape, const struct gan_operand *op)
{
    if (!op)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID, "%s: operand %s is NULL",
                              fn, name);
    if (!cpu_is_float(op->dtype)) {
        const char *dn = gan_dtype_name(op->dtype);
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "%s: operand %s has dtype %s (%d); this kernel takes F32, F16 "
                              "or BF16: cast it first", fn, name, dn ? dn : "unknown",
                              (int)op->dtype);
    }
    int64_t count = 1;
    for (int d = 0; d < shape->ndim; d++)
        count = shape->dim[d] == 0 ? 0 : count;
    if (count == 0)
        return GAN_OK; /* an empty iteration reaches no element */
    if (!op->buf)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: operand %s has no buffer", fn, name);
    size_t cap = op->buf->bytes / gan_dtype_size(op->dtype);
    if (op->offset > (size_t)INT64_MAX || op->offset >= cap)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: operand %s starts at element %zu but its buffer holds %zu "
                              "%s elements: fix the view's offset",
                              fn, name, op->offset, cap, gan_dtype_name(op->dtype));
    /* The lowest and highest element the walk reaches: each dimension moves the
     * index by stride·(dim − 1), downwards for a negative stride. */
    int64_t lo = (int64_t)op->offset, hi = lo;
    for (int d = 0; d < shape->ndim; d++) {
        int64_t s = op->stride[d], span = shape->dim[d] - 1;
        if (s == 0 || span == 0)
            continue;
        int64_t mag = s < 0 ? -s : s;
        if (s == INT64_MIN || mag > INT64_MAX / span)
            return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                                  "%s: operand %s has stride %lld on dimension %d of size "
                                  "%lld, which overflows any buffer",
                                  fn, name, (long long)s, d, (long long)shape->dim[d]);
        int64_t step = mag * span;
        if (s > 0) {
            if (hi > INT64_MAX - step)
                hi = INT64_MAX;
            else
                hi += step;
        } else {
            lo = lo < INT64_MIN + step ? INT64_MIN : lo - step;
        }
    }
    if (lo < 0 || (uint64_t)hi >= cap)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: operand %s reaches elements %lld to %lld (offset %zu, "
                              "%d dimensions) but its buffer holds %zu %s elements (0 to "
                              "%zu): fix the view's offset, strides or shape",
                              fn, name, (long long)lo, (long long)hi, op->offset, shape->ndim,
                              cap, gan_dtype_name(op->dtype), cap - 1);
    return GAN_OK;
}

/* Validates the shape and every operand, then coalesces the iteration space. */
static gan_status iter_plan(gan_backend *be, const char *fn, const struct gan_shape *shape,
                            int nops, const struct gan_operand *const *ops,
                            const char *const *names, struct cpu_iter *it)
{
    int64_t count;
    gan_status st = cpu_check_shape(be, fn, shape, &count);
    if (st != GAN_OK)
        return st;
    for (int k = 0; k < nops; k++)
        if ((st = cpu_check_operand(be, fn, names[k], shape, ops[k])) != GAN_OK)
            return st;
    memset(it, 0, sizeof *it);
    it->empty = count == 0;
    if (it->empty)
        return GAN_OK;

    /* Walk from the innermost dimension outwards, dropping size-1 dimensions and
     * folding a dimension into the one inside it when, for every operand, stepping
     * it once equals stepping the inner one dim times. Built innermost-first, then
     * reversed into row-major order. */
    int64_t dim[GAN_MAX_DIMS], str[3][GAN_MAX_DIMS];
    int n = 0;
    for (int d = shape->ndim - 1; d >= 0; d--) {
        if (shape->dim[d] == 1)
            continue;
        if (n > 0) {
            int merge = 1;
            for (int k = 0; k < nops; k++)
                if (ops[k]->stride[d] != str[k][n - 1] * dim[n - 1])
                    merge = 0;
            if (merge) {
                dim[n - 1] *= shape->dim[d];
                continue;
            }
        }
        dim[n] = shape->dim[d];
        for (int k = 0; k < nops; k++)
            str[k][n] = ops[k]->stride[d];
        n++;
    }
    if (n == 0) { /* a scalar, or all sizes 1: one element */
        dim[0] = 1;
        for (int k = 0; k < nops; k++)
            str[k][0] = 0;
        n = 1;
    }
    it->ndim = n;
    for (int i = 0; i < n; i++) {
        it->dim[i] = dim[n - 1 - i];
        for (int k = 0; k < nops; k++)
            it->stride[k][i] = str[k][n - 1 - i];
    }
    return GAN_OK;
}

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
    case GAN_UNARY_NEG: for (i = 0; i < n; i++) y[i] = -x[i]; break;
    case GAN_UNARY_SCALE: for (i = 0; i < n; i++) y[i] = alpha * x[i]; break;
    case GAN_UNARY_ADD_SCALAR: for (i = 0; i < n; i++) y[i] = x[i] + alpha; break;
    case GAN_UNARY_RELU: for (i = 0; i < n; i++) y[i] = x[i] <= 0.0f ? 0.0f : x[i]; break;
    case GAN_UNARY_LEAKY_RELU:
        for (i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : alpha * x[i];
        break;
    case GAN_UNARY_STEP: for (i = 0; i < n; i++) y[i] = x[i] > 0.0f ? 1.0f : 0.0f; break;
    case GAN_UNARY_TANH: for (i = 0; i < n; i++) y[i] = tanhf(x[i]); break;
    case GAN_UNARY_SIGMOID:
        /* exp(-x) overflows to inf for x < -88 and the quotient is then exactly 0. */
        for (i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case GAN_UNARY_SQUARE: for (i = 0; i < n; i++) y[i] = x[i] * x[i]; break;
    case GAN_UNARY_SQRT: for (i = 0; i < n; i++) y[i] = sqrtf(x[i]); break;
    case GAN_UNARY_RSQRT: for (i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]); break;
    case GAN_UNARY_RECIPROCAL: for (i = 0; i < n; i++) y[i] = 1.0f / x[i]; break;
    case GAN_UNARY_EXP: for (i = 0; i < n; i++) y[i] = expf(x[i]); break;
    case GAN_UNARY_LOG: for (i = 0; i < n; i++) y[i] = logf(x[i]); break;
    case GAN_UNARY_ABS: for (i = 0; i < n; i++) y[i] = fabsf(x[i]); break;
    case GAN_UNARY_SIGN:
        for (i = 0; i < n; i++) y[i] = (float)((x[i] > 0.0f) - (x[i] < 0.0f));
        break;
    case GAN_UNARY_FILL: for (i = 0; i < n; i++) y[i] = alpha; break;
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

/* MASK_POSITIVE's 1, read through a volatile once per run: with a literal 1 the
 * compiler may drop the multiply where the mask is 1 (it assumes no signalling NaN),
 * and a signalling NaN in a would then pass unquieted, unlike MUL(a, STEP(b)) and the
 * vector level, which both multiply. */
static volatile float mask_one = 1.0f;

/* y[i] = f(a[i·sa], b[i·sb]) with sa, sb ∈ {0, 1}; y may be a or b. */
static void binary_run(enum gan_binary_op op, const float *a, int sa, const float *b, int sb,
                       float *y, int64_t n)
{
    int64_t i;
    switch (op) {
    case GAN_BINARY_ADD: BINARY_LOOPS(av + bv); break;
    case GAN_BINARY_SUB: BINARY_LOOPS(av - bv); break;
    case GAN_BINARY_MUL: BINARY_LOOPS(av * bv); break;
    case GAN_BINARY_DIV: BINARY_LOOPS(av / bv); break;
    case GAN_BINARY_MAX: BINARY_LOOPS(fmaxf(av, bv)); break;
    case GAN_BINARY_MIN: BINARY_LOOPS(fminf(av, bv)); break;
    case GAN_BINARY_GREATER: BINARY_LOOPS(av > bv ? 1.0f : 0.0f); break;
    case GAN_BINARY_MASK_POSITIVE: {
        const float one = mask_one;
        BINARY_LOOPS(av * (bv > 0.0f ? one : 0.0f));
        break;
    }
    case GAN_BINARY_OP_COUNT: break;
    }
}

#undef BINARY_LOOPS

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

/* Whether the innermost runs go to the AVX-512 kernels whole: `isa` (the calling
 * instance's level) is that level, they compute the op, the output run is contiguous
 * and every input run contiguous or broadcast. Not when a contiguous F16 input meets an
 * FP32 output: the vector widening quiets a signalling NaN that the block converter
 * passes on unchanged, and COPY, NEG, ABS and RELU would carry that difference into
 * FP32 memory. */
static int vector_runs(enum cpu_isa isa, int is_unary, int op, const struct cpu_iter *it,
                       int nin, const struct gan_operand *const *ops)
{
    int inner = it->ndim - 1;
    if (isa != CPU_ISA_AVX512 || it->stride[nin][inner] != 1)
        return 0;
    if (is_unary ? !cpu_vec_unary_has((enum gan_unary_op)op)
                 : !cpu_vec_binary_has((enum gan_binary_op)op))
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
    const struct cpu_iter *it;
    const struct gan_operand *const *ops;
    int vector;    /* whole runs go to the AVX-512 kernels */
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
    const struct cpu_iter *it = j->it;
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
                cpu_vec_unary((enum gan_unary_op)op, alpha, &in[0], base[nin],
                              ops[nin]->dtype, off[nin] + lo, hi - lo);
            else
                cpu_vec_binary((enum gan_binary_op)op, &in[0], &in[1], base[nin],
                               ops[nin]->dtype, off[nin] + lo, hi - lo);
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
                binary_run((enum gan_binary_op)op, a, ua, b, ub, dst, n);
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

/* Plans the walk and splits it across the instance's threads: ranges of whole blocks
 * of CPU_EW_ALIGN elements, so that two threads never write the same cache line of a
 * contiguous output. */
#define CPU_EW_ALIGN 256

static void elementwise_walk(gan_backend *be, int is_unary, int op, float alpha,
                             const struct cpu_iter *it, int nin,
                             const struct gan_operand *const *ops)
{
    int inner = it->ndim - 1;
    int staged = 0;
    for (int k = 0; k <= nin; k++) {
        int64_t s = it->stride[k][inner];
        if (s != 0 && !(ops[k]->dtype == GAN_F32 && s == 1))
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
    int parts = shared_output ? 1 : cpu_parallel_parts(be, total, CPU_EW_ALIGN, 1);
    cpu_parallel_for(be, parts, total, CPU_EW_ALIGN, elementwise_range, &j);
}

gan_status cpu_unary(gan_backend *be, enum gan_unary_op op, float alpha,
                     const struct gan_shape *shape, const struct gan_operand *x,
                     const struct gan_operand *y)
{
    if ((unsigned)op >= GAN_UNARY_OP_COUNT)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_unary: op %d is not a gan_unary_op (0 to %d)",
                              (int)op, GAN_UNARY_OP_COUNT - 1);
    const struct gan_operand *ops[2] = { x, y };
    static const char *const names[2] = { "x", "y" };
    struct cpu_iter it;
    gan_status st = iter_plan(be, unary_names[op], shape, 2, ops, names, &it);
    if (st != GAN_OK || it.empty)
        return st;
    elementwise_walk(be, 1, (int)op, alpha, &it, 1, ops);
    return GAN_OK;
}

gan_status cpu_binary(gan_backend *be, enum gan_binary_op op, const struct gan_shape *shape,
                      const struct gan_operand *a, const struct gan_operand *b,
                      const struct gan_operand *y)
{
    if ((unsigned)op >= GAN_BINARY_OP_COUNT)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_binary: op %d is not a gan_binary_op (0 to %d)",
                              (int)op, GAN_BINARY_OP_COUNT - 1);
    const struct gan_operand *ops[3] = { a, b, y };
    static const char *const names[3] = { "a", "b", "y" };
    struct cpu_iter it;
    gan_status st = iter_plan(be, binary_names[op], shape, 3, ops, names, &it);
    if (st != GAN_OK || it.empty)
        return st;
    elementwise_walk(be, 0, (int)op, 0.0f, &it, 2, ops);
    return GAN_OK;
}
