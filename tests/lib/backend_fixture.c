/* SPDX-License-Identifier: MIT */
/* backend_fixture.c — loads backend-cpu.so with dlopen, checks its descriptor, and makes
 * a backend instance and a gan_ctx for a test. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "backend_fixture.h"

struct backend_fixture fx;

static const char *host_message(void *arg)
{
    const struct test_host *th = arg;
    return th->last_error;
}

/* Tries each folder of a ':'-separated path list for backend-cpu.so. */
static void *open_module(const char *path_list, char *tried, size_t tried_size)
{
    const char *p = path_list;
    tried[0] = '\0';
    while (p && *p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char file[4096];
        if (len > 0 && len < sizeof file - 32) {
            snprintf(file, sizeof file, "%.*s/backend-cpu.so", (int)len, p);
            void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
            if (h)
                return h;
            size_t used = strlen(tried);
            snprintf(tried + used, tried_size - used, "%s%s", used ? "; " : "", dlerror());
        }
        p = colon ? colon + 1 : NULL;
    }
    return NULL;
}

void backend_fixture_setup(void)
{
    memset(&fx, 0, sizeof fx);
    const char *path = getenv("GANCTL_PLUGIN_PATH");
    char tried[2048];
    fx.handle = open_module(path && *path ? path : "backends/cpu/.libs", tried, sizeof tried);
    ck_assert_msg(fx.handle, "backend-cpu.so did not load (GANCTL_PLUGIN_PATH=%s): %s",
                  path ? path : "(unset)", tried);
    gan_plugin_descriptor_fn get = NULL;
    void *sym = dlsym(fx.handle, GAN_PLUGIN_SYMBOL);
    ck_assert_msg(sym, "backend-cpu.so has no %s", GAN_PLUGIN_SYMBOL);
    memcpy(&get, &sym, sizeof get);
    fx.plugin = get();
    ck_assert_msg(fx.plugin && fx.plugin->abi_major == GAN_ABI_MAJOR
                  && fx.plugin->kind == GAN_PLUGIN_BACKEND && fx.plugin->ops,
                  "backend-cpu.so's descriptor is not a backend of ABI %d", GAN_ABI_MAJOR);
    fx.ops = fx.plugin->ops;

    /* The real host answers every declared setting, with its default when unset. */
    int n = 0;
    for (const struct gan_setting_spec *s = fx.plugin->settings; s && s->name && n < 16; s++) {
        const char *v = strcmp(s->name, "threads") == 0 ? "1" : s->default_value;
        if (!v)
            continue;
        snprintf(fx.settings_text[n], sizeof fx.settings_text[n], "%s=%s", s->name, v);
        fx.settings[n] = fx.settings_text[n];
        n++;
    }
    fx.settings[n] = NULL;
    test_host_init(&fx.th, fx.settings);

    gan_status st = fx.ops->create(&fx.th.host, &fx.be);
    ck_assert_msg(st == GAN_OK && fx.be, "the CPU backend was not created: %s (%s)",
                  fx.th.last_error, gan_status_string(st));
    st = gan_ctx_new(fx.ops, fx.be, &fx.ctx);
    ck_assert_msg(st == GAN_OK && fx.ctx, "gan_ctx_new failed: %s", gan_status_string(st));
    gan_ctx_set_backend_message(fx.ctx, host_message, &fx.th);
    gan_ctx_set_backend_abi_minor(fx.ctx, fx.plugin->abi_minor);
}

void backend_fixture_teardown(void)
{
    gan_ctx_free(fx.ctx);
    if (fx.be && fx.ops->destroy)
        fx.ops->destroy(fx.be);
    if (fx.handle)
        dlclose(fx.handle);
    memset(&fx, 0, sizeof fx);
}

float fixture_value(uint32_t i, uint32_t salt)
{
    uint32_t v = (i + 1u) * 2654435761u ^ salt * 40503u;
    return (float)((int)(v % 2001u) - 1000) / 500.0f;
}

gan_tensor *fixture_param(gan_ctx *ctx, int ndim, const int64_t *dims, const float *v)
{
    gan_tensor *t = gan_tensor_from_host(ctx, GAN_F32, ndim, dims, v);
    ck_assert_msg(t, "%s", gan_ctx_error(ctx));
    gan_tensor_set_requires_grad(t, 1);
    return t;
}

void fixture_host(gan_ctx *ctx, gan_tensor *t, float *v, size_t n)
{
    ck_assert_msg(t, "%s", gan_ctx_error(ctx));
    ck_assert_int_eq(gan_tensor_to_host(ctx, t, v, n), GAN_OK);
}
