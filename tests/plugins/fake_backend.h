/* SPDX-License-Identifier: MIT */
/* fake_backend.h — a backend ops table whose kernels do nothing, shared by the loader's
 * test modules; each module copies it and changes what its test is about. */
#ifndef GANCTL_TEST_FAKE_BACKEND_H
#define GANCTL_TEST_FAKE_BACKEND_H

#include <ganctl/ganctl.h>

#define FAKE_UNUSED __attribute__((unused))

/* The instance: the host it was given, for kernels that report through it. */
struct gan_backend {
    const struct gan_host *host;
    char description[256];
};

static FAKE_UNUSED gan_status fake_create(const struct gan_host *host, gan_backend **out)
{
    gan_backend *be = host->alloc(host->ctx, sizeof *be);
    if (!be)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "fake backend: out of memory");
    be->host = host;
    be->description[0] = '\0';
    *out = be;
    return GAN_OK;
}

static FAKE_UNUSED void fake_destroy(gan_backend *be)
{
    be->host->free(be->host->ctx, be);
}

static FAKE_UNUSED const char *fake_describe(gan_backend *be)
{
    return be->description[0] ? be->description : "fake backend";
}

/* Every kernel refuses, naming itself, so a test can tell which slot it reached. */
#define FAKE_REFUSE(slot) \
    return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED, "fake backend: " slot " is not implemented")

static FAKE_UNUSED gan_status fake_buffer_alloc(gan_backend *be, size_t bytes, gan_buffer **out)
{ (void)bytes; (void)out; FAKE_REFUSE("buffer_alloc"); }
static FAKE_UNUSED void fake_buffer_free(gan_backend *be, gan_buffer *buf)
{ (void)be; (void)buf; }
static FAKE_UNUSED gan_status fake_upload(gan_backend *be, gan_buffer *dst, size_t off, const void *src, size_t bytes)
{ (void)dst; (void)off; (void)src; (void)bytes; FAKE_REFUSE("upload"); }
static FAKE_UNUSED gan_status fake_download(gan_backend *be, void *dst, gan_buffer *src, size_t off, size_t bytes)
{ (void)dst; (void)off; (void)src; (void)bytes; FAKE_REFUSE("download"); }
static FAKE_UNUSED gan_status fake_copy(gan_backend *be, gan_buffer *dst, size_t doff, gan_buffer *src, size_t soff, size_t bytes)
{ (void)dst; (void)doff; (void)src; (void)soff; (void)bytes; FAKE_REFUSE("copy"); }
static FAKE_UNUSED gan_status fake_gemm(gan_backend *be, const struct gan_gemm *g)
{ (void)g; FAKE_REFUSE("gemm"); }
static FAKE_UNUSED gan_status fake_unary(gan_backend *be, enum gan_unary_op op, float alpha, const struct gan_shape *shape,
                                         const struct gan_operand *x, const struct gan_operand *y)
{ (void)op; (void)alpha; (void)shape; (void)x; (void)y; FAKE_REFUSE("unary"); }
static FAKE_UNUSED gan_status fake_binary(gan_backend *be, enum gan_binary_op op, const struct gan_shape *shape,
                                          const struct gan_operand *a, const struct gan_operand *b, const struct gan_operand *y)
{ (void)op; (void)shape; (void)a; (void)b; (void)y; FAKE_REFUSE("binary"); }
static FAKE_UNUSED gan_status fake_reduce(gan_backend *be, enum gan_reduce_op op, const struct gan_shape *shape,
                                          const struct gan_operand *x, uint32_t axes, const struct gan_operand *y)
{ (void)op; (void)shape; (void)x; (void)axes; (void)y; FAKE_REFUSE("reduce"); }
static FAKE_UNUSED gan_status fake_conv_fwd(gan_backend *be, const struct gan_conv2d *c, const struct gan_ref *x,
                                            const struct gan_ref *w, float beta, const struct gan_ref *y)
{ (void)c; (void)x; (void)w; (void)beta; (void)y; FAKE_REFUSE("conv2d_forward"); }
static FAKE_UNUSED gan_status fake_conv_bwd_data(gan_backend *be, const struct gan_conv2d *c, const struct gan_ref *dy,
                                                 const struct gan_ref *w, float beta, const struct gan_ref *dx)
{ (void)c; (void)dy; (void)w; (void)beta; (void)dx; FAKE_REFUSE("conv2d_backward_data"); }
static FAKE_UNUSED gan_status fake_conv_bwd_filter(gan_backend *be, const struct gan_conv2d *c, const struct gan_ref *x,
                                                   const struct gan_ref *dy, float beta, const struct gan_ref *dw)
{ (void)c; (void)x; (void)dy; (void)beta; (void)dw; FAKE_REFUSE("conv2d_backward_filter"); }
static FAKE_UNUSED gan_status fake_cast(gan_backend *be, size_t n, const struct gan_ref *x, const struct gan_ref *y,
                                        struct gan_cast_counts *counts)
{ (void)n; (void)x; (void)y; (void)counts; FAKE_REFUSE("cast"); }
static FAKE_UNUSED gan_status fake_rng_bits(gan_backend *be, size_t n, uint64_t seed, uint64_t offset, const struct gan_ref *y)
{ (void)n; (void)seed; (void)offset; (void)y; FAKE_REFUSE("rng_bits"); }
static FAKE_UNUSED gan_status fake_rng_uniform(gan_backend *be, size_t n, uint64_t seed, uint64_t offset, float lo,
                                               float hi, const struct gan_ref *y)
{ (void)n; (void)seed; (void)offset; (void)lo; (void)hi; (void)y; FAKE_REFUSE("rng_uniform"); }
static FAKE_UNUSED gan_status fake_rng_normal(gan_backend *be, size_t n, uint64_t seed, uint64_t offset, float mean,
                                              float std, const struct gan_ref *y)
{ (void)n; (void)seed; (void)offset; (void)mean; (void)std; (void)y; FAKE_REFUSE("rng_normal"); }
static FAKE_UNUSED gan_status fake_adam(gan_backend *be, const struct gan_adam *p, size_t n, const struct gan_ref *param,
                                        const struct gan_ref *grad, const struct gan_ref *m, const struct gan_ref *v,
                                        const struct gan_ref *param_copy)
{ (void)p; (void)n; (void)param; (void)grad; (void)m; (void)v; (void)param_copy; FAKE_REFUSE("adam"); }
static FAKE_UNUSED gan_status fake_grad_stats(gan_backend *be, size_t n, const struct gan_ref *x, float inv_scale,
                                              const struct gan_ref *unscaled, struct gan_grad_stats *stats)
{ (void)n; (void)x; (void)inv_scale; (void)unscaled; (void)stats; FAKE_REFUSE("grad_stats"); }

/* A full table: every required slot filled with the fakes above except `create` and
 * `gemm`, which each module chooses (gemm may be NULL to leave the slot empty), and
 * `synchronize` (NULL: a synchronous backend). `size` is the table's struct_size. */
#define FAKE_BACKEND_OPS(size, create_fn, gemm_fn, synchronize_fn) { \
    .struct_size = (size), \
    .create = (create_fn), .destroy = fake_destroy, .describe = fake_describe, \
    .buffer_alloc = fake_buffer_alloc, .buffer_free = fake_buffer_free, \
    .upload = fake_upload, .download = fake_download, .copy = fake_copy, \
    .gemm = (gemm_fn), .unary = fake_unary, .binary = fake_binary, .reduce = fake_reduce, \
    .conv2d_forward = fake_conv_fwd, .conv2d_backward_data = fake_conv_bwd_data, \
    .conv2d_backward_filter = fake_conv_bwd_filter, .cast = fake_cast, \
    .rng_bits = fake_rng_bits, .rng_uniform = fake_rng_uniform, .rng_normal = fake_rng_normal, \
    .adam = fake_adam, .grad_stats = fake_grad_stats, .synchronize = (synchronize_fn) }

#endif
