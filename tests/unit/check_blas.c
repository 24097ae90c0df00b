/* SPDX-License-Identifier: MIT */
/* check_blas.c — how the CPU backend loads OpenBLAS: the kernel it chooses from the CPU's
 * features, respect for OPENBLAS_CORETYPE, an already-loaded library, threads, sgemm. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/cpu_fixture.h"

/* Each test runs in its own forked child (the runner is put in fork mode below), so
 * each one is the first to load the library in its process, as a fresh ganctl is. */

static int openblas_loaded(void)
{
    void *h = dlopen(GAN_BLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

/* The idle threads' spin that OpenBLAS read from its environment when it loaded (a
 * power of two of cycles), from its own entry point; 4 stands in for a library without
 * one, which has no such wait to check. */
static int thread_timeout(const struct cpu_blas *blas)
{
    int (*timeout)(void) = NULL;
    void *sym = blas->handle ? dlsym(blas->handle, "openblas_thread_timeout") : NULL;
    if (!sym)
        return 4;
    memcpy(&timeout, &sym, sizeof sym);
    return timeout();
}

/* A backend without the test fixture's BLAS setup, so each test controls the load. */
struct bare {
    struct gan_backend be;
    struct test_host th;
};

static void bare_init(struct bare *b)
{
    memset(b, 0, sizeof *b);
    test_host_init(&b->th, NULL);
    b->be.host = &b->th.host;
}

static void bare_open(struct bare *b, int threads)
{
    gan_status st = cpu_blas_open(&b->be, threads);
    ck_assert_msg(st == GAN_OK, "cpu_blas_open: %s", b->th.last_error);
    ck_assert_ptr_nonnull(b->be.blas.sgemm);
}

/* Only an OpenBLAS built with DYNAMIC_ARCH has kernels to choose from; with any other
 * BLAS the tests check that it loads and multiplies, and what it reports. */
static int can_choose(const struct cpu_blas *blas)
{
    return strstr(blas->config, "DYNAMIC_ARCH") != NULL;
}

/* What the backend should choose here, decided by the test on its own. */
static const char *expected_core(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    if (__builtin_cpu_supports("avx"))
        return "Sandybridge";
    return NULL;
}

static uint64_t rng_state;

static float next_unit(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1p-52 - 1.0);
}

/* The loaded kernel's sgemm against a naive triple loop in double, over shapes that
 * reach the blocked kernels (not only the small-matrix paths) and all transposes. */
static void check_sgemm(const struct cpu_blas *blas)
{
    static const int shapes[][3] = { { 1, 1, 1 }, { 17, 33, 65 }, { 128, 96, 200 },
                                      { 300, 257, 129 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ta = t & 1, tb = t >> 1;
            float *a = malloc(sizeof(float) * (size_t)(m * k));
            float *b = malloc(sizeof(float) * (size_t)(k * n));
            float *c = malloc(sizeof(float) * (size_t)(m * n));
            ck_assert(a && b && c);
            rng_state = (uint64_t)(s * 4 + (size_t)t);
            for (int i = 0; i < m * k; i++)
                a[i] = next_unit();
            for (int i = 0; i < k * n; i++)
                b[i] = next_unit();
            for (int i = 0; i < m * n; i++)
                c[i] = next_unit();
            float *c0 = malloc(sizeof(float) * (size_t)(m * n));
            ck_assert_ptr_nonnull(c0);
            memcpy(c0, c, sizeof(float) * (size_t)(m * n));
            const float alpha = 1.25f, beta = -0.5f;
            blas->sgemm(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, ta ? m : k, b,
                        tb ? k : n, beta, c, n);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double ref = 0, mag = 0;
                    for (int p = 0; p < k; p++) {
                        double x = ta ? a[p * m + i] : a[i * k + p];
                        double y = tb ? b[j * k + p] : b[p * n + j];
                        ref += x * y;
                        mag += fabs(x * y);
                    }
                    ref = alpha * ref + beta * c0[i * n + j];
                    mag = fabs(alpha) * mag + fabs(beta * c0[i * n + j]);
                    /* FP32 dot-product error bound (k+2)·2^-24·Σ|terms|, doubled */
                    double tol = 2.0 * (k + 2) * 0x1p-24 * mag;
                    if (!(fabs(c[i * n + j] - ref) <= tol))
                        ck_abort_msg("kernel %s, %d×%d×%d ta=%d tb=%d: C(%d,%d) = %.9g, "
                                     "reference %.9g", blas->kernel, m, n, k, ta, tb, i, j,
                                     c[i * n + j], ref);
                }
            free(a);
            free(b);
            free(c);
            free(c0);
        }
}

/* ---------------------------------------------------------------- the library's name */

/* The backend opens the library by configure's name, normally its soname, and reports
 * the file the dynamic loader resolved it to: an absolute path that is the library
 * already in the process, and whose last component is that soname. */
START_TEST(test_opened_by_soname)
{
    struct bare b;
    bare_init(&b);
    bare_open(&b, 1);
    ck_assert_str_eq(b.be.blas.library, GAN_BLAS_LIBRARY);
    const char *path = b.be.blas.path;
    ck_assert_msg(path[0] == '/', "resolved path \"%s\" is not absolute", path);
    if (!strchr(GAN_BLAS_LIBRARY, '/')) {
        const char *base = strrchr(path, '/') + 1;
        ck_assert_str_eq(base, GAN_BLAS_LIBRARY);
    }
    void *by_name = dlopen(GAN_BLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    void *by_path = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(by_name);
    ck_assert_ptr_eq(by_name, by_path);
    dlclose(by_path);
    dlclose(by_name);
    cpu_blas_close(&b.be.blas);
}
END_TEST

/* ---------------------------------------------------------------- kernel choice */

START_TEST(test_chosen_from_features)
{
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_THREAD_TIMEOUT");
    ck_assert_msg(!openblas_loaded(), "OpenBLAS is already loaded in the test process");
    struct bare b;
    bare_init(&b);
    bare_open(&b, 1);
    check_sgemm(&b.be.blas);
    if (!can_choose(&b.be.blas)) {
        ck_assert(strcmp(b.be.blas.chosen_by, "not OpenBLAS: its own choice") == 0 ||
                  strcmp(b.be.blas.chosen_by, "fixed when OpenBLAS was built") == 0);
        cpu_blas_close(&b.be.blas);
        return;
    }
    const char *want = expected_core();
    if (want) {
        ck_assert_str_eq(b.be.blas.kernel, want);
        ck_assert_msg(strncmp(b.be.blas.chosen_by, "chosen from CPU features: ", 26) == 0,
                      "chosen_by = \"%s\"", b.be.blas.chosen_by);
    } else {
        ck_assert_str_eq(b.be.blas.chosen_by, "detected by OpenBLAS");
    }
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        ck_assert_str_ne(b.be.blas.kernel, "Prescott");
    /* its idle threads were asked to sleep at once, and OpenBLAS took it */
    ck_assert_str_eq(b.be.blas.waits, "OpenBLAS threads sleep between calls");
    ck_assert_int_eq(thread_timeout(&b.be.blas), 4);
    /* OpenBLAS's own report agrees, and the environment is left as it was */
    ck_assert_ptr_nonnull(strstr(b.be.blas.config, b.be.blas.kernel));
    ck_assert_ptr_null(getenv("OPENBLAS_CORETYPE"));
    ck_assert_ptr_null(getenv("OPENBLAS_THREAD_TIMEOUT"));
    cpu_blas_close(&b.be.blas);
}
END_TEST

static const char *const forced[] = { "Prescott", "Sandybridge", "Haswell", "SkylakeX" };

START_TEST(test_environment_respected)
{
    const char *name = forced[_i];
    __builtin_cpu_init();
    /* OpenBLAS would fall back from a kernel the CPU cannot run */
    if ((_i == 1 && !__builtin_cpu_supports("avx")) ||
        (_i == 2 && !__builtin_cpu_supports("avx2")) ||
        (_i == 3 && !__builtin_cpu_supports("avx512f")))
        return;
    setenv("OPENBLAS_CORETYPE", name, 1);
    setenv("OPENBLAS_THREAD_TIMEOUT", "20", 1);
    ck_assert(!openblas_loaded());
    struct bare b;
    bare_init(&b);
    bare_open(&b, 1);
    check_sgemm(&b.be.blas);
    if (!can_choose(&b.be.blas)) {
        cpu_blas_close(&b.be.blas);
        return;
    }
    ck_assert_str_eq(b.be.blas.kernel, name);
    ck_assert_str_eq(b.be.blas.chosen_by, "OPENBLAS_CORETYPE from the environment");
    ck_assert_str_eq(getenv("OPENBLAS_CORETYPE"), name);
    ck_assert_str_eq(b.be.blas.waits, "OPENBLAS_THREAD_TIMEOUT=20 from the environment");
    ck_assert_int_eq(thread_timeout(&b.be.blas), 20);
    ck_assert_str_eq(getenv("OPENBLAS_THREAD_TIMEOUT"), "20");
    cpu_blas_close(&b.be.blas);
}
END_TEST

/* A library loaded before the backend (here with the SSE3 kernel) keeps its kernel;
 * the backend says so instead of claiming a choice it could not make. */
START_TEST(test_already_loaded)
{
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    void *early = dlopen(GAN_BLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(early);
    unsetenv("OPENBLAS_CORETYPE");
    struct bare b;
    bare_init(&b);
    bare_open(&b, 1);
    if (can_choose(&b.be.blas)) {
        ck_assert_str_eq(b.be.blas.kernel, "Prescott");
        ck_assert_ptr_nonnull(strstr(b.be.blas.chosen_by, "first loaded"));
        ck_assert_ptr_nonnull(strstr(b.be.blas.waits, "first loaded"));
    }
    check_sgemm(&b.be.blas);
    cpu_blas_close(&b.be.blas);
    /* the backend held its own reference: the early one still works */
    ck_assert_ptr_nonnull(dlsym(early, "cblas_sgemm"));
    dlclose(early);
}
END_TEST

/* ---------------------------------------------------------------- threads */

START_TEST(test_threads)
{
    long online = cpu_usable_cpus(); /* the CPUs this process may run on */
    int asked = _i == 0 ? 0 : _i == 1 ? -3 : _i;
    int want = asked <= 0 ? (int)online : asked;
    struct bare b;
    bare_init(&b);
    bare_open(&b, asked);
    ck_assert_int_eq(b.be.threads, want);
    ck_assert_int_eq(b.be.blas_threads, want); /* products on all of them */
    int (*get)(void) = NULL;
    void *sym = dlsym(b.be.blas.handle, "openblas_get_num_threads");
    ck_assert_ptr_nonnull(sym);
    memcpy(&get, &sym, sizeof sym);
    /* With a kernel that cuts exactly (SkylakeX on AVX-512, the portable Prescott)
     * OpenBLAS runs each call on one thread and the backend splits products itself;
     * with Haswell's, OpenBLAS takes the threads */
    int exact = strcmp(b.be.blas.kernel, "SkylakeX") == 0 ||
                strcmp(b.be.blas.kernel, "Prescott") == 0;
    if (exact || strcmp(b.be.blas.kernel, "Haswell") == 0)
        ck_assert_int_eq(b.be.blas.one_thread_calls, exact);
    ck_assert_int_eq(get(), b.be.blas.one_thread_calls ? 1 : want);
    ck_assert_ptr_nonnull(b.be.blas.set_num_threads);
    cpu_blas_close(&b.be.blas);
    ck_assert_ptr_null(b.be.blas.sgemm);
}
END_TEST

/* threads = 0 takes the CPUs this process may run on, not every online one: held to
 * the one CPU it is on, the default is one thread. */
START_TEST(test_default_threads_follow_affinity)
{
#if defined(__linux__)
    cpu_set_t all, one;
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int cpu = sched_getcpu();
    ck_assert_int_ge(cpu, 0);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    ck_assert_int_eq(cpu_usable_cpus(), 1);
    struct bare b;
    bare_init(&b);
    bare_open(&b, 0);
    ck_assert_int_eq(b.be.threads, 1);
    ck_assert_int_eq(b.be.blas_threads, 1);
    cpu_blas_close(&b.be.blas);
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
    ck_assert_int_eq(cpu_usable_cpus(), CPU_COUNT(&all));
#endif
}
END_TEST

/* The fixture and a second instance in one process: the second finds the library
 * loaded, both work, and closing one leaves the other usable. */
START_TEST(test_two_instances)
{
    unsetenv("OPENBLAS_CORETYPE");
    gan_backend *first = cpu_fixture_new(NULL);
    struct bare b;
    bare_init(&b);
    bare_open(&b, 1);
    ck_assert_str_eq(b.be.blas.kernel, first->blas.kernel);
    if (can_choose(&b.be.blas))
        ck_assert_ptr_nonnull(strstr(b.be.blas.chosen_by, "first loaded"));
    cpu_blas_close(&b.be.blas);
    check_sgemm(&first->blas);
    cpu_fixture_free(first);
}
END_TEST

static Suite *blas_suite(void)
{
    Suite *s = suite_create("blas");
    TCase *tc = tcase_create("library");
    tcase_add_test(tc, test_opened_by_soname);
    suite_add_tcase(s, tc);

    tc = tcase_create("kernel_choice");
    tcase_add_test(tc, test_chosen_from_features);
    tcase_add_loop_test(tc, test_environment_respected, 0,
                        (int)(sizeof forced / sizeof forced[0]));
    tcase_add_test(tc, test_already_loaded);
    tcase_add_test(tc, test_two_instances);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_add_loop_test(tc, test_threads, 0, 4);
    tcase_add_test(tc, test_default_threads_follow_affinity);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(blas_suite());
    /* The tests load the library themselves and must each start without it. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
