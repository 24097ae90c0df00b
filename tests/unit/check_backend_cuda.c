/* SPDX-License-Identifier: MIT */
/* check_backend_cuda.c — backend-cuda.so against backend-cpu.so: every kernel run on both
 * modules from the same inputs, compared within each kernel's stated tolerance; SKIP (77) without a GPU. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ganctl/ganctl.h>
#include "../lib/test_host.h"
#include "../../backends/common/elementwise_ops.h"

/* How this runs. main() first forks a child that loads backend-cuda.so and creates an
 * instance: "no CUDA device" there makes the whole program exit 77 (automake's SKIP);
 * a module that does not load or fails otherwise is a failure. Then the suite runs in
 * Check's fork mode, and each test's fixture loads both modules and creates both
 * backends inside the forked child: CUDA is never initialised in the parent.
 *
 * Tolerances, per kernel (u = 2^-24, the unit roundoff of FP32):
 *   exact (identical bits; a NaN only has to be a NaN):
 *     element-wise ops that IEEE 754 rounds exactly (copy and strided casts, neg, scale,
 *     add-scalar, relu, leaky-relu, step, square, sqrt, rsqrt, reciprocal, abs, sign,
 *     fill, and every binary op; ±0 from max/min compare equal), casts and their counts,
 *     RNG bits and uniforms, Adam (param, m, v and the 16-bit copy), the fused unscale,
 *     the counts, absmax and min |u| of the gradient statistics, max/min/abs-max
 *     reductions (where ±0 also compare equal: a tie's winner depends on the order);
 *   tanh, sigmoid, exp, log: 4 ulp of FP32 (CUDA's are within 2 ulp, glibc's within 1),
 *     or 1 ulp of a 16-bit output;
 *   RNG normals: 1 ulp of the output type (CUDA's double log/sin/cos are within 2 ulp of
 *     double), and at least 99% identical;
 *   sum, mean, sum of squares: (count + 2)·2u·Σ|term| + 1 ulp of the output type: both
 *     sums are within count·u·Σ|term| of the exact one, whatever their order;
 *   GEMM: (k + 2)·2u·S (FP32 inputs) or (k + 2)·4u·S (16-bit inputs, tensor cores), with
 *     S = |alpha|·Σ|a||b| + |beta·c|, plus 1 ulp of a 16-bit C;
 *   conv2d: (K + 2)·16u·S + 2 ulp of a 16-bit output, K the products per output and S
 *     their Σ|·|: cuDNN may choose Winograd or FFT algorithms, whose rounding is larger
 *     than a dot product's;
 *   FP32 GEMM and conv2d, in addition: the root mean square of |cuda − exact| / S below
 *     2^-18, which FP32 arithmetic meets and TF32 products do not;
 *   gradient statistics' Σu²: (n + 2)·2^-52 relative (a double sum in another order).
 * The bounds are computed per element from the actual inputs, in double, by naive loops
 * in this file. */

/* ---------------------------------------------------------------- modules */

enum { CPU = 0, GPU = 1 };
static const char *const side_name[2] = { "cpu", "cuda" };

struct module {
    void *handle;
    const struct gan_plugin *plugin;
    const struct gan_backend_ops *ops;
};

/* Where a module comes from: each folder of $GANCTL_PLUGIN_PATH, then the build
 * tree's folder. $GANCTL_TEST_CUDA_MODULE names a file to use instead of
 * backend-cuda.so: set to backend-cpu.so it checks this suite itself on a machine
 * without a GPU (every comparison must then pass). */
static void *open_module(const char *file, const char *build_dir, char *why, size_t size)
{
    char path[4096];
    why[0] = '\0';
    const char *list = getenv("GANCTL_PLUGIN_PATH");
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":");
        if (len > 0 && len < 3000) {
            snprintf(path, sizeof path, "%.*s/%s", (int)len, p, file);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h)
                return h;
            snprintf(why + strlen(why), size - strlen(why), "[%s] ", dlerror());
        }
        p += len;
        if (*p == ':')
            p++;
    }
    snprintf(path, sizeof path, "%s/%s", build_dir, file);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        snprintf(why + strlen(why), size - strlen(why), "[%s]", dlerror());
    return h;
}

/* Loads a module and reads its descriptor; on failure returns 0 with the reason. */
static int load_module(int side, struct module *m, char *why, size_t size)
{
    memset(m, 0, sizeof *m);
    const char *subst = getenv("GANCTL_TEST_CUDA_MODULE");
    if (side == GPU && subst && *subst) {
        m->handle = dlopen(subst, RTLD_NOW | RTLD_LOCAL);
        if (!m->handle)
            snprintf(why, size, "%s", dlerror());
    } else if (side == GPU) {
        m->handle = open_module("backend-cuda.so", GAN_TEST_CUDA_DIR, why, size);
    } else {
        m->handle = open_module("backend-cpu.so", GAN_TEST_CPU_DIR, why, size);
    }
    if (!m->handle)
        return 0;
    void *sym = dlsym(m->handle, GAN_PLUGIN_SYMBOL);
    if (!sym) {
        snprintf(why, size, "no %s in the module", GAN_PLUGIN_SYMBOL);
        return 0;
    }
    gan_plugin_descriptor_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    m->plugin = fn();
    if (!m->plugin || m->plugin->abi_major != GAN_ABI_MAJOR ||
        m->plugin->kind != GAN_PLUGIN_BACKEND || !m->plugin->ops) {
        snprintf(why, size, "its descriptor is not a backend of ABI %d", GAN_ABI_MAJOR);
        return 0;
    }
    m->ops = m->plugin->ops;
    return 1;
}

/* Whether the "cuda" side really is the CUDA module (and not a substitute). */
static int real_cuda(const struct module *m)
{
    return strcmp(m->plugin->name, "cuda") == 0;
}

/* ---------------------------------------------------------------- fixture */

static struct module mod[2];
static struct test_host th[2];
static gan_backend *be[2];
static const struct gan_backend_ops *ops[2];
static const char *const settings[2][4] = {
    { "threads=1", NULL },
    { "device=0", "workspace_mb=512", "deterministic=true", NULL },
};

static void setup(void)
{
    for (int s = 0; s < 2; s++) {
        char why[2048];
        ck_assert_msg(load_module(s, &mod[s], why, sizeof why), "the %s module did not load: %s",
                      side_name[s], why);
        ops[s] = mod[s].ops;
        test_host_init(&th[s], real_cuda(&mod[s]) || s == CPU ? settings[s] : settings[CPU]);
        gan_status st = ops[s]->create(&th[s].host, &be[s]);
        ck_assert_msg(st == GAN_OK && be[s], "the %s backend was not created: %s",
                      side_name[s], th[s].last_error);
    }
}

static void teardown(void)
{
    for (int s = 1; s >= 0; s--) {
        if (be[s])
            ops[s]->destroy(be[s]);
        be[s] = NULL;
        if (mod[s].handle)
            dlclose(mod[s].handle);
        memset(&mod[s], 0, sizeof mod[s]);
    }
}

/* Fails the test with the backend's message when a call did not succeed. */
static void ok(int s, gan_status st, const char *what)
{
    ck_assert_msg(st == GAN_OK, "%s on %s failed (%d): %s", what, side_name[s], (int)st,
                  th[s].last_error);
}

/* ---------------------------------------------------------------- inputs */

static uint64_t rng_state;

static void seed(uint64_t s)
{
    rng_state = s * 0x9E3779B97F4A7C15ull + 1;
}

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((next_u64() >> 40) * 0x1p-24);
}

/* A value from a pool that reaches every corner: mostly ordinary numbers of either
 * sign over many magnitudes, and with `specials` percent probability a zero of either
 * sign, an infinity, a NaN, an FP32 subnormal or a value near FP16's limits. */
static float pick(int specials)
{
    static const float corner[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 65504.0f, 65519.0f,
        65520.0f, -70000.0f, 0x1p-24f, 0x1p-25f, 3e-8f, -6e-5f, 1.0f, -1.0f, 0.5f
    };
    if ((int)(next_u64() % 100) < specials)
        return corner[next_u64() % (sizeof corner / sizeof corner[0])];
    float mag = (float)ldexp(1.0 + (double)uniform(0.0f, 1.0f), (int)(next_u64() % 24) - 12);
    return (next_u64() & 1) ? -mag : mag;
}

/* ---------------------------------------------------------------- 16-bit formats */

/* Written from the formats' definitions, for reading results and bounds. */
static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double mag = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -mag : mag;
}

static double bf16_value(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static size_t dsize(enum gan_dtype t)
{
    return gan_dtype_size(t);
}

static int is_float(enum gan_dtype t)
{
    return t == GAN_F32 || t == GAN_F16 || t == GAN_BF16;
}

static uint32_t bits_at(const void *p, enum gan_dtype t, size_t i)
{
    if (dsize(t) == 2)
        return ((const uint16_t *)p)[i];
    return ((const uint32_t *)p)[i];
}

static double value_at(const void *p, enum gan_dtype t, size_t i)
{
    switch (t) {
    case GAN_F16: return f16_value(((const uint16_t *)p)[i]);
    case GAN_BF16: return bf16_value(((const uint16_t *)p)[i]);
    case GAN_I32: return ((const int32_t *)p)[i];
    case GAN_U32: return ((const uint32_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}

/* The spacing of `t`'s values at magnitude |v| (the ulp), down to its subnormals. */
static double ulp_of(enum gan_dtype t, double v)
{
    int mant = t == GAN_F16 ? 10 : t == GAN_BF16 ? 7 : 23;
    int emin = t == GAN_F16 ? -14 : -126;
    double a = fabs(v);
    if (!(a > 0) || isinf(a))
        return ldexp(1.0, emin - mant);
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    e -= 1;
    if (e < emin)
        e = emin;
    return ldexp(1.0, e - mant);
}

/* ---------------------------------------------------------------- twin buffers */

/* One tensor on both backends: the same bytes uploaded to each. */
struct twin {
    size_t n;
    enum gan_dtype dt;
    gan_buffer *b[2];
};

/* n elements of dt holding `bytes` (n·size of them), or, when bytes is NULL, a pattern
 * (all bits set: NaN in every float type) that shows any element a kernel should not
 * have written. */
static struct twin twin_new(size_t n, enum gan_dtype dt, const void *bytes)
{
    struct twin t = { n, dt, { NULL, NULL } };
    size_t size = n * dsize(dt);
    unsigned char *fill = NULL;
    if (!bytes) {
        fill = malloc(size ? size : 1);
        ck_assert_ptr_nonnull(fill);
        memset(fill, 0xff, size);
        bytes = fill;
    }
    for (int s = 0; s < 2; s++) {
        ok(s, ops[s]->buffer_alloc(be[s], size, &t.b[s]), "buffer_alloc");
        ok(s, ops[s]->upload(be[s], t.b[s], 0, bytes, size), "upload");
    }
    free(fill);
    return t;
}

static void twin_free(struct twin *t)
{
    for (int s = 0; s < 2; s++)
        ops[s]->buffer_free(be[s], t->b[s]);
    memset(t, 0, sizeof *t);
}

/* Both copies, downloaded into malloc'd arrays the caller frees. */
static void twin_read(const struct twin *t, void **cpu, void **gpu)
{
    size_t size = t->n * dsize(t->dt);
    void *out[2];
    for (int s = 0; s < 2; s++) {
        out[s] = malloc(size ? size : 1);
        ck_assert_ptr_nonnull(out[s]);
        ok(s, ops[s]->download(be[s], out[s], t->b[s], 0, size), "download");
    }
    *cpu = out[0];
    *gpu = out[1];
}

static struct gan_ref twin_ref(const struct twin *t, int s, size_t offset)
{
    struct gan_ref r = { t->b[s], offset, t->dt };
    return r;
}

/* n floats as values of dt, rounded to nearest even by the CPU backend's own cast (its
 * correctness is check_cast's business; here only both backends need the same
 * input). Returns malloc'd bytes. */
static void *typed(const float *v, size_t n, enum gan_dtype dt)
{
    void *out = malloc(n * dsize(dt) + 4);
    ck_assert_ptr_nonnull(out);
    if (dt == GAN_F32) {
        memcpy(out, v, n * sizeof *v);
        return out;
    }
    gan_buffer *x = NULL, *y = NULL;
    ok(CPU, ops[CPU]->buffer_alloc(be[CPU], n * 4, &x), "buffer_alloc");
    ok(CPU, ops[CPU]->buffer_alloc(be[CPU], n * dsize(dt), &y), "buffer_alloc");
    ok(CPU, ops[CPU]->upload(be[CPU], x, 0, v, n * 4), "upload");
    struct gan_ref rx = { x, 0, GAN_F32 }, ry = { y, 0, dt };
    ok(CPU, ops[CPU]->cast(be[CPU], n, &rx, &ry, NULL), "cast");
    ok(CPU, ops[CPU]->download(be[CPU], out, y, 0, n * dsize(dt)), "download");
    ops[CPU]->buffer_free(be[CPU], x);
    ops[CPU]->buffer_free(be[CPU], y);
    return out;
}

/* A twin of n elements of dt from the floats v. */
static struct twin twin_from(const float *v, size_t n, enum gan_dtype dt)
{
    void *bytes = typed(v, n, dt);
    struct twin t = twin_new(n, dt, bytes);
    free(bytes);
    return t;
}

/* ---------------------------------------------------------------- comparing */

/* Element i of both results agrees exactly: the same bits, or both NaN; with
 * `zero_sign_free`, +0 and −0 are also taken as equal. */
static int same(const void *c, const void *g, enum gan_dtype t, size_t i, int zero_sign_free)
{
    uint32_t bc = bits_at(c, t, i), bg = bits_at(g, t, i);
    if (bc == bg)
        return 1;
    if (!is_float(t))
        return 0;
    double vc = value_at(c, t, i), vg = value_at(g, t, i);
    if (isnan(vc) && isnan(vg))
        return 1;
    return zero_sign_free && vc == 0 && vg == 0;
}

static void assert_exact(const void *c, const void *g, enum gan_dtype t, size_t n,
                         int zero_sign_free, const char *what)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(same(c, g, t, i, zero_sign_free),
                      "%s: element %zu of %zu differs: cpu %.9g (0x%x), cuda %.9g (0x%x)", what,
                      i, n, value_at(c, t, i), (unsigned)bits_at(c, t, i), value_at(g, t, i),
                      (unsigned)bits_at(g, t, i));
}

/* |cpu − cuda| ≤ tol[i] (or tol[0] for every element when `one_tol`); infinities and
 * NaNs must match exactly. */
static void assert_close(const void *c, const void *g, enum gan_dtype t, size_t n,
                         const double *tol, int one_tol, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double vc = value_at(c, t, i), vg = value_at(g, t, i), tl = tol[one_tol ? 0 : i];
        if (isnan(vc) || isnan(vg) || isinf(vc) || isinf(vg)) {
            ck_assert_msg(same(c, g, t, i, 0) || (vc == vg),
                          "%s: element %zu: cpu %.9g, cuda %.9g", what, i, vc, vg);
            continue;
        }
        ck_assert_msg(fabs(vc - vg) <= tl,
                      "%s: element %zu of %zu: cpu %.9g, cuda %.9g, difference %.3g > "
                      "tolerance %.3g", what, i, n, vc, vg, fabs(vc - vg), tl);
    }
}

/* FP32 stays FP32: the root mean square of |cuda − exact| / Σ|products| over the
 * outputs must be below 2^-18. Any order of FP32 sums (and cuDNN's FFT or Winograd
 * algorithms) stays near 2^-21; TF32 inputs (10-bit mantissas, which GPUs use for FP32
 * products when a library allows it) give 2^-16 or more. */
static void assert_fp32_precision(const void *g, const double *exact, const double *sum,
                                  size_t n, const char *what)
{
    double acc = 0;
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        if (sum[i] > 0) {
            double r = (value_at(g, GAN_F32, i) - exact[i]) / sum[i];
            acc += r * r;
            used++;
        }
    double rms = used ? sqrt(acc / (double)used) : 0;
    ck_assert_msg(rms <= 0x1p-18, "%s: relative error %.3g (rms over %zu outputs) is more "
                  "than FP32 arithmetic gives: reduced-precision (TF32) products?", what, rms,
                  used);
}

/* ---------------------------------------------------------------- the module */

/* Loaded as the host loads it: one exported symbol, a complete table, its settings. */
START_TEST(test_descriptor)
{
    struct module m;
    char why[2048];
    ck_assert_msg(load_module(GPU, &m, why, sizeof why), "backend-cuda.so did not load: %s",
                  why);
    if (real_cuda(&m)) {
        const struct gan_plugin *p = m.plugin;
        ck_assert_uint_eq(p->abi_minor <= GAN_ABI_MINOR, 1);
        ck_assert_uint_eq(p->struct_size, sizeof(struct gan_plugin));
        ck_assert_str_eq(p->version, PACKAGE_VERSION);
        ck_assert_ptr_nonnull(p->summary);
        ck_assert_ptr_null(strchr(p->summary, '\n'));
        for (size_t i = 0; i < sizeof p->reserved / sizeof p->reserved[0]; i++)
            ck_assert_ptr_null(p->reserved[i]);
        static const struct { const char *name; enum gan_setting_type type; const char *def; }
            want[] = { { "device", GAN_SETTING_INT, "0" },
                       { "workspace_mb", GAN_SETTING_INT, "512" },
                       { "deterministic", GAN_SETTING_BOOL, "true" } };
        for (size_t i = 0; i < 3; i++) {
            ck_assert_str_eq(p->settings[i].name, want[i].name);
            ck_assert_int_eq(p->settings[i].type, want[i].type);
            ck_assert_str_eq(p->settings[i].default_value, want[i].def);
            ck_assert_ptr_nonnull(p->settings[i].summary);
        }
        ck_assert_ptr_null(p->settings[3].name);

        const struct gan_backend_ops *o = m.ops;
        ck_assert_uint_eq(o->struct_size, sizeof(struct gan_backend_ops));
        const void *slots[] = {
            (const void *)o->create, (const void *)o->destroy, (const void *)o->describe,
            (const void *)o->buffer_alloc, (const void *)o->buffer_free,
            (const void *)o->upload, (const void *)o->download, (const void *)o->copy,
            (const void *)o->gemm, (const void *)o->unary, (const void *)o->binary,
            (const void *)o->reduce, (const void *)o->conv2d_forward,
            (const void *)o->conv2d_backward_data, (const void *)o->conv2d_backward_filter,
            (const void *)o->cast, (const void *)o->rng_bits, (const void *)o->rng_uniform,
            (const void *)o->rng_normal, (const void *)o->adam, (const void *)o->grad_stats,
            (const void *)o->synchronize,
        };
        for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
            ck_assert_msg(slots[i] != NULL, "slot %zu of the CUDA backend's table is NULL", i);
        static const char *const hidden[] = { "cuda_gemm", "cuda_unary", "cuda_cast",
                                              "cuda_kernels_probe", "cuda_check_rt" };
        for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
            ck_assert_msg(dlsym(m.handle, hidden[i]) == NULL, "%s is exported", hidden[i]);
    }
    dlclose(m.handle);
}
END_TEST

/* Settings are checked before the device is touched; describe() says what runs. */
START_TEST(test_create_settings)
{
    struct module m;
    char why[2048];
    ck_assert_msg(load_module(GPU, &m, why, sizeof why), "backend-cuda.so did not load: %s",
                  why);
    if (real_cuda(&m)) {
        static const char *const bad[][2] = {
            { "device=100000", NULL }, { "device=-1", NULL }, { "device=zero", NULL },
            { "workspace_mb=-5", NULL }, { "deterministic=maybe", NULL },
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            struct test_host h;
            test_host_init(&h, bad[i]);
            gan_backend *b = NULL;
            gan_status st = m.ops->create(&h.host, &b);
            ck_assert_msg(st == GAN_ERR_CONFIG && b == NULL,
                          "create with %s gave %d (%s), not GAN_ERR_CONFIG", bad[i][0], (int)st,
                          h.last_error);
            ck_assert_msg(strstr(h.last_error, "device") || strstr(h.last_error, "workspace") ||
                          strstr(h.last_error, "deterministic"),
                          "the message for %s does not name the setting: %s", bad[i][0],
                          h.last_error);
        }
        /* No settings at all: a host that fills in no defaults. */
        struct test_host h;
        test_host_init(&h, NULL);
        gan_backend *b = NULL;
        gan_status st = m.ops->create(&h.host, &b);
        ck_assert_msg(st == GAN_OK && b, "create with defaults failed: %s", h.last_error);
        const char *d = m.ops->describe(b);
        ck_assert_msg(strncmp(d, "cuda: device 0, ", 16) == 0 && strstr(d, "cuBLAS") &&
                      strstr(d, "cuDNN") && !strchr(d, '\n'), "describe() says \"%s\"", d);
        ck_assert_int_eq(m.ops->synchronize(b), GAN_OK);
        m.ops->destroy(b);
    }
    dlclose(m.handle);
}
END_TEST

/* ---------------------------------------------------------------- memory */

START_TEST(test_memory)
{
    enum { N = 4096 };
    unsigned char *src = malloc(N), *want = malloc(N), *got = malloc(N);
    ck_assert(src && want && got);
    seed(1);
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)next_u64();
    for (int s = 0; s < 2; s++) {
        gan_buffer *a = NULL, *b = NULL, *empty = NULL;
        ok(s, ops[s]->buffer_alloc(be[s], N, &a), "buffer_alloc");
        ok(s, ops[s]->buffer_alloc(be[s], N, &b), "buffer_alloc");
        ok(s, ops[s]->buffer_alloc(be[s], 0, &empty), "buffer_alloc(0)");
        /* whole, then a part at an odd offset */
        ok(s, ops[s]->upload(be[s], a, 0, src, N), "upload");
        ok(s, ops[s]->upload(be[s], a, 17, src + 1000, 333), "upload at 17");
        memcpy(want, src, N);
        memcpy(want + 17, src + 1000, 333);
        ok(s, ops[s]->download(be[s], got, a, 0, N), "download");
        ck_assert_msg(memcmp(got, want, N) == 0, "%s: upload/download round trip",
                      side_name[s]);
        ok(s, ops[s]->download(be[s], got, a, 101, 7), "download at 101");
        ck_assert_msg(memcmp(got, want + 101, 7) == 0, "%s: download at an offset",
                      side_name[s]);
        /* between buffers, then overlapping ranges of one buffer both ways (memmove) */
        ok(s, ops[s]->upload(be[s], b, 0, src, N), "upload");
        ok(s, ops[s]->copy(be[s], b, 5, a, 1, 2000), "copy");
        memcpy(got, src, N);
        memcpy(got + 5, want + 1, 2000);
        memcpy(want, got, N);
        ok(s, ops[s]->copy(be[s], b, 100, b, 40, 1500), "overlapping copy up");
        memmove(want + 100, want + 40, 1500);
        ok(s, ops[s]->copy(be[s], b, 41, b, 700, 3000), "overlapping copy down");
        memmove(want + 41, want + 700, 3000);
        ok(s, ops[s]->copy(be[s], b, 9, b, 9, 100), "copy onto itself");
        ok(s, ops[s]->download(be[s], got, b, 0, N), "download");
        ck_assert_msg(memcmp(got, want, N) == 0, "%s: copies", side_name[s]);
        /* nothing to move is fine, even at the end; past the end is not */
        ok(s, ops[s]->upload(be[s], a, N, NULL, 0), "upload of 0 bytes");
        ok(s, ops[s]->copy(be[s], empty, 0, a, N, 0), "copy of 0 bytes");
        ck_assert_int_eq(ops[s]->upload(be[s], a, N - 3, src, 4), GAN_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(th[s].last_error, "past its end"));
        ck_assert_int_eq(ops[s]->download(be[s], got, a, 1, N), GAN_ERR_INVALID);
        ck_assert_int_eq(ops[s]->copy(be[s], a, 0, empty, 0, 1), GAN_ERR_INVALID);
        ck_assert_int_eq(ops[s]->download(be[s], NULL, a, 0, 4), GAN_ERR_INVALID);
        ck_assert_int_eq(ops[s]->upload(be[s], NULL, 0, src, 4), GAN_ERR_INVALID);
        if (ops[s]->synchronize)
            ok(s, ops[s]->synchronize(be[s]), "synchronize");
        ops[s]->buffer_free(be[s], a);
        ops[s]->buffer_free(be[s], b);
        ops[s]->buffer_free(be[s], empty);
        ops[s]->buffer_free(be[s], NULL);
    }
    free(src);
    free(want);
    free(got);
}
END_TEST

/* ---------------------------------------------------------------- GEMM */

static const struct {
    enum gan_dtype a, b, c;
} gemm_types[] = {
    { GAN_F32, GAN_F32, GAN_F32 },  { GAN_F16, GAN_F16, GAN_F32 },
    { GAN_F16, GAN_F16, GAN_F16 },  { GAN_BF16, GAN_BF16, GAN_BF16 },
    { GAN_BF16, GAN_BF16, GAN_F32 }, { GAN_F32, GAN_F16, GAN_F16 }, /* mixed: staged */
    { GAN_F16, GAN_F32, GAN_BF16 },
};

/* Elements a stored operand spans: `batch` matrices `stride` apart, rows `ld` apart. */
static size_t span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride)
{
    return (size_t)((batch - 1) * stride + (rows - 1) * ld + cols);
}

/* Random values in [-1, 1) for n elements. */
static float *random_floats(size_t n, float lo, float hi)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++)
        v[i] = uniform(lo, hi);
    return v;
}

/* Runs one GEMM on both backends and compares the whole C buffer: inside the
 * matrices within the stated tolerance, elsewhere unchanged. */
static void gemm_case(enum gan_dtype ta_t, enum gan_dtype tb_t, enum gan_dtype tc_t, int64_t m,
                      int64_t n, int64_t k, int trans_a, int trans_b, int64_t batch,
                      int shared_a, int64_t pad, float alpha, float beta)
{
    int64_t ar = trans_a ? k : m, ac = trans_a ? m : k;
    int64_t br = trans_b ? n : k, bc = trans_b ? k : n;
    int64_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
    int64_t sa = shared_a ? 0 : ar * lda + 5, sb = br * ldb + 3, sc = m * ldc + 2;
    size_t na = span(ar, ac, lda, batch, sa), nb = span(br, bc, ldb, batch, sb);
    size_t nc = span(m, n, ldc, batch, sc);
    float *va = random_floats(na, -1, 1), *vb = random_floats(nb, -1, 1);
    float *vc = random_floats(nc, -1, 1);
    void *ha = typed(va, na, ta_t), *hb = typed(vb, nb, tb_t), *hc = typed(vc, nc, tc_t);
    struct twin A = twin_new(na, ta_t, ha), B = twin_new(nb, tb_t, hb), C = twin_new(nc, tc_t, hc);
    for (int s = 0; s < 2; s++) {
        struct gan_gemm g = {
            .trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
            .alpha = alpha, .beta = beta, .a = twin_ref(&A, s, 0), .b = twin_ref(&B, s, 0),
            .c = twin_ref(&C, s, 0), .lda = lda, .ldb = ldb, .ldc = ldc, .batch = batch,
            .stride_a = sa, .stride_b = sb, .stride_c = sc,
        };
        ok(s, ops[s]->gemm(be[s], &g), "gemm");
    }
    double *tol = calloc(nc, sizeof *tol); /* 0 outside the matrices: unchanged */
    double *ex = calloc(nc, sizeof *ex), *sm = calloc(nc, sizeof *sm);
    ck_assert(tol && ex && sm);
    const double f = ta_t == GAN_F32 && tb_t == GAN_F32 ? 0x1p-23 : 0x1p-22;
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double r = 0, sum = 0;
                for (int64_t p = 0; p < k; p++) {
                    size_t ia = (size_t)(q * sa + (trans_a ? p * lda + i : i * lda + p));
                    size_t ib = (size_t)(q * sb + (trans_b ? j * ldb + p : p * ldb + j));
                    double prod = value_at(ha, ta_t, ia) * value_at(hb, tb_t, ib);
                    r += prod;
                    sum += fabs(prod);
                }
                size_t ic = (size_t)(q * sc + i * ldc + j);
                double old = value_at(hc, tc_t, ic);
                double exact = alpha * r + (beta != 0 ? beta * old : 0.0);
                double bound = (double)(k + 2) * f * (fabs(alpha) * sum + fabs(beta * old));
                tol[ic] = bound + (tc_t == GAN_F32 ? 0.0 : ulp_of(tc_t, fabs(exact) + bound));
                ex[ic] = exact;
                sm[ic] = fabs(alpha) * sum + fabs(beta * old);
            }
    void *rc, *rg;
    twin_read(&C, &rc, &rg);
    char what[160];
    snprintf(what, sizeof what, "gemm %s·%s→%s m=%lld n=%lld k=%lld trans %d%d batch %lld%s "
             "alpha %g beta %g", gan_dtype_name(ta_t), gan_dtype_name(tb_t),
             gan_dtype_name(tc_t), (long long)m, (long long)n, (long long)k, trans_a, trans_b,
             (long long)batch, shared_a ? " (shared A)" : "", (double)alpha, (double)beta);
    assert_close(rc, rg, tc_t, nc, tol, 0, what);
    if (ta_t == GAN_F32 && tb_t == GAN_F32 && tc_t == GAN_F32)
        assert_fp32_precision(rg, ex, sm, nc, what);
    free(rc);
    free(rg);
    free(tol);
    free(ex);
    free(sm);
    twin_free(&A);
    twin_free(&B);
    twin_free(&C);
    free(va);
    free(vb);
    free(vc);
    free(ha);
    free(hb);
    free(hc);
}

/* Every transpose combination over a range of shapes, batched (with a shared A) and
 * not, with padded rows, for one combination of operand types. */
START_TEST(test_gemm_types)
{
    static const int64_t shapes[][3] = { { 1, 1, 1 }, { 5, 7, 3 }, { 33, 17, 65 },
                                         { 64, 48, 80 } };
    static const float ab[][2] = { { 1.0f, 0.0f }, { 0.5f, 1.0f }, { -2.0f, 0.25f } };
    seed(100 + (uint64_t)_i);
    for (int v = 0; v < 16; v++) {
        const int64_t *sh = shapes[v / 4];
        int ta = (v >> 1) & 1, tb = v & 1;
        int64_t batch = v % 3 == 2 ? 3 : 1;
        gemm_case(gemm_types[_i].a, gemm_types[_i].b, gemm_types[_i].c, sh[0], sh[1], sh[2],
                  ta, tb, batch, batch > 1 && (v & 1), v % 2 ? 3 : 0, ab[v % 3][0],
                  ab[v % 3][1]);
    }
}
END_TEST

/* beta = 0 does not read C; alpha = 0 and k = 0 do not read A or B; bad arguments are
 * refused before anything runs. */
START_TEST(test_gemm_edges)
{
    enum { M = 6, N = 5, K = 4 };
    float a[M * K], b[K * N], c[M * N];
    seed(7);
    for (int i = 0; i < M * K; i++)
        a[i] = uniform(-1, 1);
    for (int i = 0; i < K * N; i++)
        b[i] = uniform(-1, 1);
    for (int i = 0; i < M * N; i++)
        c[i] = NAN;
    struct twin A = twin_from(a, M * K, GAN_F32), B = twin_from(b, K * N, GAN_F32);
    struct twin C = twin_from(c, M * N, GAN_F32);
    void *rc, *rg;
    for (int s = 0; s < 2; s++) {
        struct gan_gemm g = { .m = M, .n = N, .k = K, .alpha = 1, .beta = 0,
                              .a = twin_ref(&A, s, 0), .b = twin_ref(&B, s, 0),
                              .c = twin_ref(&C, s, 0), .lda = K, .ldb = N, .ldc = N,
                              .batch = 1 };
        ok(s, ops[s]->gemm(be[s], &g), "gemm with beta 0 over NaN");
    }
    twin_read(&C, &rc, &rg);
    for (int i = 0; i < M * N; i++)
        ck_assert_msg(isfinite(((float *)rg)[i]), "beta = 0 read C: element %d is %g", i,
                      (double)((float *)rg)[i]);
    double tol = (K + 2) * 0x1p-23 * K;
    assert_close(rc, rg, GAN_F32, M * N, &tol, 1, "gemm beta 0 over NaN");
    free(rc);
    free(rg);

    /* A full of NaN, alpha 0: C = 0.5·C exactly (from the same C on both); then k = 0
     * with beta 0: zeros. */
    for (int i = 0; i < M * K; i++)
        a[i] = NAN;
    for (int i = 0; i < M * N; i++)
        c[i] = uniform(-1, 1);
    for (int s = 0; s < 2; s++) {
        ok(s, ops[s]->upload(be[s], A.b[s], 0, a, sizeof a), "upload");
        ok(s, ops[s]->upload(be[s], C.b[s], 0, c, sizeof c), "upload");
        struct gan_gemm g = { .m = M, .n = N, .k = K, .alpha = 0, .beta = 0.5f,
                              .a = twin_ref(&A, s, 0), .b = twin_ref(&B, s, 0),
                              .c = twin_ref(&C, s, 0), .lda = K, .ldb = N, .ldc = N,
                              .batch = 1 };
        ok(s, ops[s]->gemm(be[s], &g), "gemm with alpha 0");
    }
    twin_read(&C, &rc, &rg);
    assert_exact(rc, rg, GAN_F32, M * N, 0, "gemm alpha 0");
    for (int i = 0; i < M * N; i++)
        ck_assert(isfinite(((float *)rg)[i]));
    free(rc);
    free(rg);
    for (int s = 0; s < 2; s++) {
        struct gan_gemm g = { .m = M, .n = N, .k = 0, .alpha = 1, .beta = 0,
                              .a = twin_ref(&A, s, 0), .b = twin_ref(&B, s, 0),
                              .c = twin_ref(&C, s, 0), .lda = 1, .ldb = N, .ldc = N,
                              .batch = 1 };
        ok(s, ops[s]->gemm(be[s], &g), "gemm with k 0");
        g.m = 0;
        ok(s, ops[s]->gemm(be[s], &g), "gemm with m 0");
    }
    twin_read(&C, &rc, &rg);
    for (int i = 0; i < M * N; i++)
        ck_assert(((float *)rg)[i] == 0.0f && ((float *)rc)[i] == 0.0f);
    free(rc);
    free(rg);

    /* Refusals, on the CUDA side (the CPU's are its own tests'). */
    struct gan_gemm g = { .m = M, .n = N, .k = K, .alpha = 1, .beta = 0,
                          .a = twin_ref(&A, GPU, 0), .b = twin_ref(&B, GPU, 0),
                          .c = twin_ref(&C, GPU, 0), .lda = K, .ldb = N, .ldc = N,
                          .batch = 1 };
    struct gan_gemm bad = g;
    bad.lda = K - 1;
    ck_assert_int_eq(ops[GPU]->gemm(be[GPU], &bad), GAN_ERR_INVALID);
    bad = g;
    bad.trans_a = 2;
    ck_assert_int_eq(ops[GPU]->gemm(be[GPU], &bad), GAN_ERR_INVALID);
    bad = g;
    bad.batch = 2;
    bad.stride_a = M * K;
    bad.stride_b = 0;
    bad.stride_c = 0;
    ck_assert_int_eq(ops[GPU]->gemm(be[GPU], &bad), GAN_ERR_INVALID);
    bad = g;
    bad.m = M + 1; /* C and A too small */
    ck_assert_int_eq(ops[GPU]->gemm(be[GPU], &bad), GAN_ERR_INVALID);
    bad = g;
    bad.a.dtype = GAN_I32;
    ck_assert_int_eq(ops[GPU]->gemm(be[GPU], &bad), GAN_ERR_UNSUPPORTED);
    ck_assert_uint_gt(strlen(th[GPU].last_error), 10);
    twin_free(&A);
    twin_free(&B);
    twin_free(&C);
}
END_TEST

/* ---------------------------------------------------------------- element-wise */

static const enum gan_dtype float_types[3] = { GAN_F32, GAN_F16, GAN_BF16 };

/* An iteration shape and the strides and offsets of up to three operands over it
 * (x or a, b, y). `inplace`: y is the same view as operand 0. */
struct layout {
    const char *name;
    int ndim;
    int64_t dim[GAN_MAX_DIMS];
    int64_t st[3][GAN_MAX_DIMS];
    size_t off[3];
    int inplace;
};

static const struct layout layouts[] = {
    { "contiguous", 1, { 1000 }, { { 1 }, { 1 }, { 1 } }, { 0, 0, 0 }, 0 },
    { "broadcast rows", 3, { 4, 5, 6 }, { { 6, 0, 1 }, { 0, 6, 1 }, { 30, 6, 1 } },
      { 0, 0, 0 }, 0 },
    { "transposed", 2, { 7, 9 }, { { 1, 7 }, { 9, 1 }, { 9, 1 } }, { 0, 0, 0 }, 0 },
    { "reversed", 1, { 10 }, { { -1 }, { 2 }, { 1 } }, { 9, 1, 0 }, 0 },
    { "in place", 2, { 3, 17 }, { { 17, 1 }, { 1, 3 }, { 17, 1 } }, { 0, 0, 0 }, 1 },
    { "scalar", 0, { 0 }, { { 0 }, { 0 }, { 0 } }, { 2, 1, 3 }, 0 },
    { "six dims, gaps in y", 6, { 2, 1, 3, 1, 2, 4 },
      { { 29, 7, 8, 3, 4, 1 }, { 0, 0, 4, 0, 0, 1 }, { 60, 60, 20, 20, 8, 2 } },
      { 1, 0, 5 }, 0 },
    { "empty", 3, { 3, 0, 2 }, { { 2, 2, 1 }, { 2, 2, 1 }, { 2, 2, 1 } }, { 0, 0, 0 }, 0 },
    { "offsets", 1, { 50 }, { { 1 }, { 0 }, { 1 } }, { 3, 4, 5 }, 0 },
};
#define N_LAYOUTS (sizeof layouts / sizeof layouts[0])

/* Elements a buffer needs for operand k of a layout (its highest element + 1). */
static size_t layout_extent(const struct layout *l, int k)
{
    int64_t hi = (int64_t)l->off[k];
    for (int d = 0; d < l->ndim; d++)
        if (l->st[k][d] > 0 && l->dim[d] > 0)
            hi += l->st[k][d] * (l->dim[d] - 1);
    return (size_t)hi + 1;
}

static struct gan_operand operand_of(const struct layout *l, int k, const struct twin *t, int s)
{
    struct gan_operand o;
    memset(&o, 0, sizeof o);
    o.buf = t->b[s];
    o.offset = l->off[k];
    o.dtype = t->dt;
    for (int d = 0; d < l->ndim; d++)
        o.stride[d] = l->st[k][d];
    return o;
}

static struct gan_shape shape_of(const struct layout *l)
{
    struct gan_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.ndim = l->ndim;
    for (int d = 0; d < l->ndim; d++)
        sh.dim[d] = l->dim[d];
    return sh;
}

/* Ops whose every result IEEE 754 rounds exactly (or that only move values). */
static int unary_exact(enum gan_unary_op op)
{
    return op != GAN_UNARY_TANH && op != GAN_UNARY_SIGMOID && op != GAN_UNARY_EXP &&
           op != GAN_UNARY_LOG;
}

static float unary_alpha(enum gan_unary_op op)
{
    switch (op) {
    case GAN_UNARY_SCALE: return -2.5f;
    case GAN_UNARY_ADD_SCALAR: return 1.25f;
    case GAN_UNARY_LEAKY_RELU: return 0.2f;
    case GAN_UNARY_FILL: return 3.0f;
    case GAN_UNARY_LEAKY_STEP: return 0.2f;
    default: return 0.0f;
    }
}

/* Every unary op over every layout, x and y of one float type. */
START_TEST(test_unary)
{
    const enum gan_dtype dt = float_types[_i];
    seed(200 + (uint64_t)_i);
    for (int op = 0; op < GAN_UNARY_OP_COUNT; op++)
        for (size_t li = 0; li < N_LAYOUTS; li++) {
            const struct layout *l = &layouts[li];
            size_t nx = layout_extent(l, 0), ny = l->inplace ? nx : layout_extent(l, 2);
            float *v = malloc(nx * sizeof *v);
            ck_assert_ptr_nonnull(v);
            for (size_t i = 0; i < nx; i++)
                v[i] = pick(15);
            struct twin X = twin_from(v, nx, dt);
            struct twin Y = l->inplace ? X : twin_new(ny, dt, NULL);
            struct gan_shape sh = shape_of(l);
            for (int s = 0; s < 2; s++) {
                struct gan_operand x = operand_of(l, 0, &X, s);
                struct gan_operand y = l->inplace ? x : operand_of(l, 2, &Y, s);
                ok(s, ops[s]->unary(be[s], (enum gan_unary_op)op, unary_alpha(op), &sh, &x, &y),
                   "unary");
            }
            void *rc, *rg;
            twin_read(&Y, &rc, &rg);
            char what[128];
            snprintf(what, sizeof what, "unary op %d, %s, %s", op, l->name, gan_dtype_name(dt));
            if (unary_exact((enum gan_unary_op)op)) {
                assert_exact(rc, rg, dt, ny, 0, what);
            } else {
                double *tol = malloc(ny * sizeof *tol);
                ck_assert_ptr_nonnull(tol);
                for (size_t i = 0; i < ny; i++) {
                    double c = fabs(value_at(rc, dt, i));
                    tol[i] = dt == GAN_F32 ? 4 * ulp_of(GAN_F32, c) : ulp_of(dt, c);
                }
                assert_close(rc, rg, dt, ny, tol, 0, what);
                free(tol);
            }
            free(rc);
            free(rg);
            if (!l->inplace)
                twin_free(&Y);
            twin_free(&X);
            free(v);
        }
}
END_TEST

/* COPY between every pair of float types is a strided cast: identical bits. */
START_TEST(test_unary_copy_casts)
{
    seed(250);
    for (int xi = 0; xi < 3; xi++)
        for (int yi = 0; yi < 3; yi++)
            for (size_t li = 0; li < N_LAYOUTS; li++) {
                const struct layout *l = &layouts[li];
                if (l->inplace)
                    continue;
                size_t nx = layout_extent(l, 0), ny = layout_extent(l, 2);
                float *v = malloc(nx * sizeof *v);
                ck_assert_ptr_nonnull(v);
                for (size_t i = 0; i < nx; i++)
                    v[i] = pick(30);
                struct twin X = twin_from(v, nx, float_types[xi]);
                struct twin Y = twin_new(ny, float_types[yi], NULL);
                struct gan_shape sh = shape_of(l);
                for (int s = 0; s < 2; s++) {
                    struct gan_operand x = operand_of(l, 0, &X, s), y = operand_of(l, 2, &Y, s);
                    ok(s, ops[s]->unary(be[s], GAN_UNARY_COPY, 0, &sh, &x, &y), "unary copy");
                }
                void *rc, *rg;
                twin_read(&Y, &rc, &rg);
                char what[128];
                snprintf(what, sizeof what, "copy %s → %s, %s", gan_dtype_name(float_types[xi]),
                         gan_dtype_name(float_types[yi]), l->name);
                assert_exact(rc, rg, float_types[yi], ny, 0, what);
                free(rc);
                free(rg);
                twin_free(&X);
                twin_free(&Y);
                free(v);
            }
}
END_TEST

/* Every binary op over every layout; a and y of one float type, b of the next one
 * (so that mixed operand types are covered too). */
START_TEST(test_binary)
{
    const enum gan_dtype ta = float_types[_i], tb = float_types[(_i + 1) % 3];
    seed(300 + (uint64_t)_i);
    for (int op = 0; op < GAN_BINARY_OP_COUNT; op++)
        for (size_t li = 0; li < N_LAYOUTS; li++) {
            const struct layout *l = &layouts[li];
            size_t na = layout_extent(l, 0), nb = layout_extent(l, 1);
            size_t ny = l->inplace ? na : layout_extent(l, 2);
            float *va = malloc(na * sizeof *va), *vb = malloc(nb * sizeof *vb);
            ck_assert(va && vb);
            for (size_t i = 0; i < na; i++)
                va[i] = pick(15);
            for (size_t i = 0; i < nb; i++) /* some ties, for MAX, MIN and GREATER */
                vb[i] = i < na && next_u64() % 5 == 0 ? va[i] : pick(15);
            struct twin A = twin_from(va, na, ta), B = twin_from(vb, nb, tb);
            struct twin Y = l->inplace ? A : twin_new(ny, ta, NULL);
            struct gan_shape sh = shape_of(l);
            for (int s = 0; s < 2; s++) {
                struct gan_operand a = operand_of(l, 0, &A, s), b = operand_of(l, 1, &B, s);
                struct gan_operand y = l->inplace ? a : operand_of(l, 2, &Y, s);
                /* the ops with a slope, and ADD_RELU, through binary_alpha (as the core
                 * sends them); the rest through binary */
                gan_status st = gan_ew_binary_has_alpha((enum gan_binary_op)op) ||
                                        gan_ew_binary_stores_sum((enum gan_binary_op)op)
                                    ? ops[s]->binary_alpha(be[s], (enum gan_binary_op)op, 0.2f,
                                                           &sh, &a, &b, &y)
                                    : ops[s]->binary(be[s], (enum gan_binary_op)op, &sh, &a, &b,
                                                     &y);
                ok(s, st, "binary");
            }
            void *rc, *rg;
            twin_read(&Y, &rc, &rg);
            char what[128];
            snprintf(what, sizeof what, "binary op %d, %s, %s and %s", op, l->name,
                     gan_dtype_name(ta), gan_dtype_name(tb));
            assert_exact(rc, rg, ta, ny, op == GAN_BINARY_MAX || op == GAN_BINARY_MIN, what);
            free(rc);
            free(rg);
            if (!l->inplace)
                twin_free(&Y);
            twin_free(&A);
            twin_free(&B);
            free(va);
            free(vb);
        }
}
END_TEST

/* ---------------------------------------------------------------- reductions */

struct red_case {
    const char *name;
    int ndim;
    int64_t dim[GAN_MAX_DIMS];
    uint32_t axes;
    int transposed;     /* x walked column-major (a transposed view) */
    int specials;       /* NaN and infinities among the inputs */
    int64_t ygap;       /* y's kept elements this far apart (1: packed) */
};

static const struct red_case red_cases[] = {
    { "all of a vector", 1, { 1000 }, 1, 0, 0, 1 },
    { "rows", 2, { 37, 53 }, 2, 0, 0, 1 },
    { "columns", 2, { 37, 53 }, 1, 0, 0, 1 },
    { "everything", 2, { 37, 53 }, 3, 0, 0, 1 },
    { "nothing", 2, { 37, 53 }, 0, 0, 0, 1 },
    { "axes 1 and 3", 4, { 4, 5, 6, 7 }, 0xA, 0, 0, 1 },
    { "axes 0 and 2", 4, { 4, 5, 6, 7 }, 0x5, 0, 0, 1 },
    { "axes 1 and 2", 4, { 4, 5, 6, 7 }, 0x6, 0, 0, 1 },
    { "empty reduced dimension", 3, { 3, 0, 4 }, 2, 0, 0, 1 },
    { "no outputs", 3, { 3, 0, 4 }, 1, 0, 0, 1 },
    { "long rows", 2, { 2, 70000 }, 2, 0, 0, 1 },
    { "long columns", 2, { 5000, 3 }, 1, 0, 0, 1 },
    { "transposed rows", 2, { 6, 8 }, 2, 1, 0, 1 },
    { "NaN and inf", 2, { 37, 53 }, 2, 0, 1, 1 },
    { "gaps in y", 2, { 9, 7 }, 2, 0, 0, 3 },
    { "one long vector", 1, { 300000 }, 1, 0, 0, 1 },
};

static const struct {
    enum gan_dtype x, y;
} red_types[3] = { { GAN_F32, GAN_F32 }, { GAN_F16, GAN_F32 }, { GAN_BF16, GAN_BF16 } };

/* Every op over every case, for one pair of x and y types. The tolerance of each
 * output comes from its own inputs (see the top of the file). */
START_TEST(test_reduce)
{
    const enum gan_dtype xt = red_types[_i].x, yt = red_types[_i].y;
    seed(400 + (uint64_t)_i);
    for (size_t ci = 0; ci < sizeof red_cases / sizeof red_cases[0]; ci++) {
        const struct red_case *rc = &red_cases[ci];
        struct gan_shape sh;
        memset(&sh, 0, sizeof sh);
        sh.ndim = rc->ndim;
        int64_t xs[GAN_MAX_DIMS], ys[GAN_MAX_DIMS], nx = 1, ny = 1;
        for (int d = 0; d < rc->ndim; d++) {
            sh.dim[d] = rc->dim[d];
            nx *= rc->dim[d];
        }
        /* x packed row-major (or column-major); y packed over the kept dimensions,
         * stride 0 on reduced ones, times the gap */
        int64_t run = 1;
        for (int k = 0; k < rc->ndim; k++) {
            int d = rc->transposed ? k : rc->ndim - 1 - k;
            xs[d] = run;
            run *= rc->dim[d];
        }
        run = rc->ygap;
        for (int d = rc->ndim - 1; d >= 0; d--) {
            if ((rc->axes >> d) & 1u) {
                ys[d] = 0;
                continue;
            }
            ys[d] = run;
            run *= rc->dim[d];
        }
        ny = run > 0 ? run : 1;
        float *v = malloc((size_t)(nx ? nx : 1) * sizeof *v);
        ck_assert_ptr_nonnull(v);
        for (int64_t i = 0; i < nx; i++)
            v[i] = rc->specials ? pick(3) : uniform(-2, 2);
        void *hx = typed(v, (size_t)nx, xt);
        struct twin X = twin_new((size_t)(nx ? nx : 1), xt, hx);

        /* per output (by y element): the count, Σ|x|, Σx² of its inputs */
        double *sabs = calloc((size_t)ny, sizeof *sabs), *ssq = calloc((size_t)ny, sizeof *ssq);
        ck_assert(sabs && ssq);
        int64_t rcount = 1;
        for (int d = 0; d < rc->ndim; d++)
            if ((rc->axes >> d) & 1u)
                rcount *= rc->dim[d];
        for (int64_t i = 0; i < nx; i++) {
            int64_t rest = i, xo = 0, yo = 0;
            for (int d = rc->ndim - 1; d >= 0; d--) {
                int64_t idx = rest % rc->dim[d];
                rest /= rc->dim[d];
                xo += idx * xs[d];
                yo += idx * ys[d];
            }
            double val = value_at(hx, xt, (size_t)xo);
            sabs[yo] += fabs(val);
            ssq[yo] += val * val;
        }

        for (int op = 0; op < GAN_REDUCE_OP_COUNT; op++) {
            struct twin Y = twin_new((size_t)ny, yt, NULL);
            for (int s = 0; s < 2; s++) {
                struct gan_operand x, y;
                memset(&x, 0, sizeof x);
                memset(&y, 0, sizeof y);
                x.buf = X.b[s];
                x.dtype = xt;
                y.buf = Y.b[s];
                y.dtype = yt;
                for (int d = 0; d < rc->ndim; d++) {
                    x.stride[d] = xs[d];
                    y.stride[d] = ys[d];
                }
                ok(s, ops[s]->reduce(be[s], (enum gan_reduce_op)op, &sh, &x, rc->axes, &y),
                   "reduce");
            }
            void *c, *g;
            twin_read(&Y, &c, &g);
            char what[128];
            snprintf(what, sizeof what, "reduce op %d, %s, %s → %s", op, rc->name,
                     gan_dtype_name(xt), gan_dtype_name(yt));
            if (op == GAN_REDUCE_MAX || op == GAN_REDUCE_MIN || op == GAN_REDUCE_ABS_MAX) {
                /* which zero wins a tie between +0 and −0 depends on the order */
                assert_exact(c, g, yt, (size_t)ny, 1, what);
            } else {
                double *tol = malloc((size_t)ny * sizeof *tol);
                ck_assert_ptr_nonnull(tol);
                for (int64_t i = 0; i < ny; i++) {
                    double t = op == GAN_REDUCE_SUM_SQUARES ? ssq[i] : sabs[i];
                    double bound = (double)(rcount + 2) * 0x1p-23 * t;
                    if (op == GAN_REDUCE_MEAN && rcount)
                        bound /= (double)rcount;
                    double cv = fabs(value_at(c, yt, (size_t)i));
                    tol[i] = bound + ulp_of(yt, cv + bound) + ulp_of(GAN_F32, cv + bound);
                }
                assert_close(c, g, yt, (size_t)ny, tol, 0, what);
                free(tol);
            }
            free(c);
            free(g);
            /* The same call twice gives the same bits on the GPU: the order is fixed. */
            if (op == GAN_REDUCE_SUM && nx > 10000) {
                void *again[2];
                for (int k = 0; k < 2; k++) {
                    struct gan_operand x, y;
                    memset(&x, 0, sizeof x);
                    memset(&y, 0, sizeof y);
                    x.buf = X.b[GPU];
                    x.dtype = xt;
                    y.buf = Y.b[GPU];
                    y.dtype = yt;
                    for (int d = 0; d < rc->ndim; d++) {
                        x.stride[d] = xs[d];
                        y.stride[d] = ys[d];
                    }
                    ok(GPU, ops[GPU]->reduce(be[GPU], GAN_REDUCE_SUM, &sh, &x, rc->axes, &y),
                       "reduce");
                    again[k] = malloc((size_t)ny * dsize(yt));
                    ck_assert_ptr_nonnull(again[k]);
                    ok(GPU, ops[GPU]->download(be[GPU], again[k], Y.b[GPU], 0,
                                               (size_t)ny * dsize(yt)), "download");
                }
                ck_assert_msg(memcmp(again[0], again[1], (size_t)ny * dsize(yt)) == 0,
                              "%s: two runs of the same sum differ", what);
                free(again[0]);
                free(again[1]);
            }
            twin_free(&Y);
        }
        free(sabs);
        free(ssq);
        free(hx);
        free(v);
        twin_free(&X);
    }
}
END_TEST

/* ---------------------------------------------------------------- convolution */

static const struct gan_conv2d conv_shapes[] = {
    /* n, c_in, h, w, c_out, kh, kw, stride, pad, dilation, h_out, w_out */
    { 2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 8, 8, GAN_F32 },
    { 3, 2, 9, 7, 5, 3, 2, 2, 2, 0, 0, 1, 1, 4, 3, GAN_F32 },
    { 1, 4, 6, 6, 2, 1, 1, 1, 1, 0, 0, 1, 1, 6, 6, GAN_F32 },       /* pointwise */
    { 2, 3, 11, 10, 3, 3, 3, 2, 2, 2, 2, 2, 2, 6, 5, GAN_F32 },     /* dilated */
    { 4, 8, 12, 12, 8, 5, 5, 1, 1, 2, 2, 1, 1, 12, 12, GAN_F32 },
    { 2, 1, 28, 28, 4, 4, 4, 2, 2, 1, 1, 1, 1, 14, 14, GAN_F32 },   /* a DCGAN critic's first */
};

/* Exact results (double) and Σ|product| of all three convolutions of x, w and dy,
 * accumulated by one scatter over every (image, output channel, output pixel, input
 * channel, tap): out[0] = y, out[1] = dx, out[2] = dw. */
static void conv_reference(const struct gan_conv2d *c, const void *x, const void *w,
                           const void *dy, enum gan_dtype t, double *exact[3], double *sum[3])
{
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t co = 0; co < c->c_out; co++)
            for (int64_t oh = 0; oh < c->h_out; oh++)
                for (int64_t ow = 0; ow < c->w_out; ow++) {
                    size_t iy = (size_t)(((n * c->c_out + co) * c->h_out + oh) * c->w_out + ow);
                    double g = value_at(dy, t, iy);
                    for (int64_t ci = 0; ci < c->c_in; ci++)
                        for (int64_t i = 0; i < c->kh; i++)
                            for (int64_t j = 0; j < c->kw; j++) {
                                int64_t ih = oh * c->stride_h - c->pad_h + i * c->dilation_h;
                                int64_t iw = ow * c->stride_w - c->pad_w + j * c->dilation_w;
                                if (ih < 0 || ih >= c->h_in || iw < 0 || iw >= c->w_in)
                                    continue;
                                size_t ix = (size_t)(((n * c->c_in + ci) * c->h_in + ih) *
                                                     c->w_in + iw);
                                size_t iw_ = (size_t)(((co * c->c_in + ci) * c->kh + i) * c->kw + j);
                                double xv = value_at(x, t, ix), wv = value_at(w, t, iw_);
                                exact[0][iy] += xv * wv;
                                sum[0][iy] += fabs(xv * wv);
                                exact[1][ix] += g * wv;
                                sum[1][ix] += fabs(g * wv);
                                exact[2][iw_] += xv * g;
                                sum[2][iw_] += fabs(xv * g);
                            }
                }
}

/* Forward, backward-data and backward-filter, overwriting and accumulating, over
 * every shape, for one dtype. */
START_TEST(test_conv2d)
{
    const enum gan_dtype dt = float_types[_i];
    seed(500 + (uint64_t)_i);
    for (size_t ci = 0; ci < sizeof conv_shapes / sizeof conv_shapes[0]; ci++) {
        struct gan_conv2d c = conv_shapes[ci];
        c.dtype = dt;
        size_t nx = (size_t)(c.n * c.c_in * c.h_in * c.w_in);
        size_t nw = (size_t)(c.c_out * c.c_in * c.kh * c.kw);
        size_t ny = (size_t)(c.n * c.c_out * c.h_out * c.w_out);
        const size_t count[3] = { ny, nx, nw };
        const int64_t terms[3] = { c.c_in * c.kh * c.kw, c.c_out * c.kh * c.kw,
                                   c.n * c.h_out * c.w_out };
        float *vx = random_floats(nx, -1, 1), *vw = random_floats(nw, -1, 1);
        float *vy = random_floats(ny, -1, 1);
        void *hx = typed(vx, nx, dt), *hw = typed(vw, nw, dt), *hy = typed(vy, ny, dt);
        double *exact[3], *sum[3];
        for (int k = 0; k < 3; k++) {
            exact[k] = calloc(count[k], sizeof(double));
            sum[k] = calloc(count[k], sizeof(double));
            ck_assert(exact[k] && sum[k]);
        }
        conv_reference(&c, hx, hw, hy, dt, exact, sum);
        struct twin X = twin_new(nx, dt, hx), W = twin_new(nw, dt, hw), DY = twin_new(ny, dt, hy);
        for (int dir = 0; dir < 3; dir++)
            for (int beta = 0; beta < 2; beta++) {
                /* the output starts as random values (used when accumulating) */
                float *vo = random_floats(count[dir], -1, 1);
                void *ho = typed(vo, count[dir], dt);
                struct twin O = twin_new(count[dir], dt, ho);
                for (int s = 0; s < 2; s++) {
                    struct gan_ref x = twin_ref(&X, s, 0), w = twin_ref(&W, s, 0);
                    struct gan_ref dy = twin_ref(&DY, s, 0), o = twin_ref(&O, s, 0);
                    gan_status st;
                    if (dir == 0)
                        st = ops[s]->conv2d_forward(be[s], &c, &x, &w, (float)beta, &o);
                    else if (dir == 1)
                        st = ops[s]->conv2d_backward_data(be[s], &c, &dy, &w, (float)beta, &o);
                    else
                        st = ops[s]->conv2d_backward_filter(be[s], &c, &x, &dy, (float)beta, &o);
                    ok(s, st, "conv2d");
                }
                void *rc, *rg;
                twin_read(&O, &rc, &rg);
                double *tol = malloc(count[dir] * sizeof *tol);
                double *ex = malloc(count[dir] * sizeof *ex), *sm = malloc(count[dir] * sizeof *sm);
                ck_assert(tol && ex && sm);
                for (size_t i = 0; i < count[dir]; i++) {
                    double old = beta ? value_at(ho, dt, i) : 0.0;
                    ex[i] = exact[dir][i] + old;
                    sm[i] = sum[dir][i] + fabs(old);
                    double bound = (double)(terms[dir] + 2) * 0x1p-20 * sm[i];
                    tol[i] = bound + (dt == GAN_F32 ? 0.0 : 2 * ulp_of(dt, fabs(ex[i]) + bound));
                }
                char what[160];
                snprintf(what, sizeof what, "conv2d %s shape %zu, %s, beta %d",
                         dir == 0 ? "forward" : dir == 1 ? "backward-data" : "backward-filter",
                         ci, gan_dtype_name(dt), beta);
                assert_close(rc, rg, dt, count[dir], tol, 0, what);
                if (dt == GAN_F32)
                    assert_fp32_precision(rg, ex, sm, count[dir], what);
                free(tol);
                free(ex);
                free(sm);
                free(rc);
                free(rg);
                twin_free(&O);
                free(ho);
                free(vo);
            }
        /* cuDNN's algorithm is chosen once per shape and is deterministic: the same
         * call gives the same bits again. */
        struct twin O1 = twin_new(nw, dt, NULL), O2 = twin_new(nw, dt, NULL);
        struct gan_ref x = twin_ref(&X, GPU, 0), dy = twin_ref(&DY, GPU, 0);
        struct gan_ref o1 = twin_ref(&O1, GPU, 0), o2 = twin_ref(&O2, GPU, 0);
        ok(GPU, ops[GPU]->conv2d_backward_filter(be[GPU], &c, &x, &dy, 0.0f, &o1), "conv2d");
        ok(GPU, ops[GPU]->conv2d_backward_filter(be[GPU], &c, &x, &dy, 0.0f, &o2), "conv2d");
        void *r1 = malloc(nw * dsize(dt)), *r2 = malloc(nw * dsize(dt));
        ck_assert(r1 && r2);
        ok(GPU, ops[GPU]->download(be[GPU], r1, O1.b[GPU], 0, nw * dsize(dt)), "download");
        ok(GPU, ops[GPU]->download(be[GPU], r2, O2.b[GPU], 0, nw * dsize(dt)), "download");
        ck_assert_msg(memcmp(r1, r2, nw * dsize(dt)) == 0,
                      "conv2d backward-filter shape %zu, %s: two runs differ", ci,
                      gan_dtype_name(dt));
        free(r1);
        free(r2);
        twin_free(&O1);
        twin_free(&O2);
        twin_free(&X);
        twin_free(&W);
        twin_free(&DY);
        for (int k = 0; k < 3; k++) {
            free(exact[k]);
            free(sum[k]);
        }
        free(hx);
        free(hw);
        free(hy);
        free(vx);
        free(vw);
        free(vy);
    }
}
END_TEST

/* Bad descriptors and views are refused on the host, with a reason. */
START_TEST(test_conv2d_refusals)
{
    struct gan_conv2d c = conv_shapes[0];
    size_t nx = (size_t)(c.n * c.c_in * c.h_in * c.w_in);
    size_t nw = (size_t)(c.c_out * c.c_in * c.kh * c.kw);
    size_t ny = (size_t)(c.n * c.c_out * c.h_out * c.w_out);
    struct twin X = twin_new(nx, GAN_F32, NULL), W = twin_new(nw, GAN_F32, NULL);
    struct twin Y = twin_new(ny, GAN_F32, NULL);
    struct gan_ref x = twin_ref(&X, GPU, 0), w = twin_ref(&W, GPU, 0), y = twin_ref(&Y, GPU, 0);
    struct gan_conv2d bad = c;
    bad.h_out = 7;
    ck_assert_int_eq(ops[GPU]->conv2d_forward(be[GPU], &bad, &x, &w, 0, &y), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(th[GPU].last_error, "h_out"));
    ck_assert_int_eq(ops[GPU]->conv2d_forward(be[GPU], &c, &x, &w, 0.5f, &y), GAN_ERR_INVALID);
    struct gan_ref w16 = w;
    w16.dtype = GAN_F16;
    ck_assert_int_eq(ops[GPU]->conv2d_forward(be[GPU], &c, &x, &w16, 0, &y), GAN_ERR_INVALID);
    struct gan_ref xin = x;
    xin.offset = 1; /* one element past the buffer's end */
    ck_assert_int_eq(ops[GPU]->conv2d_forward(be[GPU], &c, &xin, &w, 0, &y), GAN_ERR_INVALID);
    ck_assert_int_eq(ops[GPU]->conv2d_forward(be[GPU], &c, &x, &w, 0, &x), GAN_ERR_INVALID);
    bad = c;
    bad.dtype = GAN_I32;
    ck_assert_int_eq(ops[GPU]->conv2d_backward_filter(be[GPU], &bad, &x, &y, 0, &w),
                     GAN_ERR_UNSUPPORTED);
    twin_free(&X);
    twin_free(&W);
    twin_free(&Y);
}
END_TEST

/* ---------------------------------------------------------------- casts */

static const enum gan_dtype all_types[5] = { GAN_F32, GAN_F16, GAN_BF16, GAN_I32, GAN_U32 };

/* n source elements of type t that reach every corner of every conversion: float
 * specials and limits (with NaN payloads, a signalling one included, written as
 * bits), integers near 2^24, 2^31 and 2^32 and of either sign. Malloc'd. */
static void *cast_source(enum gan_dtype t, size_t n)
{
    static const uint32_t f32_bits[] = { 0x7f800001u, 0xffc12345u, 0x7fa00000u, 0x00000001u,
                                         0x80000000u, 0x477ff000u, 0x477fefffu, 0x33000000u,
                                         0x33000001u, 0x38800000u, 0x387fffffu, 0x4f000000u,
                                         0x4f800000u, 0xcf000001u };
    static const uint16_t h16_bits[] = { 0x7c01u, 0xfe00u, 0x7d55u, 0x0001u, 0x8000u,
                                         0x03ffu, 0x7bffu, 0xfc00u };
    static const int64_t ints[] = { 0, 1, -1, 16777216, 16777217, 16777219, -16777217,
                                    2147483647, -2147483647 - 1, 65504, 65519, 65520,
                                    4294967295LL, 2147483648LL, 3000000001LL };
    void *out = malloc(n * 4 + 4);
    ck_assert_ptr_nonnull(out);
    if (is_float(t)) {
        float *v = malloc(n * sizeof *v);
        ck_assert_ptr_nonnull(v);
        for (size_t i = 0; i < n; i++)
            v[i] = i % 3 == 0 ? (float)(int64_t)(next_u64() % 200001 - 100000) * 0.75f
                              : pick(40);
        for (size_t i = 0; i < n && t == GAN_F32 && i < 14; i++)
            memcpy(&v[i], &f32_bits[i], 4);
        void *b = typed(v, n, t);
        memcpy(out, b, n * dsize(t));
        free(b);
        free(v);
        if (t != GAN_F32)
            for (size_t i = 0; i < n && i < 8; i++)
                ((uint16_t *)out)[i] = h16_bits[i];
        return out;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v = i < 15 ? ints[i] : (int64_t)(uint32_t)next_u64();
        if (t == GAN_I32)
            ((int32_t *)out)[i] = (int32_t)(uint32_t)v;
        else
            ((uint32_t *)out)[i] = (uint32_t)v;
    }
    return out;
}

/* All 25 pairs of types: identical bits and identical counts; the same bits without
 * counts; in place; a large cast whose counts gather from many blocks. */
START_TEST(test_cast)
{
    enum { N = 4099 };
    seed(600);
    for (int xi = 0; xi < 5; xi++) {
        const enum gan_dtype xt = all_types[xi];
        void *src = cast_source(xt, N);
        struct twin X = twin_new(N, xt, src);
        for (int yi = 0; yi < 5; yi++) {
            const enum gan_dtype yt = all_types[yi];
            struct twin Y = twin_new(N + 2, yt, NULL), Z = twin_new(N, yt, NULL);
            struct gan_cast_counts cnt[2];
            for (int s = 0; s < 2; s++) {
                struct gan_ref x = twin_ref(&X, s, 0), y = twin_ref(&Y, s, 1);
                struct gan_ref z = twin_ref(&Z, s, 0);
                memset(&cnt[s], 0xab, sizeof cnt[s]);
                ok(s, ops[s]->cast(be[s], N, &x, &y, &cnt[s]), "cast");
                ok(s, ops[s]->cast(be[s], N, &x, &z, NULL), "cast without counts");
            }
            char what[96];
            snprintf(what, sizeof what, "cast %s → %s", gan_dtype_name(xt), gan_dtype_name(yt));
            void *c, *g;
            twin_read(&Y, &c, &g);
            assert_exact(c, g, yt, N + 2, 0, what);
            /* exact means bits here, NaN payloads included */
            ck_assert_msg(memcmp(c, g, (N + 2) * dsize(yt)) == 0, "%s: NaN bits differ", what);
            void *c2, *g2;
            twin_read(&Z, &c2, &g2);
            ck_assert_msg(memcmp(g2, (unsigned char *)g + dsize(yt), N * dsize(yt)) == 0,
                          "%s: the bits without counts differ from those with", what);
            ck_assert_msg(cnt[0].elements == cnt[1].elements &&
                          cnt[0].overflow == cnt[1].overflow &&
                          cnt[0].underflow == cnt[1].underflow &&
                          cnt[0].subnormal == cnt[1].subnormal &&
                          cnt[0].nonfinite == cnt[1].nonfinite,
                          "%s: counts differ: cpu %llu/%llu/%llu/%llu/%llu, cuda "
                          "%llu/%llu/%llu/%llu/%llu (elements/overflow/underflow/subnormal/"
                          "nonfinite)", what,
                          (unsigned long long)cnt[0].elements, (unsigned long long)cnt[0].overflow,
                          (unsigned long long)cnt[0].underflow,
                          (unsigned long long)cnt[0].subnormal,
                          (unsigned long long)cnt[0].nonfinite,
                          (unsigned long long)cnt[1].elements, (unsigned long long)cnt[1].overflow,
                          (unsigned long long)cnt[1].underflow,
                          (unsigned long long)cnt[1].subnormal,
                          (unsigned long long)cnt[1].nonfinite);
            free(c);
            free(g);
            free(c2);
            free(g2);
            twin_free(&Y);
            twin_free(&Z);
        }
        /* in place, the same view and type: nothing moves, the counts still come */
        struct gan_cast_counts in[2];
        for (int s = 0; s < 2; s++) {
            struct gan_ref x = twin_ref(&X, s, 0);
            ok(s, ops[s]->cast(be[s], N, &x, &x, &in[s]), "cast in place");
        }
        ck_assert(in[0].subnormal == in[1].subnormal && in[0].nonfinite == in[1].nonfinite &&
                  in[0].overflow == in[1].overflow && in[1].elements == N);
        void *c, *g;
        twin_read(&X, &c, &g);
        ck_assert_msg(memcmp(g, src, N * dsize(xt)) == 0, "an in-place cast changed x");
        free(c);
        free(g);
        /* overlapping, not the same view: refused */
        struct gan_ref x = twin_ref(&X, GPU, 0), y = twin_ref(&X, GPU, 1);
        ck_assert_int_eq(ops[GPU]->cast(be[GPU], 8, &x, &y, NULL), GAN_ERR_INVALID);
        twin_free(&X);
        free(src);
    }

    /* Many blocks' counts: magnitudes from 2^-30 to 2^20 into FP16. */
    enum { BIG = 200003 };
    float *v = malloc(BIG * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < BIG; i++)
        v[i] = (float)ldexp(1.0 + (double)uniform(0, 1), (int)(next_u64() % 51) - 30) *
               ((i & 1) ? -1.0f : 1.0f);
    struct twin X = twin_from(v, BIG, GAN_F32), Y = twin_new(BIG, GAN_F16, NULL);
    struct gan_cast_counts cnt[2];
    for (int s = 0; s < 2; s++) {
        struct gan_ref x = twin_ref(&X, s, 0), y = twin_ref(&Y, s, 0);
        ok(s, ops[s]->cast(be[s], BIG, &x, &y, &cnt[s]), "cast");
    }
    ck_assert_uint_gt(cnt[0].overflow, 1000);
    ck_assert_uint_gt(cnt[0].underflow, 1000);
    ck_assert_uint_gt(cnt[0].subnormal, 1000);
    ck_assert_uint_eq(cnt[1].overflow, cnt[0].overflow);
    ck_assert_uint_eq(cnt[1].underflow, cnt[0].underflow);
    ck_assert_uint_eq(cnt[1].subnormal, cnt[0].subnormal);
    ck_assert_uint_eq(cnt[1].nonfinite, 0);
    void *c, *g;
    twin_read(&Y, &c, &g);
    ck_assert(memcmp(c, g, BIG * 2) == 0);
    free(c);
    free(g);
    twin_free(&X);
    twin_free(&Y);
    free(v);
}
END_TEST

/* ---------------------------------------------------------------- FP8 casts */

static int is_fp8(enum gan_dtype t)
{
    return t == GAN_F8E4M3 || t == GAN_F8E5M2;
}

static void assert_same_counts(const struct gan_cast_counts *c, const char *what)
{
    ck_assert_msg(c[0].elements == c[1].elements && c[0].overflow == c[1].overflow &&
                      c[0].underflow == c[1].underflow && c[0].subnormal == c[1].subnormal &&
                      c[0].nonfinite == c[1].nonfinite,
                  "%s: counts differ: cpu %llu/%llu/%llu/%llu, cuda %llu/%llu/%llu/%llu "
                  "(overflow/underflow/subnormal/nonfinite)", what,
                  (unsigned long long)c[0].overflow, (unsigned long long)c[0].underflow,
                  (unsigned long long)c[0].subnormal, (unsigned long long)c[0].nonfinite,
                  (unsigned long long)c[1].overflow, (unsigned long long)c[1].underflow,
                  (unsigned long long)c[1].subnormal, (unsigned long long)c[1].nonfinite);
}

static void assert_same_bytes(const struct twin *t, const char *what)
{
    void *c, *g;
    twin_read(t, &c, &g);
    size_t size = t->n * dsize(t->dt);
    for (size_t i = 0; i < size; i++)
        ck_assert_msg(((unsigned char *)c)[i] == ((unsigned char *)g)[i],
                      "%s: byte %zu of %zu differs: cpu %02x, cuda %02x", what, i, size,
                      ((unsigned char *)c)[i], ((unsigned char *)g)[i]);
    free(c);
    free(g);
}

/* Every pair of float types with an FP8 side, in both saturation modes where the output
 * is FP8: the same bytes (NaN payloads included) and the same counts on both backends,
 * with and without counts, and in place. FP8 inputs hold every pattern; the others, values
 * with 6-bit significands over both formats' ranges and beyond (every tie of both, and
 * the FP32 numbers around it) and pick()'s corners. */
START_TEST(test_cast_fp8)
{
    enum { N = 4099 };
    static const enum gan_dtype types[5] = { GAN_F32, GAN_F16, GAN_BF16, GAN_F8E4M3,
                                             GAN_F8E5M2 };
    seed(800);
    float *v = malloc(N * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < N; i++) {
        double mant = 1.0 + (double)(next_u64() % 64) / 64.0;
        v[i] = i % 5 == 4 ? pick(50) : (float)ldexp(mant, (int)(next_u64() % 40) - 22);
        if (i % 3 == 1)
            v[i] = nextafterf(v[i], i % 2 ? 0.0f : INFINITY);
        if (next_u64() & 1)
            v[i] = -v[i];
    }
    uint8_t patterns[N];
    for (size_t i = 0; i < N; i++)
        patterns[i] = (uint8_t)(i * 7 + 1);
    for (int xi = 0; xi < 5; xi++) {
        const enum gan_dtype xt = types[xi];
        void *src = is_fp8(xt) ? NULL : typed(v, N, xt);
        struct twin X = twin_new(N, xt, src ? src : patterns);
        free(src);
        for (int yi = 0; yi < 5; yi++) {
            const enum gan_dtype yt = types[yi];
            if (!is_fp8(xt) && !is_fp8(yt))
                continue;
            for (uint32_t flags = 0; flags <= (is_fp8(yt) ? GAN_CAST_SATURATE : 0u); flags++) {
                struct twin Y = twin_new(N + 2, yt, NULL), Z = twin_new(N + 2, yt, NULL);
                struct gan_cast_counts cnt[2];
                for (int s = 0; s < 2; s++) {
                    struct gan_ref x = twin_ref(&X, s, 0), y = twin_ref(&Y, s, 1);
                    struct gan_ref z = twin_ref(&Z, s, 1);
                    ck_assert_ptr_nonnull(ops[s]->cast_flags);
                    ok(s, ops[s]->cast_flags(be[s], N, &x, &y, flags, &cnt[s]), "cast_flags");
                    ok(s, ops[s]->cast_flags(be[s], N, &x, &z, flags, NULL), "cast_flags");
                }
                char what[96];
                snprintf(what, sizeof what, "cast %s → %s%s", gan_dtype_name(xt),
                         gan_dtype_name(yt), flags ? " saturating" : "");
                assert_same_bytes(&Y, what);
                assert_same_bytes(&Z, what);
                assert_same_counts(cnt, what);
                twin_free(&Y);
                twin_free(&Z);
            }
        }
        if (is_fp8(xt)) { /* in place: nothing moves, the counts still come */
            struct gan_cast_counts in[2];
            for (int s = 0; s < 2; s++) {
                struct gan_ref x = twin_ref(&X, s, 0);
                ok(s, ops[s]->cast(be[s], N, &x, &x, &in[s]), "cast in place");
            }
            assert_same_counts(in, "FP8 in place");
            assert_same_bytes(&X, "FP8 in place");
        }
        twin_free(&X);
    }
    /* FP8 with an integer is refused alike, and so is FP8 in any other kernel */
    struct twin X = twin_new(8, GAN_F8E4M3, patterns), Y = twin_new(8, GAN_I32, NULL);
    struct twin F = twin_new(8, GAN_F32, NULL);
    for (int s = 0; s < 2; s++) {
        struct gan_ref x = twin_ref(&X, s, 0), y = twin_ref(&Y, s, 0);
        ck_assert_int_eq(ops[s]->cast(be[s], 8, &x, &y, NULL), GAN_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(th[s].last_error, "cast through F32"));
        const struct gan_shape shape = { 1, { 8 } };
        struct gan_operand ox = { X.b[s], 0, GAN_F8E4M3, { 1 } };
        struct gan_operand of = { F.b[s], 0, GAN_F32, { 1 } };
        ck_assert_int_eq(ops[s]->unary(be[s], GAN_UNARY_RELU, 0.0f, &shape, &ox, &of),
                         GAN_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(th[s].last_error, "F8_E4M3"));
        struct gan_gemm g = {
            .m = 2, .n = 2, .k = 2, .alpha = 1.0f, .a = { X.b[s], 0, GAN_F8E4M3 },
            .b = { F.b[s], 0, GAN_F32 }, .c = { F.b[s], 4, GAN_F32 }, .lda = 2, .ldb = 2,
            .ldc = 2, .batch = 1,
        };
        ck_assert_int_eq(ops[s]->gemm(be[s], &g), GAN_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(th[s].last_error, "F8_E4M3"));
    }
    twin_free(&X);
    twin_free(&Y);
    twin_free(&F);
    free(v);
}
END_TEST

/* ---------------------------------------------------------------- FP8 products */

/* FP8 pattern b's value, from the OCP definition (E5M2's exponent 31 is inf or NaN,
 * E4M3's S.1111.111 its only NaN). */
static double fp8_value(enum gan_dtype dt, unsigned b)
{
    const int e5 = dt == GAN_F8E5M2, mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    const unsigned e = (b & 0x7fu) >> mb, m = b & ((1u << mb) - 1u);
    double mag = e5 && e == 31 ? (m ? NAN : INFINITY)
                 : !e5 && (b & 0x7fu) == 0x7fu ? NAN
                 : e == 0 ? ldexp(m, 1 - bias - mb)
                          : ldexp((1 << mb) + (int)m, (int)e - bias - mb);
    return (b & 0x80u) ? -mag : mag;
}

/* The scale index of stored element (r, c), from fp8.h's description. */
static int64_t scale_index_of(const struct gan_fp8_layout *l, int64_t r, int64_t c)
{
    if (l->along == GAN_FP8_ALONG_ROWS)
        return r * ((l->cols + l->block - 1) / l->block) + c / l->block;
    return (r / l->block) * l->cols + c;
}

/* Whether the "cuda" side has FP8 products: a GPU of compute capability 8.9 or newer
 * (its description says so), or the substitute module. */
static int gpu_has_fp8(void)
{
    return !real_cuda(&mod[GPU]) || !strstr(ops[GPU]->describe(be[GPU]), "no FP8 products");
}

/* On a GPU without them, each FP8 slot refuses, naming the device's capability, before
 * it looks at its arguments (an empty operand included: how a caller can ask). */
static void assert_fp8_refused(void)
{
    const struct gan_fp8_layout l = { 0, 0, 0, GAN_FP8_ALONG_ROWS };
    struct gan_ref none = { NULL, 0, GAN_F32 };
    struct gan_fp8_stats st;
    struct gan_gemm_fp8 f;
    memset(&f, 0, sizeof f);
    f.g.batch = 1;
    gan_status got[4] = {
        ops[GPU]->fp8_stats(be[GPU], &l, &none, 0, NULL, &st),
        ops[GPU]->fp8_quantize(be[GPU], &l, &none, &none, 0, &none, NULL),
        ops[GPU]->fp8_dequantize(be[GPU], &l, &none, &none, &none),
        ops[GPU]->gemm_fp8(be[GPU], &f),
    };
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(got[i], GAN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(th[GPU].last_error, "compute capability"));
}

/* fp8_stats, fp8_quantize and fp8_dequantize: the same statistics, block maxima, bytes
 * and counts on both backends, per tensor and per block in both directions (short last
 * blocks), from F32, BF16 and F16 inputs over both formats' ranges and beyond. */
START_TEST(test_fp8_passes)
{
    static const enum gan_dtype xts[3] = { GAN_F32, GAN_BF16, GAN_F16 };
    static const enum gan_dtype fp8s[2] = { GAN_F8E4M3, GAN_F8E5M2 };
    static const struct gan_fp8_layout fp8_layouts[] = {
        { 37, 100, 0, GAN_FP8_ALONG_ROWS }, { 37, 100, 32, GAN_FP8_ALONG_ROWS },
        { 37, 100, 16, GAN_FP8_ALONG_COLUMNS }, { 300, 7, 128, GAN_FP8_ALONG_COLUMNS },
    };
    if (!gpu_has_fp8()) {
        assert_fp8_refused();
        return;
    }
    const enum gan_dtype xt = xts[_i];
    seed(900 + (uint64_t)_i);
    for (size_t li = 0; li < sizeof fp8_layouts / sizeof fp8_layouts[0]; li++) {
        const struct gan_fp8_layout *l = &fp8_layouts[li];
        const size_t n = (size_t)(l->rows * l->cols), count = (size_t)gan_fp8_scale_count(l);
        float *v = malloc(n * sizeof *v), *sv = malloc(count * sizeof *sv);
        uint8_t *patterns = malloc(n);
        ck_assert(v && sv && patterns);
        for (size_t i = 0; i < n; i++) {
            v[i] = (float)ldexp(pick(15), (int)(next_u64() % 24) - 12);
            patterns[i] = (uint8_t)(i * 13 + 5);
        }
        for (size_t i = 0; i < count; i++)
            sv[i] = (float)ldexp(uniform(1.0f, 2.0f), (int)(next_u64() % 21) - 10);
        struct twin X = twin_from(v, n, xt), S = twin_from(sv, count, GAN_F32);
        char what[96];

        struct gan_fp8_stats st[2];
        float *bam[2];
        for (int s = 0; s < 2; s++) {
            bam[s] = malloc(count * sizeof(float));
            ck_assert_ptr_nonnull(bam[s]);
            struct gan_ref x = twin_ref(&X, s, 0);
            ok(s, ops[s]->fp8_stats(be[s], l, &x, 1, bam[s], &st[s]), "fp8_stats");
        }
        snprintf(what, sizeof what, "fp8_stats of %s, layout %zu", gan_dtype_name(xt), li);
        ck_assert_msg(st[0].elements == st[1].elements && st[0].zeros == st[1].zeros &&
                          st[0].nonfinite == st[1].nonfinite && st[0].amax == st[1].amax &&
                          !memcmp(st[0].log2_hist, st[1].log2_hist, sizeof st[0].log2_hist),
                      "%s: statistics differ", what);
        ck_assert_msg(!memcmp(bam[0], bam[1], count * sizeof(float)), "%s: block maxima differ",
                      what);
        free(bam[0]);
        free(bam[1]);

        for (int k = 0; k < 4; k++) {
            const enum gan_dtype dt = fp8s[k / 2];
            const uint32_t flags = k % 2 ? GAN_CAST_SATURATE : 0;
            struct twin Y = twin_new(n, dt, NULL), Z = twin_new(n, dt, NULL);
            struct gan_fp8_cast_stats cs[2];
            for (int s = 0; s < 2; s++) {
                struct gan_ref x = twin_ref(&X, s, 0), sc = twin_ref(&S, s, 0);
                struct gan_ref y = twin_ref(&Y, s, 0), z = twin_ref(&Z, s, 0);
                ok(s, ops[s]->fp8_quantize(be[s], l, &x, &sc, flags, &y, &cs[s]), "fp8_quantize");
                ok(s, ops[s]->fp8_quantize(be[s], l, &x, &sc, flags, &z, NULL), "fp8_quantize");
            }
            snprintf(what, sizeof what, "fp8_quantize %s → %s%s, layout %zu",
                     gan_dtype_name(xt), gan_dtype_name(dt), flags ? " saturating" : "", li);
            assert_same_bytes(&Y, what);
            assert_same_bytes(&Z, what);
            ck_assert_msg(cs[0].elements == cs[1].elements && cs[0].overflow == cs[1].overflow &&
                              cs[0].underflow == cs[1].underflow &&
                              cs[0].subnormal == cs[1].subnormal &&
                              cs[0].nonfinite == cs[1].nonfinite && cs[0].amax == cs[1].amax,
                          "%s: counts %llu/%llu/%llu/%llu amax %a on cpu, %llu/%llu/%llu/%llu "
                          "amax %a on cuda", what, (unsigned long long)cs[0].overflow,
                          (unsigned long long)cs[0].underflow, (unsigned long long)cs[0].subnormal,
                          (unsigned long long)cs[0].nonfinite, (double)cs[0].amax,
                          (unsigned long long)cs[1].overflow, (unsigned long long)cs[1].underflow,
                          (unsigned long long)cs[1].subnormal, (unsigned long long)cs[1].nonfinite,
                          (double)cs[1].amax);
            twin_free(&Y);
            twin_free(&Z);
        }

        /* every FP8 pattern back through FP32 scales, rounded once into each type */
        for (int k = 0; k < 6; k++) {
            const enum gan_dtype qt = fp8s[k / 3], yt = xts[k % 3];
            struct twin Q = twin_new(n, qt, patterns), D = twin_new(n, yt, NULL);
            for (int s = 0; s < 2; s++) {
                struct gan_ref q = twin_ref(&Q, s, 0), sc = twin_ref(&S, s, 0);
                struct gan_ref d = twin_ref(&D, s, 0);
                ok(s, ops[s]->fp8_dequantize(be[s], l, &q, &sc, &d), "fp8_dequantize");
            }
            snprintf(what, sizeof what, "fp8_dequantize %s → %s, layout %zu",
                     gan_dtype_name(qt), gan_dtype_name(yt), li);
            assert_same_bytes(&D, what);
            twin_free(&Q);
            twin_free(&D);
        }
        twin_free(&X);
        twin_free(&S);
        free(v);
        free(sv);
        free(patterns);
    }
}
END_TEST

/* One FP8 product on both backends against the FP64 sum of the dequantized operands.
 * Identical bytes where the data make every sum exact (small integers, power-of-two
 * scales); else each side within its own bound of the exact result, S = |alpha|·Σ|a·b|
 * + |beta·c| over the dequantized operands:
 *   cpu (FP32 operands, FP32 sums): (k + 3)·u·S;
 *   cuda through cuBLASLt: (k + 2)·4u·S + 2^-12·S, for FP8 tensor cores keep fewer bits
 *     of a sum inside one instruction before cuBLASLt adds it in FP32;
 *   cuda through its BF16 fallback: (k + 2)·4u·S, and 2^-8·S more where blocks of FP32
 *     scales round both widened operands to BF16;
 * plus one ulp of a 16-bit C. */
struct fp8_gemm_case {
    int64_t m, n, k;
    int trans_a, trans_b;
    int64_t block;
    int exact;                  /* small integers and power-of-two scales */
    enum gan_dtype at, bt;
};

static void fp8_gemm_case(const struct fp8_gemm_case *t, enum gan_dtype ct, float beta)
{
    const int64_t m = t->m, n = t->n, k = t->k;
    const int64_t ar = t->trans_a ? k : m, ac = t->trans_a ? m : k;
    const int64_t br = t->trans_b ? n : k, bc = t->trans_b ? k : n;
    const struct gan_fp8_layout la = { ar, ac, t->block,
                                       t->trans_a ? GAN_FP8_ALONG_COLUMNS : GAN_FP8_ALONG_ROWS };
    const struct gan_fp8_layout lb = { br, bc, t->block,
                                       t->trans_b ? GAN_FP8_ALONG_ROWS : GAN_FP8_ALONG_COLUMNS };
    const size_t na = (size_t)(ar * ac), nb = (size_t)(br * bc), nc = (size_t)(m * n);
    const size_t ca = (size_t)gan_fp8_scale_count(&la), cb = (size_t)gan_fp8_scale_count(&lb);
    uint8_t *qa = malloc(na), *qb = malloc(nb);
    float *sa = malloc(ca * sizeof *sa), *sb = malloc(cb * sizeof *sb), *c0 = malloc(nc * 4);
    ck_assert(qa && qb && sa && sb && c0);
    for (int side = 0; side < 2; side++) {
        uint8_t *q = side ? qb : qa;
        const enum gan_dtype dt = side ? t->bt : t->at;
        for (size_t i = 0; i < (side ? nb : na); i++) {
            unsigned b;
            do /* exact: integers in [-8, 8]; else finite values up to 4 */
                b = (unsigned)(next_u64() % 256);
            while (t->exact ? !(fabs(fp8_value(dt, b)) <= 8.0 &&
                                fp8_value(dt, b) == nearbyint(fp8_value(dt, b)))
                            : !(fabs(fp8_value(dt, b)) <= 4.0));
            q[i] = (uint8_t)b;
        }
        float *s = side ? sb : sa;
        for (size_t i = 0; i < (side ? cb : ca); i++)
            s[i] = (float)ldexp(t->exact ? 1.0 : uniform(1.0f, 2.0f), (int)(next_u64() % 5) - 1);
    }
    for (size_t i = 0; i < nc; i++)
        c0[i] = beta == 0.0f ? NAN : t->exact ? (float)((int)(next_u64() % 33) - 16) / 4.0f
                                              : uniform(-4.0f, 4.0f);
    const float alpha = t->exact ? 0.5f : 0.75f;
    void *hc = typed(c0, nc, ct);
    struct twin A = twin_new(na, t->at, qa), B = twin_new(nb, t->bt, qb);
    struct twin SA = twin_from(sa, ca, GAN_F32), SB = twin_from(sb, cb, GAN_F32);
    struct twin C = twin_new(nc, ct, hc);
    for (int s = 0; s < 2; s++) {
        struct gan_gemm_fp8 f = {
            .g = { .trans_a = t->trans_a, .trans_b = t->trans_b, .m = m, .n = n, .k = k,
                   .alpha = alpha, .beta = beta, .a = twin_ref(&A, s, 0),
                   .b = twin_ref(&B, s, 0), .c = twin_ref(&C, s, 0), .lda = ac, .ldb = bc,
                   .ldc = n, .batch = 1 },
            .scale_a = twin_ref(&SA, s, 0), .scale_b = twin_ref(&SB, s, 0),
            .block_a = t->block, .block_b = t->block,
        };
        ok(s, ops[s]->gemm_fp8(be[s], &f), "gemm_fp8");
    }
    char what[160];
    snprintf(what, sizeof what, "gemm_fp8 %s·%s→%s m=%lld n=%lld k=%lld trans %d%d block %lld "
             "beta %g", gan_dtype_name(t->at), gan_dtype_name(t->bt), gan_dtype_name(ct),
             (long long)m, (long long)n, (long long)k, t->trans_a, t->trans_b,
             (long long)t->block, (double)beta);
    if (t->exact) {
        assert_same_bytes(&C, what);
    } else {
        const int lt = t->block == 0 && !t->trans_a && t->trans_b && k % 16 == 0 &&
                       !(t->at == GAN_F8E5M2 && t->bt == GAN_F8E5M2);
        const double u = 0x1p-24;
        double *tol = malloc(nc * sizeof *tol);
        ck_assert_ptr_nonnull(tol);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0.0, mag = 0.0;
                for (int64_t p = 0; p < k; p++) {
                    int64_t ra = t->trans_a ? p : i, cla = t->trans_a ? i : p;
                    int64_t rb = t->trans_b ? j : p, clb = t->trans_b ? p : j;
                    double a = fp8_value(t->at, qa[ra * ac + cla]);
                    double b = fp8_value(t->bt, qb[rb * bc + clb]);
                    a /= sa[t->block ? scale_index_of(&la, ra, cla) : 0];
                    b /= sb[t->block ? scale_index_of(&lb, rb, clb) : 0];
                    sum += a * b;
                    mag += fabs(a * b);
                }
                const size_t at = (size_t)(i * n + j);
                const double old = beta == 0.0f ? 0.0 : value_at(hc, ct, at);
                const double S = fabs(alpha) * mag + fabs(beta * old);
                double gpu = (double)(k + 2) * 4 * u * S;
                if (lt)
                    gpu += 0x1p-12 * S;
                else if (t->block)
                    gpu += 0x1p-8 * S;
                const double err = (double)(k + 3) * u * S + gpu;
                tol[at] = err + (ct == GAN_F32 ? 0.0
                                               : ulp_of(ct, fabs(alpha * sum + beta * old) + err));
            }
        void *rc, *rg;
        twin_read(&C, &rc, &rg);
        assert_close(rc, rg, ct, nc, tol, 0, what);
        free(rc);
        free(rg);
        free(tol);
    }
    twin_free(&A);
    twin_free(&B);
    twin_free(&SA);
    twin_free(&SB);
    twin_free(&C);
    free(hc);
    free(qa);
    free(qb);
    free(sa);
    free(sb);
    free(c0);
}

/* Both of the CUDA backend's paths: cuBLASLt's FP8 matmul (per tensor, C = A·Bᵀ, k a
 * multiple of 16, not E5M2 by E5M2) and the BF16 fallback (every other transpose,
 * blocks of scales, E5M2 by E5M2, odd sizes), for each C type and beta 0 and 1. */
START_TEST(test_fp8_gemm)
{
    static const struct fp8_gemm_case cases[] = {
        { 64, 32, 128, 0, 1, 0, 1, GAN_F8E4M3, GAN_F8E4M3 },
        { 64, 32, 128, 0, 1, 0, 0, GAN_F8E4M3, GAN_F8E5M2 },
        { 48, 16, 256, 0, 1, 0, 0, GAN_F8E5M2, GAN_F8E4M3 },
        { 64, 32, 128, 0, 1, 0, 0, GAN_F8E5M2, GAN_F8E5M2 },
        { 7, 5, 37, 0, 0, 0, 0, GAN_F8E4M3, GAN_F8E4M3 },
        { 7, 5, 37, 1, 0, 32, 1, GAN_F8E4M3, GAN_F8E5M2 },
        { 9, 6, 300, 1, 1, 128, 0, GAN_F8E5M2, GAN_F8E4M3 },
        { 33, 17, 64, 0, 1, 32, 0, GAN_F8E4M3, GAN_F8E4M3 },
    };
    static const enum gan_dtype cts[3] = { GAN_F32, GAN_BF16, GAN_F16 };
    if (!gpu_has_fp8()) {
        assert_fp8_refused();
        return;
    }
    seed(950);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int c = 0; c < 3; c++)
            for (int beta = 0; beta < 2; beta++)
                fp8_gemm_case(&cases[i], cts[c], (float)beta);
}
END_TEST

/* ---------------------------------------------------------------- random numbers */

static const uint64_t rng_seeds[] = { 0, 0x0123456789abcdefull, UINT64_MAX };
static const uint64_t rng_offsets[] = { 0, 7, 0xffffffffull, 0x123456789ull };
static const size_t rng_lengths[] = { 1, 3, 4, 5, 1001, 30011 };

/* Raw bits: identical for every seed, offset (the counter's high word included) and
 * length; the output's offset is honoured and its neighbours untouched. */
START_TEST(test_rng_bits)
{
    for (size_t si = 0; si < 3; si++)
        for (size_t oi = 0; oi < 4; oi++)
            for (size_t li = 0; li < 6; li++) {
                size_t n = rng_lengths[li];
                struct twin Y = twin_new(n + 3, GAN_U32, NULL);
                for (int s = 0; s < 2; s++) {
                    struct gan_ref y = twin_ref(&Y, s, 2);
                    ok(s, ops[s]->rng_bits(be[s], n, rng_seeds[si], rng_offsets[oi], &y),
                       "rng_bits");
                }
                void *c, *g;
                twin_read(&Y, &c, &g);
                ck_assert_msg(memcmp(c, g, (n + 3) * 4) == 0,
                              "rng_bits seed %zu offset %zu n %zu differ", si, oi, n);
                free(c);
                free(g);
                twin_free(&Y);
            }
}
END_TEST

/* Uniforms: identical bits in every float type, over intervals that exercise the
 * rounding onto an end and the step back inside, including ones with nothing inside. */
START_TEST(test_rng_uniform)
{
    static const float iv[][2] = { { 0.0f, 1.0f }, { -3.0f, 5.0f }, { 1.0f, 1.0f },
                                   { 0.999f, 1.0f }, { -1e-3f, 1e-3f }, { 1000.0f, 1000.5f },
                                   { -65504.0f, 65504.0f }, { 1e-7f, 2e-7f } };
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof iv / sizeof iv[0]; k++)
            for (size_t li = 3; li < 6; li++) {
                const enum gan_dtype dt = float_types[t];
                size_t n = rng_lengths[li];
                uint64_t sd = rng_seeds[(k + li) % 3], off = rng_offsets[(k + t) % 4];
                struct twin Y = twin_new(n + 2, dt, NULL);
                for (int s = 0; s < 2; s++) {
                    struct gan_ref y = twin_ref(&Y, s, 1);
                    ok(s, ops[s]->rng_uniform(be[s], n, sd, off, iv[k][0], iv[k][1], &y),
                       "rng_uniform");
                }
                void *c, *g;
                twin_read(&Y, &c, &g);
                ck_assert_msg(memcmp(c, g, (n + 2) * dsize(dt)) == 0,
                              "rng_uniform %s [%g, %g) n %zu differ", gan_dtype_name(dt),
                              (double)iv[k][0], (double)iv[k][1], n);
                for (size_t i = 1; i <= n; i++) {
                    double v = value_at(g, dt, i);
                    ck_assert_msg(v >= iv[k][0] && v <= iv[k][1],
                                  "rng_uniform %s: %g outside [%g, %g]", gan_dtype_name(dt), v,
                                  (double)iv[k][0], (double)iv[k][1]);
                }
                free(c);
                free(g);
                twin_free(&Y);
            }
}
END_TEST

/* Normals: within one unit in the last place of the output type, and nearly all
 * identical (see the top of the file for why not all). */
START_TEST(test_rng_normal)
{
    static const float ms[][2] = { { 0.0f, 1.0f }, { 3.0f, 0.5f }, { -2.0f, 0.0f },
                                   { 100.0f, 30.0f } };
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
            const enum gan_dtype dt = float_types[t];
            const size_t n = 30011;
            struct twin Y = twin_new(n, dt, NULL);
            for (int s = 0; s < 2; s++) {
                struct gan_ref y = twin_ref(&Y, s, 0);
                ok(s, ops[s]->rng_normal(be[s], n, rng_seeds[k % 3], rng_offsets[k], ms[k][0],
                                         ms[k][1], &y), "rng_normal");
            }
            void *c, *g;
            twin_read(&Y, &c, &g);
            size_t differ = 0;
            for (size_t i = 0; i < n; i++) {
                double vc = value_at(c, dt, i), vg = value_at(g, dt, i);
                ck_assert_msg(isfinite(vg) || !isfinite(vc), "rng_normal %s: element %zu is %g",
                              gan_dtype_name(dt), i, vg);
                ck_assert_msg(fabs(vc - vg) <= ulp_of(dt, fabs(vc)),
                              "rng_normal %s mean %g std %g: element %zu: cpu %.9g, cuda %.9g",
                              gan_dtype_name(dt), (double)ms[k][0], (double)ms[k][1], i, vc, vg);
                differ += bits_at(c, dt, i) != bits_at(g, dt, i);
            }
            ck_assert_msg(differ <= n / 100, "rng_normal %s: %zu of %zu values differ",
                          gan_dtype_name(dt), differ, n);
            free(c);
            free(g);
            twin_free(&Y);
        }
}
END_TEST

/* ---------------------------------------------------------------- optimizer */

/* Three Adam steps on both backends from the same state: identical parameters,
 * moments and working copies, for every gradient type and working-copy type. */
START_TEST(test_adam)
{
    enum { N = 3001 };
    static const enum gan_dtype copies[] = { GAN_F32, GAN_F16, GAN_BF16 };
    seed(700);
    for (int gi = 0; gi < 3; gi++)
        for (int ci = -1; ci < 3; ci++) {
            float *p = random_floats(N, -1, 1), *gv = malloc(N * sizeof *gv);
            ck_assert_ptr_nonnull(gv);
            for (size_t i = 0; i < N; i++)
                gv[i] = pick(2) * 64.0f;
            float zero[N];
            memset(zero, 0, sizeof zero);
            struct twin P = twin_from(p, N, GAN_F32), M = twin_from(zero, N, GAN_F32);
            struct twin V = twin_from(zero, N, GAN_F32), G = twin_from(gv, N, float_types[gi]);
            struct twin C = twin_new(N, ci >= 0 ? copies[ci] : GAN_F16, NULL);
            for (int64_t step = 1; step <= 3; step++) {
                struct gan_adam h = { .lr = 1e-3f, .beta1 = 0.5f, .beta2 = 0.9f, .eps = 1e-8f,
                                      .weight_decay = step == 2 ? 0.01f : 0.0f, .step = step,
                                      .grad_scale = 1.0f / 1024.0f };
                for (int s = 0; s < 2; s++) {
                    struct gan_ref rp = twin_ref(&P, s, 0), rg = twin_ref(&G, s, 0);
                    struct gan_ref rm = twin_ref(&M, s, 0), rv = twin_ref(&V, s, 0);
                    struct gan_ref rc = twin_ref(&C, s, 0);
                    if (ci < 0)
                        rc.buf = NULL;
                    ok(s, ops[s]->adam(be[s], &h, N, &rp, &rg, &rm, &rv, &rc), "adam");
                }
            }
            const struct twin *check[4] = { &P, &M, &V, &C };
            static const char *const names[4] = { "param", "m", "v", "param_copy" };
            for (int k = 0; k < 4; k++) {
                void *c, *g;
                twin_read(check[k], &c, &g);
                char what[96];
                snprintf(what, sizeof what, "adam %s (grad %s, copy %s)", names[k],
                         gan_dtype_name(float_types[gi]),
                         ci >= 0 ? gan_dtype_name(copies[ci]) : "none");
                ck_assert_msg(memcmp(c, g, N * dsize(check[k]->dt)) == 0, "%s differs", what);
                free(c);
                free(g);
            }
            twin_free(&P);
            twin_free(&M);
            twin_free(&V);
            twin_free(&G);
            twin_free(&C);
            free(p);
            free(gv);
        }
    /* refusals */
    struct twin P = twin_new(8, GAN_F32, NULL);
    struct gan_ref rp = twin_ref(&P, GPU, 0), none = { NULL, 0, GAN_F16 };
    struct gan_adam h = { .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .step = 0, .grad_scale = 1.0f };
    ck_assert_int_eq(ops[GPU]->adam(be[GPU], &h, 8, &rp, &rp, &rp, &rp, &none),
                     GAN_ERR_INVALID);
    h.step = 1;
    h.beta1 = 1.0f;
    ck_assert_int_eq(ops[GPU]->adam(be[GPU], &h, 8, &rp, &rp, &rp, &rp, &none),
                     GAN_ERR_INVALID);
    h.beta1 = 0.9f;
    ck_assert_int_eq(ops[GPU]->adam(be[GPU], &h, 9, &rp, &rp, &rp, &rp, &none),
                     GAN_ERR_INVALID);
    struct gan_ref p16 = rp;
    p16.dtype = GAN_F16;
    ck_assert_int_eq(ops[GPU]->adam(be[GPU], &h, 8, &p16, &rp, &rp, &rp, &none),
                     GAN_ERR_UNSUPPORTED);
    twin_free(&P);
}
END_TEST

/* ---------------------------------------------------------------- gradient statistics */

/* Every gradient type, scales from 1 to 0 and inf, with and without the fused unscale
 * (in place too): identical counts, absmax and min |u|, Σu² within double rounding,
 * identical unscaled values. */
START_TEST(test_grad_stats)
{
    static const float scales[] = { 1.0f, 0x1p-16f, 3.0f, 0.0f, INFINITY };
    static const size_t lengths[] = { 1, 1000, 70001 };
    seed(800);
    for (int xi = 0; xi < 3; xi++)
        for (size_t li = 0; li < 3; li++)
            for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++)
                for (int mode = 0; mode < 4; mode++) { /* none, F32, F16, in place */
                    const enum gan_dtype xt = float_types[xi];
                    const size_t n = lengths[li];
                    float *v = malloc(n * sizeof *v);
                    ck_assert_ptr_nonnull(v);
                    for (size_t i = 0; i < n; i++)
                        v[i] = i % 7 == 0 ? 0.0f : pick(5) * (i % 3 == 0 ? 1e-3f : 16.0f);
                    struct twin X = twin_from(v, n, xt);
                    enum gan_dtype ut = mode == 2 ? GAN_F16 : mode == 3 ? xt : GAN_F32;
                    struct twin U = mode == 3 ? X : twin_new(n, ut, NULL);
                    struct gan_grad_stats st[2];
                    for (int s = 0; s < 2; s++) {
                        struct gan_ref x = twin_ref(&X, s, 0), u = twin_ref(&U, s, 0);
                        if (mode == 0)
                            u.buf = NULL;
                        ok(s, ops[s]->grad_stats(be[s], n, &x, scales[k], &u, &st[s]),
                           "grad_stats");
                    }
                    char what[128];
                    snprintf(what, sizeof what, "grad_stats %s n %zu inv_scale %g mode %d",
                             gan_dtype_name(xt), n, (double)scales[k], mode);
                    ck_assert_msg(st[0].elements == st[1].elements &&
                                  st[0].nonfinite == st[1].nonfinite &&
                                  st[0].zeros == st[1].zeros &&
                                  st[0].subnormal == st[1].subnormal,
                                  "%s: counts differ (nonfinite %llu/%llu, zeros %llu/%llu, "
                                  "subnormal %llu/%llu)", what,
                                  (unsigned long long)st[0].nonfinite,
                                  (unsigned long long)st[1].nonfinite,
                                  (unsigned long long)st[0].zeros,
                                  (unsigned long long)st[1].zeros,
                                  (unsigned long long)st[0].subnormal,
                                  (unsigned long long)st[1].subnormal);
                    ck_assert_msg(st[0].absmax == st[1].absmax &&
                                  st[0].min_nonzero == st[1].min_nonzero,
                                  "%s: absmax %.17g/%.17g, min_nonzero %.17g/%.17g", what,
                                  st[0].absmax, st[1].absmax, st[0].min_nonzero,
                                  st[1].min_nonzero);
                    double sc = st[0].sum_squares, sg = st[1].sum_squares;
                    ck_assert_msg((isinf(sc) && sc == sg) ||
                                  fabs(sc - sg) <= (double)(n + 2) * 0x1p-52 * sc,
                                  "%s: sum_squares cpu %.17g, cuda %.17g", what, sc, sg);
                    if (mode != 0) {
                        void *c, *g;
                        twin_read(&U, &c, &g);
                        assert_exact(c, g, ut, n, 0, what);
                        free(c);
                        free(g);
                    }
                    if (mode != 3)
                        twin_free(&U);
                    twin_free(&X);
                    free(v);
                }
    /* refusals */
    struct twin X = twin_new(4, GAN_F32, NULL);
    struct gan_ref x = twin_ref(&X, GPU, 0), none = { NULL, 0, GAN_F32 };
    struct gan_grad_stats st;
    ck_assert_int_eq(ops[GPU]->grad_stats(be[GPU], 4, &x, NAN, &none, &st), GAN_ERR_INVALID);
    ck_assert_int_eq(ops[GPU]->grad_stats(be[GPU], 5, &x, 1.0f, &none, &st), GAN_ERR_INVALID);
    ck_assert_int_eq(ops[GPU]->grad_stats(be[GPU], 4, &x, 1.0f, &none, NULL), GAN_ERR_INVALID);
    twin_free(&X);
}
END_TEST

/* ---------------------------------------------------------------- element-wise refusals */

START_TEST(test_elementwise_refusals)
{
    struct twin X = twin_new(12, GAN_F32, NULL);
    struct gan_shape sh = { 2, { 3, 4 } };
    struct gan_operand x;
    memset(&x, 0, sizeof x);
    x.buf = X.b[GPU];
    x.dtype = GAN_F32;
    x.stride[0] = 4;
    x.stride[1] = 1;
    struct gan_operand y = x;
    ok(GPU, ops[GPU]->unary(be[GPU], GAN_UNARY_NEG, 0, &sh, &x, &y), "unary");
    struct gan_operand far = x;
    far.stride[0] = 5; /* reaches element 13 of 12 */
    ck_assert_int_eq(ops[GPU]->unary(be[GPU], GAN_UNARY_NEG, 0, &sh, &far, &y), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(th[GPU].last_error, "reaches elements"));
    struct gan_operand back = x;
    back.stride[1] = -1; /* reaches element −3 */
    ck_assert_int_eq(ops[GPU]->binary(be[GPU], GAN_BINARY_ADD, &sh, &x, &back, &y),
                     GAN_ERR_INVALID);
    struct gan_operand ints = x;
    ints.dtype = GAN_I32;
    ck_assert_int_eq(ops[GPU]->unary(be[GPU], GAN_UNARY_COPY, 0, &sh, &ints, &y),
                     GAN_ERR_UNSUPPORTED);
    ck_assert_int_eq(ops[GPU]->unary(be[GPU], GAN_UNARY_OP_COUNT, 0, &sh, &x, &y),
                     GAN_ERR_INVALID);
    struct gan_shape deep = { GAN_MAX_DIMS + 1, { 1 } };
    ck_assert_int_eq(ops[GPU]->unary(be[GPU], GAN_UNARY_NEG, 0, &deep, &x, &y), GAN_ERR_INVALID);
    struct gan_operand ys = x;
    ys.stride[1] = 1;
    ck_assert_int_eq(ops[GPU]->reduce(be[GPU], GAN_REDUCE_SUM, &sh, &x, 2, &ys),
                     GAN_ERR_INVALID); /* y moves along the reduced dimension */
    ck_assert_int_eq(ops[GPU]->reduce(be[GPU], GAN_REDUCE_SUM, &sh, &x, 4, &ys),
                     GAN_ERR_INVALID); /* axis 2 of a 2-D shape */
    struct gan_ref u = twin_ref(&X, GPU, 0);
    ck_assert_int_eq(ops[GPU]->rng_bits(be[GPU], 4, 1, 0, &u), GAN_ERR_UNSUPPORTED);
    ck_assert_int_eq(ops[GPU]->rng_uniform(be[GPU], 13, 1, 0, 0, 1, &u), GAN_ERR_INVALID);
    ck_assert_int_eq(ops[GPU]->rng_uniform(be[GPU], 4, 1, 0, 2, 1, &u), GAN_ERR_INVALID);
    ck_assert_int_eq(ops[GPU]->rng_normal(be[GPU], 4, 1, 0, 0, -1, &u), GAN_ERR_INVALID);
    twin_free(&X);
}
END_TEST

/* ---------------------------------------------------------------- the suite */

static Suite *backend_cuda_suite(void)
{
    Suite *s = suite_create("backend-cuda");
    /* Generous limits for a slow first CUDA initialisation; each test takes seconds. */
    const double limit = 120;

    TCase *tc = tcase_create("module");
    tcase_add_test(tc, test_descriptor);
    tcase_add_test(tc, test_create_settings);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_memory);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("gemm");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_gemm_types, 0, (int)(sizeof gemm_types / sizeof gemm_types[0]));
    tcase_add_test(tc, test_gemm_edges);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("elementwise");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_unary, 0, 3);
    tcase_add_test(tc, test_unary_copy_casts);
    tcase_add_loop_test(tc, test_binary, 0, 3);
    tcase_add_test(tc, test_elementwise_refusals);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("reduce");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_reduce, 0, 3);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("conv2d");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_conv2d, 0, 3);
    tcase_add_test(tc, test_conv2d_refusals);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("cast");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_cast);
    tcase_add_test(tc, test_cast_fp8);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("fp8 products");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_fp8_passes, 0, 3);
    tcase_add_test(tc, test_fp8_gemm);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("rng");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_rng_bits);
    tcase_add_test(tc, test_rng_uniform);
    tcase_add_test(tc, test_rng_normal);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("optimizer and statistics");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_adam);
    tcase_add_test(tc, test_grad_stats);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);
    return s;
}

/* In a forked child: load backend-cuda.so and create an instance. Exit 0 when a
 * device works, 77 when create reports "no CUDA device", 1 for anything else (the
 * module does not load, or fails in another way). The parent never touches CUDA. */
static int probe_device(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("check_backend_cuda: fork");
        return 1;
    }
    if (pid == 0) {
        struct module m;
        char why[2048];
        if (!load_module(GPU, &m, why, sizeof why)) {
            fprintf(stderr, "check_backend_cuda: backend-cuda.so did not load: %s\n", why);
            _exit(1);
        }
        struct test_host h;
        test_host_init(&h, NULL);
        gan_backend *b = NULL;
        gan_status st = m.ops->create(&h.host, &b);
        if (st == GAN_OK) {
            fprintf(stderr, "check_backend_cuda: %s\n", m.ops->describe(b));
            m.ops->destroy(b);
            _exit(0);
        }
        if (st == GAN_ERR_DEVICE && strncmp(h.last_error, "no CUDA device: ", 16) == 0) {
            fprintf(stderr, "check_backend_cuda: skipped: %s\n", h.last_error);
            _exit(77);
        }
        fprintf(stderr, "check_backend_cuda: create failed (status %d): %s\n", (int)st,
                h.last_error);
        _exit(1);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    return WEXITSTATUS(status);
}

int main(void)
{
    int probe = probe_device();
    if (probe == 77)
        return 77;
    if (probe != 0)
        return EXIT_FAILURE;
    SRunner *sr = srunner_create(backend_cuda_suite());
    /* Each test initialises CUDA in its own child; never in this process. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
