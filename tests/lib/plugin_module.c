/* SPDX-License-Identifier: MIT */
/* plugin_module.c — opening a plugin module of the build tree for a test. */
#include "config.h"

#include <dlfcn.h>
#include <string.h>

#include <check.h>

#include "plugin_module.h"

void test_module_open(struct test_module *m, const char *path, enum gan_plugin_kind kind,
                      const char *name)
{
    m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(m->handle, "%s did not load: %s", path, dlerror());
    void *sym = dlsym(m->handle, GAN_PLUGIN_SYMBOL);
    ck_assert_msg(sym, "%s has no %s", path, GAN_PLUGIN_SYMBOL);
    gan_plugin_descriptor_fn get;
    memcpy(&get, &sym, sizeof get);
    m->plugin = get();
    ck_assert_ptr_nonnull(m->plugin);
    ck_assert_int_eq(m->plugin->abi_major, GAN_ABI_MAJOR);
    ck_assert_int_eq(m->plugin->kind, kind);
    ck_assert_str_eq(m->plugin->name, name);
}

void test_module_close(struct test_module *m)
{
    if (m->handle)
        dlclose(m->handle);
    memset(m, 0, sizeof *m);
}
