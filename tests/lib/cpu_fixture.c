/* SPDX-License-Identifier: MIT */
/* cpu_fixture.c — builds CPU backend instances and buffers for kernel tests without
 * going through the module's descriptor, so each kernel file can be tested alone. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fixture.h"
#include "../../backends/cpu/gemm16.h"

struct fixture {
    struct gan_backend be;     /* first, so the backend pointer is the fixture pointer */
    struct test_host th;
};

gan_backend *cpu_fixture_new(const char *const *settings)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    test_host_init(&f->th, settings);
    f->be.host = &f->th.host;
    long long threads = 1;
    f->th.host.get_int(f->th.host.ctx, "threads", &threads);
    if (cpu_isa_setting(&f->th.host, &f->be.isa) != GAN_OK) {
        fprintf(stderr, "cpu_fixture: %s\n", f->th.last_error);
        abort();
    }
    enum cpu_gemm16_path gemm16 = CPU_GEMM16_AUTO;
    if (cpu_gemm16_setting(&f->th.host, &gemm16) != GAN_OK) {
        fprintf(stderr, "cpu_fixture: %s\n", f->th.last_error);
        abort();
    }
    f->be.gemm16_path = gemm16;
    if (cpu_blas_open(&f->be, (int)threads) != GAN_OK) {
        fprintf(stderr, "cpu_fixture: BLAS did not load: %s\n", f->th.last_error);
        abort();
    }
    if (cpu_pool_open(&f->be) != GAN_OK) {
        fprintf(stderr, "cpu_fixture: no worker threads: %s\n", f->th.last_error);
        abort();
    }
    return &f->be;
}

void cpu_fixture_free(gan_backend *be)
{
    if (!be)
        return;
    cpu_pool_close(be);
    cpu_blas_close(&be->blas);
    free(be->scratch);
    free(be->operand_scratch);
    free(be);
}

gan_buffer *cpu_fixture_buffer(gan_backend *be, size_t n, const float *src)
{
    gan_buffer *buf = NULL;
    if (cpu_buffer_alloc(be, n * sizeof(float) + 1, &buf) != GAN_OK)
        abort();
    if (src && n)
        memcpy(buf->data, src, n * sizeof(float));
    return buf;
}

struct gan_ref cpu_fixture_ref(gan_buffer *buf, enum gan_dtype dtype)
{
    struct gan_ref r = { .buf = buf, .offset = 0, .dtype = dtype };
    return r;
}

const char *cpu_fixture_onednn_skip(void)
{
#ifndef GAN_HAVE_ONEDNN
    return "this build has no oneDNN (configure --with-onednn)";
#elif !defined(__x86_64__)
    return "oneDNN is used on x86-64 CPUs only";
#else
    return NULL;
#endif
}
