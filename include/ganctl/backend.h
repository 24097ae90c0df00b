/* SPDX-License-Identifier: MIT */
/* backend.h — the kernels a compute backend provides, over opaque device buffers.
 * Only the core calls these; models and losses go through the core's tensors. */
#ifndef GANCTL_BACKEND_H
#define GANCTL_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/grad_stats.h>
#include <ganctl/fp8.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gan_backend gan_backend; /* one instance; defined by the plugin */
typedef struct gan_buffer gan_buffer;   /* a block of device memory; defined by the plugin */

/* The most dimensions an element-wise or reduction kernel iterates over. */
#define GAN_MAX_DIMS 6

/* An iteration shape. Dimensions are row-major: dim[ndim-1] varies fastest. */
struct gan_shape {
    int ndim;                     /* 0 (a scalar) … GAN_MAX_DIMS */
    int64_t dim[GAN_MAX_DIMS];
};

/* A contiguous run of elements: buffer, first element, element type. */
struct gan_ref {
    gan_buffer *buf;
    size_t offset;                /* in elements of `dtype`, not bytes */
    enum gan_dtype dtype;
};

/* An operand of an element-wise or reduction kernel: a gan_ref walked with one stride
 * (in elements) per dimension of the kernel's iteration shape. A stride of 0
 * broadcasts along that dimension. An output may be the same view as an input
 * (in place); any other overlap between an output and an input is undefined. */
struct gan_operand {
    gan_buffer *buf;
    size_t offset;
    enum gan_dtype dtype;
    int64_t stride[GAN_MAX_DIMS];
};

/* y = f(x). `alpha` is the op's parameter where it has one. */
enum gan_unary_op {
    GAN_UNARY_COPY = 0,       /* x (with the operands' dtypes this is a strided cast) */
    GAN_UNARY_NEG,            /* -x */
    GAN_UNARY_SCALE,          /* alpha * x */
    GAN_UNARY_ADD_SCALAR,     /* x + alpha */
    GAN_UNARY_RELU,           /* max(x, 0) */
    GAN_UNARY_LEAKY_RELU,     /* x > 0 ? x : alpha * x */
    GAN_UNARY_STEP,           /* x > 0 ? 1 : 0 (the derivative of relu, itself with zero derivative) */
    GAN_UNARY_TANH,
    GAN_UNARY_SIGMOID,        /* 1 / (1 + exp(-x)) */
    GAN_UNARY_SQUARE,         /* x * x */
    GAN_UNARY_SQRT,
    GAN_UNARY_RSQRT,          /* 1 / sqrt(x) */
    GAN_UNARY_RECIPROCAL,     /* 1 / x */
    GAN_UNARY_EXP,
    GAN_UNARY_LOG,
    GAN_UNARY_ABS,
    GAN_UNARY_SIGN,           /* -1, 0 or 1 (0 for a zero of either sign and for NaN) */
    GAN_UNARY_FILL,           /* alpha, ignoring x's values (x may be y) */
    GAN_UNARY_LEAKY_STEP,     /* x > 0 ? 1 : alpha, the derivative of leaky_relu with slope
                                 alpha, itself with zero derivative (ABI minor 7) */
    GAN_UNARY_OP_COUNT
};

/* y = f(a, b), both broadcast to the iteration shape. */
enum gan_binary_op {
    GAN_BINARY_ADD = 0,
    GAN_BINARY_SUB,           /* a - b */
    GAN_BINARY_MUL,
    GAN_BINARY_DIV,           /* a / b */
    GAN_BINARY_MAX,           /* fmaxf */
    GAN_BINARY_MIN,           /* fminf */
    GAN_BINARY_GREATER,       /* a > b ? 1 : 0 */
    GAN_BINARY_MASK_POSITIVE, /* a · (b > 0 ? 1 : 0), ReLU's backward (ABI minor 3) */
    GAN_BINARY_MASK_LEAKY,    /* a · (b > 0 ? 1 : alpha), leaky ReLU's backward with slope
                                 alpha; only through binary_alpha (ABI minor 8) */
    GAN_BINARY_ADD_LEAKY,     /* z > 0 ? z : alpha · z with z = a + b stored in y's dtype:
                                 ADD then LEAKY_RELU, a bias and its activation in one
                                 pass; only through binary_alpha (ABI minor 9) */
    GAN_BINARY_ADD_RELU,      /* z <= 0 ? +0 : z with z as ADD_LEAKY's: ADD then RELU
                                 (ABI minor 9) */
    GAN_BINARY_OP_COUNT
};

/* Reductions accumulate in FP32 whatever the storage type. */
enum gan_reduce_op {
    GAN_REDUCE_SUM = 0,
    GAN_REDUCE_MEAN,
    GAN_REDUCE_MAX,
    GAN_REDUCE_MIN,
    GAN_REDUCE_SUM_SQUARES,
    GAN_REDUCE_ABS_MAX,
    GAN_REDUCE_OP_COUNT
};

/* C = alpha * op(A) · op(B) + beta * C, row-major, op(A) m×k, op(B) k×n, C m×n,
 * accumulated in FP32 whatever the storage types (as tensor cores do). lda, ldb, ldc
 * are row strides in elements of the stored (untransposed) matrices. `batch` ≥ 1
 * independent products; matrix i starts stride_x·i elements after matrix 0.
 * With beta == 0, C is not read (NaN in C does not propagate). */
struct gan_gemm {
    int trans_a, trans_b;         /* 0 or 1 */
    int64_t m, n, k;
    float alpha, beta;
    struct gan_ref a, b, c;
    int64_t lda, ldb, ldc;
    int64_t batch;
    int64_t stride_a, stride_b, stride_c;
};

/* A 2-D convolution, NCHW activations and [c_out, c_in, kh, kw] filters (PyTorch's
 * layout), cross-correlation as in every deep-learning library. x, w, y, dx, dy, dw
 * all have `dtype` and are contiguous. h_out and w_out must equal
 * (h_in + 2·pad − dilation·(k − 1) − 1) / stride + 1; the backend checks. */
struct gan_conv2d {
    int64_t n, c_in, h_in, w_in;
    int64_t c_out, kh, kw;
    int64_t stride_h, stride_w;
    int64_t pad_h, pad_w;
    int64_t dilation_h, dilation_w;
    int64_t h_out, w_out;
    enum gan_dtype dtype;
};

/* What a narrowing cast did, counted over the elements it converted. */
struct gan_cast_counts {
    uint64_t elements;
    uint64_t overflow;    /* finite input that became ±inf; for an FP8 output, finite
                             input beyond what rounds to its largest finite value, whether
                             it became ±inf (E5M2), NaN (E4M3) or ±max (saturated) */
    uint64_t underflow;   /* non-zero input that became zero */
    uint64_t subnormal;   /* non-zero results that are subnormal in the output type */
    uint64_t nonfinite;   /* inputs that were already inf or NaN */
};

/* Flags of cast_flags (ABI 1.5); a backend refuses a bit it does not know. */
enum gan_cast_flag {
    /* An FP8 output saturates: a finite value beyond the largest finite value, and an
     * infinity, become ±max (448 for E4M3, 57344 for E5M2), as GPUs' satfinite
     * conversions do; NaN stays NaN. Without it, they become ±inf in E5M2 and NaN in
     * E4M3, which has no infinity. Only FP8 outputs take it. */
    GAN_CAST_SATURATE = 1u << 0
};

/* A product of two FP8 operands, each with its own scales (ABI 1.6): fp8_quantize's
 * output fed to a GEMM. g is an ordinary gan_gemm with these limits: a and b are
 * GAN_F8E4M3 or GAN_F8E5M2 (either, independently), c is F32, BF16 or F16, batch is
 * 1, and each matrix is contiguous (lda, ldb and ldc equal the stored column counts).
 * Products accumulate in FP32. Each operand's scales follow struct gan_fp8_layout
 * (fp8.h) with its blocks along k:
 *   a is stored m×k, ALONG_ROWS (trans_a 0), or k×m, ALONG_COLUMNS (trans_a 1);
 *   b is stored k×n, ALONG_COLUMNS (trans_b 0), or n×k, ALONG_ROWS (trans_b 1).
 * With inv = 1/scale rounded to FP32:
 *   both per tensor:  c = ((alpha·inv_a)·inv_b) · Σ qa·qb + beta·c, the factors
 *                     multiplied in FP32 and the sum rescaled once;
 *   otherwise:        each q widened as q·inv of its block, rounded once to the type
 *                     the backend's product reads (FP32 on the CPU, BF16 where a GPU
 *                     has no FP8 kernel for the call), so exact for power-of-two
 *                     scales (E8M0) in any case; then c = alpha · Σ a·b + beta·c.
 * The result is rounded once into c's dtype. An FP8 tensor core (Hopper's, through
 * cuBLASLt) sums the products of one instruction in fewer bits than FP32 before it adds
 * them to its FP32 accumulator, so its results may differ from FP32 accumulation's by
 * more than FP32's rounding. */
struct gan_gemm_fp8 {
    struct gan_gemm g;
    struct gan_ref scale_a, scale_b;   /* F32, gan_fp8_scale_count() values each */
    int64_t block_a, block_b;          /* 0: per tensor */
};

/* The layouts of a gan_gemm_fp8's operands, their blocks along k as above: what the
 * caller quantizes each operand with and what the backend reads its scales by. Inline,
 * so that neither side needs anything from the other to agree. */
static inline void gan_gemm_fp8_layouts(const struct gan_gemm_fp8 *f, struct gan_fp8_layout *la,
                                        struct gan_fp8_layout *lb)
{
    const struct gan_gemm *g = &f->g;
    la->rows = g->trans_a ? g->k : g->m;
    la->cols = g->trans_a ? g->m : g->k;
    la->block = f->block_a;
    la->along = g->trans_a ? GAN_FP8_ALONG_COLUMNS : GAN_FP8_ALONG_ROWS;
    lb->rows = g->trans_b ? g->n : g->k;
    lb->cols = g->trans_b ? g->k : g->n;
    lb->block = f->block_b;
    lb->along = g->trans_b ? GAN_FP8_ALONG_ROWS : GAN_FP8_ALONG_COLUMNS;
}

/* One Adam step over n elements (Kingma & Ba, with bias correction):
 *   g = grad · grad_scale + weight_decay · param      (L2, as torch.optim.Adam)
 *   m = beta1·m + (1 − beta1)·g;  v = beta2·v + (1 − beta2)·g²
 *   param −= lr · (m / (1 − beta1^step)) / (sqrt(v / (1 − beta2^step)) + eps)
 * param, m and v are F32; grad may be any float type. When param_copy.buf is not
 * NULL the updated parameters are also written there in param_copy.dtype (the
 * 16-bit working copy of mixed precision). */
struct gan_adam {
    float lr, beta1, beta2, eps, weight_decay;
    int64_t step;                 /* ≥ 1 */
    float grad_scale;             /* 1 / loss scale, times a clipping factor */
};

/* Philox4x32-10 counter-based random numbers (Salmon et al., SC'11). The key is
 * (seed & 0xffffffff, seed >> 32); block b is counter (b & 0xffffffff, b >> 32, 0, 0)
 * and yields four 32-bit words. Element i of a call takes word i % 4 of block
 * offset + i / 4, so a call for n numbers consumes ceil(n / 4) blocks and every
 * backend produces the same numbers for the same seed and offset.
 *   uniform:  u = ((word >> 8) + 0.5) · 2^-24, in (0, 1), then low + (high − low)·u
 *             in double, rounded once; a value that rounds onto low or high (FP32
 *             rounds 1 − 2^-25 to 1) moves one step of y's dtype back inside, so it
 *             stays in (low, high) whenever the dtype has a value there.
 *   normal:   words (0,1) and (2,3) of a block give two pairs of uniforms u1, u2;
 *             Box–Muller in double precision: r = sqrt(−2 ln u1),
 *             z0 = r cos(2π u2), z1 = r sin(2π u2); then mean + std·z, rounded once. */

/* The function type of each slot of struct gan_backend_ops, named after the slot, so
 * that a backend declares what it fills a slot with in one line (`gan_backend_gemm_fn
 * my_gemm;`) and the compiler holds the definition to the table's signature. Each
 * slot's meaning is in the table below. They only name the types the table's members
 * always had: the table's layout, and so the ABI, is unchanged. */
typedef gan_status gan_backend_create_fn(const struct gan_host *host, gan_backend **out);
typedef void gan_backend_destroy_fn(gan_backend *be);
typedef const char *gan_backend_describe_fn(gan_backend *be);
typedef gan_status gan_backend_buffer_alloc_fn(gan_backend *be, size_t bytes, gan_buffer **out);
typedef void gan_backend_buffer_free_fn(gan_backend *be, gan_buffer *buf);
typedef gan_status gan_backend_upload_fn(gan_backend *be, gan_buffer *dst,
                                         size_t dst_byte_offset, const void *src,
                                         size_t bytes);
typedef gan_status gan_backend_download_fn(gan_backend *be, void *dst, gan_buffer *src,
                                           size_t src_byte_offset, size_t bytes);
typedef gan_status gan_backend_copy_fn(gan_backend *be, gan_buffer *dst,
                                       size_t dst_byte_offset, gan_buffer *src,
                                       size_t src_byte_offset, size_t bytes);
typedef gan_status gan_backend_gemm_fn(gan_backend *be, const struct gan_gemm *g);
typedef gan_status gan_backend_unary_fn(gan_backend *be, enum gan_unary_op op, float alpha,
                                        const struct gan_shape *shape,
                                        const struct gan_operand *x,
                                        const struct gan_operand *y);
typedef gan_status gan_backend_binary_fn(gan_backend *be, enum gan_binary_op op,
                                         const struct gan_shape *shape,
                                         const struct gan_operand *a,
                                         const struct gan_operand *b,
                                         const struct gan_operand *y);
typedef gan_status gan_backend_binary_alpha_fn(gan_backend *be, enum gan_binary_op op,
                                               float alpha, const struct gan_shape *shape,
                                               const struct gan_operand *a,
                                               const struct gan_operand *b,
                                               const struct gan_operand *y);
typedef gan_status gan_backend_reduce_fn(gan_backend *be, enum gan_reduce_op op,
                                         const struct gan_shape *shape,
                                         const struct gan_operand *x, uint32_t axes,
                                         const struct gan_operand *y);
typedef gan_status gan_backend_conv2d_forward_fn(gan_backend *be, const struct gan_conv2d *c,
                                                 const struct gan_ref *x,
                                                 const struct gan_ref *w, float beta,
                                                 const struct gan_ref *y);
typedef gan_status gan_backend_conv2d_backward_data_fn(gan_backend *be,
                                                       const struct gan_conv2d *c,
                                                       const struct gan_ref *dy,
                                                       const struct gan_ref *w, float beta,
                                                       const struct gan_ref *dx);
typedef gan_status gan_backend_conv2d_backward_filter_fn(gan_backend *be,
                                                         const struct gan_conv2d *c,
                                                         const struct gan_ref *x,
                                                         const struct gan_ref *dy, float beta,
                                                         const struct gan_ref *dw);
typedef gan_status gan_backend_cast_fn(gan_backend *be, size_t n, const struct gan_ref *x,
                                       const struct gan_ref *y,
                                       struct gan_cast_counts *counts);
typedef gan_status gan_backend_cast_flags_fn(gan_backend *be, size_t n,
                                             const struct gan_ref *x,
                                             const struct gan_ref *y, uint32_t flags,
                                             struct gan_cast_counts *counts);
typedef gan_status gan_backend_rng_bits_fn(gan_backend *be, size_t n, uint64_t seed,
                                           uint64_t offset, const struct gan_ref *y);
typedef gan_status gan_backend_rng_uniform_fn(gan_backend *be, size_t n, uint64_t seed,
                                              uint64_t offset, float low, float high,
                                              const struct gan_ref *y);
typedef gan_status gan_backend_rng_normal_fn(gan_backend *be, size_t n, uint64_t seed,
                                             uint64_t offset, float mean, float std,
                                             const struct gan_ref *y);
typedef gan_status gan_backend_adam_fn(gan_backend *be, const struct gan_adam *p, size_t n,
                                       const struct gan_ref *param, const struct gan_ref *grad,
                                       const struct gan_ref *m, const struct gan_ref *v,
                                       const struct gan_ref *param_copy);
typedef gan_status gan_backend_grad_stats_fn(gan_backend *be, size_t n,
                                             const struct gan_ref *x, float inv_scale,
                                             const struct gan_ref *unscaled,
                                             struct gan_grad_stats *stats);
typedef gan_status gan_backend_synchronize_fn(gan_backend *be);
typedef gan_status gan_backend_fp8_stats_fn(gan_backend *be, const struct gan_fp8_layout *l,
                                            const struct gan_ref *x, int histogram,
                                            float *block_amax, struct gan_fp8_stats *stats);
typedef gan_status gan_backend_fp8_quantize_fn(gan_backend *be,
                                               const struct gan_fp8_layout *l,
                                               const struct gan_ref *x,
                                               const struct gan_ref *scale, uint32_t flags,
                                               const struct gan_ref *y,
                                               struct gan_fp8_cast_stats *stats);
typedef gan_status gan_backend_fp8_dequantize_fn(gan_backend *be,
                                                 const struct gan_fp8_layout *l,
                                                 const struct gan_ref *q,
                                                 const struct gan_ref *scale,
                                                 const struct gan_ref *y);
typedef gan_status gan_backend_gemm_fp8_fn(gan_backend *be, const struct gan_gemm_fp8 *g);

struct gan_backend_ops {
    size_t struct_size;           /* sizeof(struct gan_backend_ops) as the plugin was built */

    /* Creates an instance. `host` outlives it. When no usable device exists, returns
     * GAN_ERR_DEVICE with a one-line reason given through host->fail. Required. */
    gan_backend_create_fn *create;
    gan_backend_destroy_fn *destroy;                                   /* required */
    /* One line saying what runs: device, library, kernel, threads. Required. */
    gan_backend_describe_fn *describe;

    /* Memory. A new buffer's contents are undefined. Required, all five. */
    gan_backend_buffer_alloc_fn *buffer_alloc;
    gan_backend_buffer_free_fn *buffer_free;
    gan_backend_upload_fn *upload;
    gan_backend_download_fn *download;
    gan_backend_copy_fn *copy;

    /* The element-wise, product and reduction kernels. Required, all four. */
    gan_backend_gemm_fn *gemm;
    gan_backend_unary_fn *unary;
    gan_backend_binary_fn *binary;
    /* Reduces x (iterated over `shape`) along every dimension d with bit d of `axes`
     * set. y is described over the same shape with stride 0 on reduced dimensions. */
    gan_backend_reduce_fn *reduce;

    /* y = conv(x, w) + beta·y;  dx = conv_transpose(dy, w) + beta·dx;
     * dw = corr(x, dy) + beta·dw.  beta is 0 (overwrite) or 1 (accumulate).
     * Optional, all three (ABI 1.4; required before): a backend for fully connected
     * models may leave them NULL, and a run whose model lists them in its
     * backend_slots (model.h) is then refused when it starts. */
    gan_backend_conv2d_forward_fn *conv2d_forward;
    gan_backend_conv2d_backward_data_fn *conv2d_backward_data;
    gan_backend_conv2d_backward_filter_fn *conv2d_backward_filter;

    /* y = x converted to y's dtype (round to nearest even), n elements. When `counts`
     * is not NULL the call waits for the result and fills it. From ABI 1.5 the float
     * types include FP8: a value beyond an FP8 type's range becomes ±inf (E5M2) or NaN
     * (E4M3), as cast_flags does without GAN_CAST_SATURATE; casts between FP8 and the
     * integer types are refused. Required. */
    gan_backend_cast_fn *cast;

    /* Random numbers; see the Philox comment above. y is F32 (F16/BF16 allowed for
     * uniform and normal: rounded once) and U32 for bits. Required, all three. */
    gan_backend_rng_bits_fn *rng_bits;
    gan_backend_rng_uniform_fn *rng_uniform;
    gan_backend_rng_normal_fn *rng_normal;

    /* Required. */
    gan_backend_adam_fn *adam;

    /* Statistics of n elements of x (any float type) seen through inv_scale; when
     * `unscaled.buf` is not NULL also writes x · inv_scale there (the fused unscale).
     * Waits for the result. Required. */
    gan_backend_grad_stats_fn *grad_stats;

    /* Optional: waits until all queued work is done. NULL: the backend is synchronous. */
    gan_backend_synchronize_fn *synchronize;

    /* cast, with `flags` a set of enum gan_cast_flag bits; flags 0 is cast itself.
     * Optional (ABI 1.5): a backend without it has no saturating cast. */
    gan_backend_cast_flags_fn *cast_flags;

    /* FP8 products (ABI 1.6). Optional, all four: a backend without them has no FP8
     * products, and a run with precision.mode "fp8" is refused when it starts. Every
     * operand is described by a struct gan_fp8_layout (fp8.h); x, q and y are
     * contiguous rows·cols elements, scales are F32 (gan_fp8_scale_count of them); an
     * operand without elements needs no buffer. A module whose instances differ (a GPU
     * backend on devices with and without FP8) fills the four, and an instance without
     * FP8 products refuses every call with GAN_ERR_UNSUPPORTED and one line naming its
     * device, before it reads its arguments: fp8_stats of a 0×0 layout asks an instance
     * whether it has them, at no cost.
     *
     * fp8_stats: measures x (F32, BF16 or F16) into *stats (its log2 histogram only when
     * `histogram` is nonzero, else zeros), and when block_amax is not NULL writes there,
     * in host memory, the max |x| over the finite values of each block (0 for a block
     * with none), in the layout's scale order. Waits for the result. */
    gan_backend_fp8_stats_fn *fp8_stats;
    /* y (GAN_F8E4M3 or GAN_F8E5M2) = fp8(x · scale of its block), rounded to nearest
     * even; `flags` as cast_flags takes them (GAN_CAST_SATURATE). When `stats` is not
     * NULL it waits and fills it, the amax measured in the same pass. */
    gan_backend_fp8_quantize_fn *fp8_quantize;
    /* y (F32, BF16 or F16) = q · (1/scale of its block, rounded to FP32), rounded once to
     * y's dtype: the operand an FP8 product reads, for products that take no FP8
     * (convolutions emulated through their FP32 or BF16 kernels). */
    gan_backend_fp8_dequantize_fn *fp8_dequantize;
    /* See struct gan_gemm_fp8. */
    gan_backend_gemm_fp8_fn *gemm_fp8;

    /* y = f(a, b) as binary computes it, with the op's parameter `alpha`: every binary op
     * (those without a parameter ignore it), and GAN_BINARY_MASK_LEAKY and
     * GAN_BINARY_ADD_LEAKY, which binary refuses. Optional (ABI 1.8): without it the
     * core computes leaky ReLU's backward as GAN_UNARY_LEAKY_STEP and then
     * GAN_BINARY_MUL, the same values in two passes. From ABI 1.9 the core also sends a
     * bias and the (leaky) ReLU after it here as one op, ADD_LEAKY or ADD_RELU, to a
     * backend of 1.9 or later; an older one gets ADD and the activation. */
    gan_backend_binary_alpha_fn *binary_alpha;
};

/* Every slot of struct gan_backend_ops after struct_size, in the table's order, each
 * with whether a backend must fill it: X(slot, ID, GAN_SLOT_REQUIRED or
 * GAN_SLOT_OPTIONAL). This list, not the comments above, is what the host holds a
 * module to: its loader refuses a module that leaves a required slot NULL, and it
 * answers whether a backend supports a slot from it (a required slot always, an
 * optional one when filled). ID names the slot in enum gan_backend_slot. A minor
 * version appends slots to the table and to this list together, or turns a required
 * slot optional; a slot never moves. */
#define GAN_BACKEND_SLOTS(X) \
    X(create, CREATE, GAN_SLOT_REQUIRED) \
    X(destroy, DESTROY, GAN_SLOT_REQUIRED) \
    X(describe, DESCRIBE, GAN_SLOT_REQUIRED) \
    X(buffer_alloc, BUFFER_ALLOC, GAN_SLOT_REQUIRED) \
    X(buffer_free, BUFFER_FREE, GAN_SLOT_REQUIRED) \
    X(upload, UPLOAD, GAN_SLOT_REQUIRED) \
    X(download, DOWNLOAD, GAN_SLOT_REQUIRED) \
    X(copy, COPY, GAN_SLOT_REQUIRED) \
    X(gemm, GEMM, GAN_SLOT_REQUIRED) \
    X(unary, UNARY, GAN_SLOT_REQUIRED) \
    X(binary, BINARY, GAN_SLOT_REQUIRED) \
    X(reduce, REDUCE, GAN_SLOT_REQUIRED) \
    X(conv2d_forward, CONV2D_FORWARD, GAN_SLOT_OPTIONAL) \
    X(conv2d_backward_data, CONV2D_BACKWARD_DATA, GAN_SLOT_OPTIONAL) \
    X(conv2d_backward_filter, CONV2D_BACKWARD_FILTER, GAN_SLOT_OPTIONAL) \
    X(cast, CAST, GAN_SLOT_REQUIRED) \
    X(rng_bits, RNG_BITS, GAN_SLOT_REQUIRED) \
    X(rng_uniform, RNG_UNIFORM, GAN_SLOT_REQUIRED) \
    X(rng_normal, RNG_NORMAL, GAN_SLOT_REQUIRED) \
    X(adam, ADAM, GAN_SLOT_REQUIRED) \
    X(grad_stats, GRAD_STATS, GAN_SLOT_REQUIRED) \
    X(synchronize, SYNCHRONIZE, GAN_SLOT_OPTIONAL) \
    X(cast_flags, CAST_FLAGS, GAN_SLOT_OPTIONAL) \
    X(fp8_stats, FP8_STATS, GAN_SLOT_OPTIONAL) \
    X(fp8_quantize, FP8_QUANTIZE, GAN_SLOT_OPTIONAL) \
    X(fp8_dequantize, FP8_DEQUANTIZE, GAN_SLOT_OPTIONAL) \
    X(gemm_fp8, GEMM_FP8, GAN_SLOT_OPTIONAL) \
    X(binary_alpha, BINARY_ALPHA, GAN_SLOT_OPTIONAL)

/* Whether a module must fill a slot of its ops table. */
enum gan_slot_requirement {
    GAN_SLOT_OPTIONAL = 0,        /* may be NULL: the core does without it, or has a default */
    GAN_SLOT_REQUIRED = 1         /* a module that leaves it NULL is refused when loaded */
};

/* The backend's slots by number, in table order: GAN_BACKEND_SLOT_GEMM and the rest. */
#define GAN_BACKEND_SLOT_ENUMERATOR_(slot, id, requirement) GAN_BACKEND_SLOT_##id,
enum gan_backend_slot {
    GAN_BACKEND_SLOTS(GAN_BACKEND_SLOT_ENUMERATOR_)
    GAN_BACKEND_SLOT_COUNT        /* of these headers; a newer minor may have more */
};
#undef GAN_BACKEND_SLOT_ENUMERATOR_

#ifdef __cplusplus
}
#endif
#endif
