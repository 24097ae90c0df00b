/* SPDX-License-Identifier: MIT */
/* plugin_module.h — a plugin module of the build tree opened with dlopen, as the loader
 * would, for the tests of models and loss terms. */
#ifndef GANCTL_TEST_PLUGIN_MODULE_H
#define GANCTL_TEST_PLUGIN_MODULE_H

#include <ganctl/ganctl.h>

struct test_module {
    void *handle;
    const struct gan_plugin *plugin;
};

/* Opens `path` and reads its descriptor; aborts the test unless it loads, is of this
 * ABI's major version and is the plugin `name` of `kind`. */
void test_module_open(struct test_module *m, const char *path, enum gan_plugin_kind kind,
                      const char *name);
/* Closes it (nothing when it was never opened) and clears it. */
void test_module_close(struct test_module *m);

#endif
