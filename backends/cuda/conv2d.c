/* SPDX-License-Identifier: MIT */
/* conv2d.c — the CUDA backend's 2-D convolution through cuDNN: forward, backward-data and
 * backward-filter, with descriptors and the algorithm choice cached per convolution shape. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/conv2d_checks.h"

/* Choices, and why:
 *   - Compute type FP32 for every dtype (cuDNN's FLOAT, PSEUDO_HALF and
 *     PSEUDO_BFLOAT16 configurations): 16-bit tensors are read and written as stored,
 *     products accumulate in FP32, and the result is rounded once, as on the CPU.
 *   - FP32 convolutions run with CUDNN_FMA_MATH: cuDNN's default math lets Ampere and
 *     later GPUs use TF32 (10-bit mantissas), which would make FP32 runs quietly less
 *     exact than the CPU backend's. 16-bit ones may use tensor cores.
 *   - The algorithm comes from cuDNN's heuristics (cudnnGet…Algorithm_v7: no trial
 *     runs, no memory of their own), filtered to those within the workspace limit and,
 *     by default, to deterministic ones first, so that a run repeats bit for bit. The
 *     candidates are kept in order; one that cuDNN refuses at run time (it happens with
 *     heuristics) is dropped for the next.
 *   - Should cuDNN offer nothing for a 16-bit convolution (a GPU without BF16 kernels,
 *     say), it runs on FP32 copies in scratch and the result is rounded once: slower,
 *     same numbers as the CPU backend.
 *   - A plan (descriptors, candidates) is made the first time a shape is seen and
 *     kept for the instance's life: a training step sees the same few shapes again
 *     and again. */

enum conv_kind { CONV_FORWARD, CONV_BACKWARD_DATA, CONV_BACKWARD_FILTER };

static const char *const conv_names[3] = {
    "conv2d_forward", "conv2d_backward_data", "conv2d_backward_filter"
};

#define CONV_MAX_ALGOS 16

struct cuda_conv_plan {
    struct cuda_conv_plan *next;
    enum conv_kind kind;
    struct gan_conv2d c;
    int staged;                        /* runs on FP32 copies of 16-bit tensors */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int count, pick;                   /* usable candidates; the one in use */
    int ready;                         /* the pick's math type is set, its workspace known */
    int algo[CONV_MAX_ALGOS];
    cudnnMathType_t math[CONV_MAX_ALGOS];
    size_t memory[CONV_MAX_ALGOS];
};

/* ---------------------------------------------------------------- checks */

/* The descriptor and beta, and the element counts of x, w and y. */
static gan_status check_desc(gan_backend *be, const char *op, const struct gan_conv2d *c,
                             float beta, struct gan_conv2d_sizes *z)
{
    gan_status st = gan_conv2d_check_desc(be->host, op, "cuDNN's descriptors hold", c, beta);
    if (st != GAN_OK)
        return st;
    /* cuDNN's 4-D descriptors take int sizes and strides. */
    if (!gan_conv2d_sizes(c, z) || z->x_all > INT_MAX || z->y_all > INT_MAX ||
        z->w_elems > INT_MAX)
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "%s: a tensor of this convolution has more than %d elements, "
                              "more than cuDNN's 4-D descriptors index; split the batch", op,
                              INT_MAX);
    return GAN_OK;
}

/* ---------------------------------------------------------------- plans */

static void plan_free(struct cuda_conv_plan *p)
{
    if (p->xd)
        cudnnDestroyTensorDescriptor(p->xd);
    if (p->yd)
        cudnnDestroyTensorDescriptor(p->yd);
    if (p->wd)
        cudnnDestroyFilterDescriptor(p->wd);
    if (p->cd)
        cudnnDestroyConvolutionDescriptor(p->cd);
    free(p);
}

void cuda_conv_plans_free(gan_backend *be)
{
    while (be->plans) {
        struct cuda_conv_plan *next = be->plans->next;
        plan_free(be->plans);
        be->plans = next;
    }
}

static int same_conv(const struct gan_conv2d *a, const struct gan_conv2d *b)
{
    return a->n == b->n && a->c_in == b->c_in && a->h_in == b->h_in && a->w_in == b->w_in &&
           a->c_out == b->c_out && a->kh == b->kh && a->kw == b->kw &&
           a->stride_h == b->stride_h && a->stride_w == b->stride_w &&
           a->pad_h == b->pad_h && a->pad_w == b->pad_w &&
           a->dilation_h == b->dilation_h && a->dilation_w == b->dilation_w &&
           a->h_out == b->h_out && a->w_out == b->w_out && a->dtype == b->dtype;
}

/* Describes the convolution to cuDNN with tensors of data type `dt`. */
static gan_status plan_describe(gan_backend *be, struct cuda_conv_plan *p, cudnnDataType_t dt)
{
    const struct gan_conv2d *c = &p->c;
    const char *op = conv_names[p->kind];
    gan_status st = cuda_check_dnn(be, op,
        cudnnSetTensor4dDescriptor(p->xd, CUDNN_TENSOR_NCHW, dt, (int)c->n, (int)c->c_in,
                                   (int)c->h_in, (int)c->w_in));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op,
            cudnnSetFilter4dDescriptor(p->wd, dt, CUDNN_TENSOR_NCHW, (int)c->c_out,
                                       (int)c->c_in, (int)c->kh, (int)c->kw));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op,
            cudnnSetTensor4dDescriptor(p->yd, CUDNN_TENSOR_NCHW, dt, (int)c->n, (int)c->c_out,
                                       (int)c->h_out, (int)c->w_out));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op,
            cudnnSetConvolution2dDescriptor(p->cd, (int)c->pad_h, (int)c->pad_w,
                                            (int)c->stride_h, (int)c->stride_w,
                                            (int)c->dilation_h, (int)c->dilation_w,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op,
            cudnnSetConvolutionMathType(p->cd, dt == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH
                                                                      : CUDNN_TENSOR_OP_MATH));
    if (st != GAN_OK)
        return st;
    int n, ch, h, w;
    st = cuda_check_dnn(be, op,
                        cudnnGetConvolution2dForwardOutputDim(p->cd, p->xd, p->wd, &n, &ch,
                                                              &h, &w));
    if (st == GAN_OK && (n != c->n || ch != c->c_out || h != c->h_out || w != c->w_out))
        return be->host->fail(be->host->ctx, GAN_ERR_INTERNAL,
                              "%s: cuDNN computes an output of %d×%d×%d×%d where the checked "
                              "descriptor says %lld×%lld×%lld×%lld", op, n, ch, h, w,
                              (long long)c->n, (long long)c->c_out, (long long)c->h_out,
                              (long long)c->w_out);
    return st;
}

/* One candidate from any of cuDNN's three perf-result types (same fields). */
struct candidate {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
};

#define COPY_PERF(dst, src, n) \
    for (int i_ = 0; i_ < (n); i_++) { \
        (dst)[i_].algo = (int)(src)[i_].algo; \
        (dst)[i_].status = (src)[i_].status; \
        (dst)[i_].memory = (src)[i_].memory; \
        (dst)[i_].determinism = (src)[i_].determinism; \
        (dst)[i_].math = (src)[i_].mathType; \
    }

/* Asks cuDNN's heuristics for the algorithms of the plan's convolution and keeps the
 * usable ones in the order described at the top of this file. p->count = 0 when
 * there are none (or cuDNN does not support the configuration at all). */
static gan_status plan_choose(gan_backend *be, struct cuda_conv_plan *p, int fp32)
{
    const char *op = conv_names[p->kind];
    struct candidate cand[CONV_MAX_ALGOS];
    int got = 0;
    cudnnStatus_t s;
    if (p->kind == CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CONV_MAX_ALGOS];
        s = cudnnGetConvolutionForwardAlgorithm_v7(be->dnn, p->xd, p->wd, p->cd, p->yd,
                                                   CONV_MAX_ALGOS, &got, perf);
        if (s == CUDNN_STATUS_SUCCESS)
            COPY_PERF(cand, perf, got);
    } else if (p->kind == CONV_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CONV_MAX_ALGOS];
        s = cudnnGetConvolutionBackwardDataAlgorithm_v7(be->dnn, p->wd, p->yd, p->cd, p->xd,
                                                        CONV_MAX_ALGOS, &got, perf);
        if (s == CUDNN_STATUS_SUCCESS)
            COPY_PERF(cand, perf, got);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CONV_MAX_ALGOS];
        s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(be->dnn, p->xd, p->yd, p->cd, p->wd,
                                                          CONV_MAX_ALGOS, &got, perf);
        if (s == CUDNN_STATUS_SUCCESS)
            COPY_PERF(cand, perf, got);
    }
    p->count = p->pick = p->ready = 0;
    if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED)
        return GAN_OK;
    gan_status st = cuda_check_dnn(be, op, s);
    if (st != GAN_OK)
        return st;
    /* Two passes: deterministic candidates first (when asked for), then the rest. */
    for (int pass = be->deterministic ? 0 : 1; pass < 2; pass++)
        for (int i = 0; i < got && i < CONV_MAX_ALGOS; i++) {
            const struct candidate *c = &cand[i];
            int det = c->determinism == CUDNN_DETERMINISTIC;
            int tensor_math = c->math == CUDNN_TENSOR_OP_MATH ||
                              c->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
            if (c->status != CUDNN_STATUS_SUCCESS || c->memory > be->workspace_limit ||
                (fp32 && tensor_math) || (pass == 0 && !det) ||
                (pass == 1 && be->deterministic && det))
                continue;
            p->algo[p->count] = c->algo;
            p->math[p->count] = fp32 ? CUDNN_FMA_MATH : c->math;
            p->memory[p->count] = c->memory;
            p->count++;
        }
    return GAN_OK;
}

/* (Re)describes the plan with tensors of FP32 (staged) or of the convolution's own
 * dtype, and chooses its candidates. */
static gan_status plan_setup(gan_backend *be, struct cuda_conv_plan *p, int staged)
{
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    if (!staged && p->c.dtype == GAN_F16)
        dt = CUDNN_DATA_HALF;
    else if (!staged && p->c.dtype == GAN_BF16)
        dt = CUDNN_DATA_BFLOAT16;
    p->staged = staged;
    gan_status st = plan_describe(be, p, dt);
    if (st == GAN_OK)
        st = plan_choose(be, p, dt == CUDNN_DATA_FLOAT);
    return st;
}

static gan_status plan_get(gan_backend *be, enum conv_kind kind, const struct gan_conv2d *c,
                           struct cuda_conv_plan **out)
{
    for (struct cuda_conv_plan *p = be->plans; p; p = p->next)
        if (p->kind == kind && same_conv(&p->c, c)) {
            *out = p;
            return GAN_OK;
        }
    const char *op = conv_names[kind];
    struct cuda_conv_plan *p = calloc(1, sizeof *p);
    if (!p)
        return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                              "%s: out of host memory for a convolution plan", op);
    p->kind = kind;
    p->c = *c;
    gan_status st = cuda_check_dnn(be, op, cudnnCreateTensorDescriptor(&p->xd));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op, cudnnCreateTensorDescriptor(&p->yd));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op, cudnnCreateFilterDescriptor(&p->wd));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, op, cudnnCreateConvolutionDescriptor(&p->cd));
    if (st == GAN_OK)
        st = plan_setup(be, p, 0);
    if (st != GAN_OK) {
        plan_free(p);
        return st;
    }
    p->next = be->plans;
    be->plans = p;
    *out = p;
    return GAN_OK;
}

/* ---------------------------------------------------------------- running */

/* The workspace the plan's current candidate needs with the math type now set on the
 * descriptor (the heuristics' figure was for the math type they assumed). */
static cudnnStatus_t plan_workspace(gan_backend *be, const struct cuda_conv_plan *p,
                                    size_t *bytes)
{
    int algo = p->algo[p->pick];
    switch (p->kind) {
    case CONV_FORWARD:
        return cudnnGetConvolutionForwardWorkspaceSize(be->dnn, p->xd, p->wd, p->cd, p->yd,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    case CONV_BACKWARD_DATA:
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            be->dnn, p->wd, p->yd, p->cd, p->xd, (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    default:
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            be->dnn, p->xd, p->yd, p->cd, p->wd, (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
    }
}

/* Makes the plan's current candidate usable: its math type set and its workspace
 * within the limit. Moves on to the next candidate when cuDNN refuses one; *usable = 0
 * when none is left. */
static gan_status plan_ready(gan_backend *be, struct cuda_conv_plan *p, int *usable)
{
    const char *op = conv_names[p->kind];
    for (; !p->ready && p->pick < p->count; p->pick++) {
        gan_status st = cuda_check_dnn(be, op,
                                       cudnnSetConvolutionMathType(p->cd, p->math[p->pick]));
        if (st != GAN_OK)
            return st;
        size_t bytes = 0;
        cudnnStatus_t s = plan_workspace(be, p, &bytes);
        if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED)
            continue;
        if ((st = cuda_check_dnn(be, op, s)) != GAN_OK)
            return st;
        if (bytes > be->workspace_limit)
            continue;
        if (bytes > p->memory[p->pick])
            p->memory[p->pick] = bytes;
        p->ready = 1;
        break;
    }
    *usable = p->ready;
    return GAN_OK;
}

/* The three tensors of a call in cuDNN's terms: for the forward pass in1 = x, in2 = w,
 * out = y; backward data: in1 = dy, in2 = w, out = dx; backward filter: in1 = x,
 * in2 = dy, out = dw. */
static cudnnStatus_t plan_run(gan_backend *be, const struct cuda_conv_plan *p,
                              const void *in1, const void *in2, float beta, void *out,
                              void *ws, size_t ws_bytes)
{
    const float alpha = 1.0f;
    int algo = p->algo[p->pick];
    switch (p->kind) {
    case CONV_FORWARD:
        return cudnnConvolutionForward(be->dnn, &alpha, p->xd, in1, p->wd, in2, p->cd,
                                       (cudnnConvolutionFwdAlgo_t)algo, ws, ws_bytes, &beta,
                                       p->yd, out);
    case CONV_BACKWARD_DATA:
        return cudnnConvolutionBackwardData(be->dnn, &alpha, p->wd, in2, p->yd, in1, p->cd,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, ws_bytes,
                                            &beta, p->xd, out);
    default:
        return cudnnConvolutionBackwardFilter(be->dnn, &alpha, p->xd, in1, p->yd, in2, p->cd,
                                              (cudnnConvolutionBwdFilterAlgo_t)algo, ws,
                                              ws_bytes, &beta, p->wd, out);
    }
}

static gan_status conv_call(gan_backend *be, enum conv_kind kind, const struct gan_conv2d *c,
                            const char *n1, const struct gan_ref *r1, const char *n2,
                            const struct gan_ref *r2, float beta, const char *no,
                            const struct gan_ref *ro)
{
    const char *op = conv_names[kind];
    struct gan_conv2d_sizes z;
    gan_status st = check_desc(be, op, c, beta, &z);
    if (st != GAN_OK)
        return st;
    /* Element counts of in1, in2, out for this kind (see plan_run). */
    size_t c1 = kind == CONV_BACKWARD_DATA ? z.y_all : z.x_all;
    size_t c2 = kind == CONV_BACKWARD_FILTER ? z.y_all : z.w_elems;
    size_t co = kind == CONV_FORWARD ? z.y_all : kind == CONV_BACKWARD_DATA ? z.x_all : z.w_elems;
    st = gan_conv2d_check_refs(be->host, op, c->dtype, n1, r1, c1, n2, r2, c2, no, ro, co);
    if (st == GAN_OK)
        st = cuda_enter(be);
    struct cuda_conv_plan *p = NULL;
    if (st == GAN_OK)
        st = plan_get(be, kind, c, &p);
    if (st != GAN_OK)
        return st;

    const void *in1 = cuda_ref_ptr(r1), *in2 = cuda_ref_ptr(r2);
    void *out = cuda_ref_ptr(ro);
    for (;;) {
        int usable = 0;
        if ((st = plan_ready(be, p, &usable)) != GAN_OK)
            return st;
        if (!usable) {
            if (!p->staged && c->dtype != GAN_F32) {
                if ((st = plan_setup(be, p, 1)) != GAN_OK)
                    return st;
                be->host->log(be->host->ctx, GAN_LOG_DEBUG,
                              "%s: cuDNN has no %s algorithm for this shape; computing on "
                              "FP32 copies", op, gan_dtype_name(c->dtype));
                continue;
            }
            return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                                  "%s: cuDNN offers no algorithm for this convolution (n %lld, "
                                  "c_in %lld, %lld×%lld, c_out %lld, kernel %lld×%lld, %s) "
                                  "within the workspace limit of %zu MiB; raise the backend's "
                                  "workspace_mb", op, (long long)c->n, (long long)c->c_in,
                                  (long long)c->h_in, (long long)c->w_in, (long long)c->c_out,
                                  (long long)c->kh, (long long)c->kw, gan_dtype_name(c->dtype),
                                  be->workspace_limit >> 20);
        }
        void *ws = NULL;
        if ((st = cuda_workspace(be, op, p->memory[p->pick], &ws)) != GAN_OK)
            return st;
        const void *a1 = in1, *a2 = in2;
        void *ao = out;
        float *s1 = NULL, *s2 = NULL, *so = NULL;
        if (p->staged) {
            /* FP32 copies of the three tensors in scratch, 256-byte aligned. */
            size_t b1 = (c1 * sizeof(float) + 255) & ~(size_t)255;
            size_t b2 = (c2 * sizeof(float) + 255) & ~(size_t)255;
            unsigned char *area = NULL;
            if ((st = cuda_scratch(be, op, b1 + b2 + co * sizeof(float), (void **)&area)) != GAN_OK)
                return st;
            s1 = (float *)area;
            s2 = (float *)(area + b1);
            so = (float *)(area + b1 + b2);
            st = cuda_convert(be, in1, c->dtype, s1, GAN_F32, c1);
            if (st == GAN_OK)
                st = cuda_convert(be, in2, c->dtype, s2, GAN_F32, c2);
            if (st == GAN_OK && beta != 0.0f)
                st = cuda_convert(be, out, c->dtype, so, GAN_F32, co);
            if (st != GAN_OK)
                return st;
            a1 = s1;
            a2 = s2;
            ao = so;
        }
        cudnnStatus_t s = plan_run(be, p, a1, a2, beta, ao, ws, p->memory[p->pick]);
        if (s == CUDNN_STATUS_SUCCESS) {
            if (p->staged)
                return cuda_convert(be, so, GAN_F32, out, c->dtype, co);
            return GAN_OK;
        }
        if (CUDNN_STATUS_CATEGORY(s) != CUDNN_STATUS_NOT_SUPPORTED)
            return cuda_check_dnn(be, op, s);
        be->host->log(be->host->ctx, GAN_LOG_DEBUG,
                      "%s: cuDNN refused algorithm %d at run time; trying the next", op,
                      p->algo[p->pick]);
        p->pick++;
        p->ready = 0;
    }
}

gan_status cuda_conv2d_forward(gan_backend *be, const struct gan_conv2d *c,
                               const struct gan_ref *x, const struct gan_ref *w,
                               float beta, const struct gan_ref *y)
{
    return conv_call(be, CONV_FORWARD, c, "x", x, "w", w, beta, "y", y);
}

gan_status cuda_conv2d_backward_data(gan_backend *be, const struct gan_conv2d *c,
                                     const struct gan_ref *dy, const struct gan_ref *w,
                                     float beta, const struct gan_ref *dx)
{
    return conv_call(be, CONV_BACKWARD_DATA, c, "dy", dy, "w", w, beta, "dx", dx);
}

gan_status cuda_conv2d_backward_filter(gan_backend *be, const struct gan_conv2d *c,
                                       const struct gan_ref *x, const struct gan_ref *dy,
                                       float beta, const struct gan_ref *dw)
{
    return conv_call(be, CONV_BACKWARD_FILTER, c, "x", x, "dy", dy, beta, "dw", dw);
}
