/* SPDX-License-Identifier: MIT */
/* check_loader.c — the plugin loader against real test modules (tests/plugins): ABI
 * checks, copied tables and defaults, search order, listing, and the one-line errors. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/plugin_loader.h"
#include "plugin/recipe_instance.h"

#define PLUGINS GAN_TEST_PLUGIN_DIR "/.libs"
#define ORDER1 GAN_TEST_PLUGIN_DIR "/order1/.libs"
#define ORDER2 GAN_TEST_PLUGIN_DIR "/order2/.libs"
#define ORDER3 GAN_TEST_PLUGIN_DIR "/order3/.libs"
#define NO_PKGLIBDIR "/nonexistent/ganctl-test/pkglib"

/* ------------------------------------------------------------------ helpers */

static gan_loader *loader_of(const char *const *dirs, size_t n, const char *env, const char *pkglib)
{
    gan_loader *l = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_loader_new(&l, dirs, n, env, pkglib, &err), GAN_OK);
    return l;
}

static gan_loader *test_loader(void)
{
    static const char *const dirs[] = { PLUGINS };
    return loader_of(dirs, 1, NULL, NO_PKGLIBDIR);
}

#define assert_contains(text, phrase) \
    ck_assert_msg(strstr((text), (phrase)) != NULL, "expected \"%s\" in \"%s\"", (phrase), (text))

static void assert_one_line(const char *text)
{
    ck_assert_msg(strchr(text, '\n') == NULL, "message spans lines: %s", text);
    ck_assert_msg(text[0] != '\0', "empty message");
}

static size_t occurrences(const char *text, const char *phrase)
{
    size_t n = 0;
    for (const char *p = strstr(text, phrase); p; p = strstr(p + 1, phrase))
        n++;
    return n;
}

/* A log sink that keeps what reached it. */
struct captured {
    int count;
    enum gan_log_level level[8];
    char line[8][512];
};

static void capture(void *ctx, enum gan_log_level level, const char *line)
{
    struct captured *c = ctx;
    if (c->count < 8) {
        c->level[c->count] = level;
        snprintf(c->line[c->count], sizeof c->line[0], "%s", line);
    }
    c->count++;
}

static struct gan_module *open_ok(const gan_loader *l, const char *name)
{
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_loader_open(l, GAN_PLUGIN_BACKEND, name, &m, &err);
    ck_assert_msg(st == GAN_OK, "loading %s: %s", name, err.message);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* A configuration whose backend group has been checked against the module's spec. */
static gan_config *config_for(const struct gan_module *m, const char *const *sets)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    for (const char *const *s = sets; s && *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    gan_status st = gan_config_apply_plugin(cfg, "backend", "backend under test",
                                            m->plugin.settings, &err);
    ck_assert_msg(st == GAN_OK, "%s", err.message);
    return cfg;
}

/* The module's own descriptor, fetched with dlsym as any program could. */
static const struct gan_plugin *raw_descriptor(const struct gan_module *m)
{
    void *h = dlopen(m->path, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    void *sym = dlsym(h, GAN_PLUGIN_SYMBOL);
    ck_assert_ptr_nonnull(sym);
    gan_plugin_descriptor_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    const struct gan_plugin *d = fn();
    dlclose(h); /* drops only the reference taken here */
    return d;
}

/* ------------------------------------------------------------------ a good module */

START_TEST(good_module_loads)
{
    gan_loader *l = test_loader();
    struct gan_module *m = open_ok(l, "good");

    ck_assert_str_eq(m->path, PLUGINS "/backend-good.so");
    ck_assert_int_eq(m->plugin.abi_major, GAN_ABI_MAJOR);
    ck_assert_int_eq(m->plugin.abi_minor, GAN_ABI_MINOR);
    ck_assert_int_eq(m->plugin.kind, GAN_PLUGIN_BACKEND);
    ck_assert_str_eq(m->plugin.name, "good");
    ck_assert_str_eq(m->plugin.version, "1.2.3");
    ck_assert_str_eq(m->plugin.summary, "a well-formed test backend");
    ck_assert_ptr_nonnull(m->plugin.settings);
    ck_assert_str_eq(m->plugin.settings[0].name, "threads");
    ck_assert_ptr_null(m->plugin.settings[4].name);

    /* The host works from its own copy of the table, identical slot for slot. */
    const struct gan_plugin *d = raw_descriptor(m);
    const struct gan_backend_ops *theirs = d->ops;
    ck_assert_ptr_eq(m->plugin.ops, &m->backend);
    ck_assert_ptr_ne(m->plugin.ops, d->ops);
    size_t first = offsetof(struct gan_backend_ops, create);
    size_t last = offsetof(struct gan_backend_ops, synchronize);
    ck_assert_int_eq(memcmp((const char *)&m->backend + first, (const char *)theirs + first,
                            last - first), 0);
    ck_assert_ptr_eq(m->backend.gemm, theirs->gemm);

    /* It left synchronize NULL; the core filled in a no-op. */
    ck_assert_ptr_null(theirs->synchronize);
    ck_assert_ptr_nonnull(m->backend.synchronize);
    ck_assert_int_eq(m->backend.synchronize(NULL), GAN_OK);

    gan_module_close(m);
    gan_loader_free(l);
}
END_TEST

START_TEST(good_backend_defaults)
{
    gan_loader *l = test_loader();
    struct gan_module *m = open_ok(l, "good");
    gan_config *cfg = config_for(m, NULL);
    struct captured seen = { 0 };
    struct gan_log log;
    gan_log_init(&log, capture, &seen); /* level info: the module's debug line is dropped */
    struct gan_backend_instance *inst = NULL;
    struct gan_error err;
    gan_error_clear(&err);

    ck_assert_int_eq(gan_backend_instance_new(m, cfg, &log, &inst, &err), GAN_OK);
    ck_assert_str_eq(gan_backend_instance_describe(inst),
                     "good: threads=3 scale=0.5 verbose=false label=plain "
                     "undeclared=not-found wrong-type=invalid");
    ck_assert_int_eq(seen.count, 1);
    ck_assert_int_eq(seen.level[0], GAN_LOG_INFO);
    ck_assert_str_eq(seen.line[0], "backend good: created with 3 threads");

    /* Its instance came from host->alloc, which counts. */
    ck_assert_uint_eq(inst->host.live_blocks, 1);
    ck_assert_uint_gt(inst->host.live_bytes, 0);

    /* A kernel reached through the copied table reports through host->fail. */
    struct gan_gemm g;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(m->backend.gemm(inst->be, &g), GAN_ERR_UNSUPPORTED);
    ck_assert_str_eq(inst->host.error.message, "fake backend: gemm is not implemented");

    gan_backend_instance_free(inst);
    gan_config_free(cfg);
    gan_module_close(m);
    gan_loader_free(l);
}
END_TEST

START_TEST(good_backend_configured)
{
    static const char *const sets[] = {
        "backend.threads=7", "backend.scale=2", "backend.verbose=true", "backend.label=fancy", NULL
    };
    gan_loader *l = test_loader();
    struct gan_module *m = open_ok(l, "good");
    gan_config *cfg = config_for(m, sets);
    struct captured seen = { 0 };
    struct gan_log log;
    gan_log_init(&log, capture, &seen);
    log.level = GAN_LOG_DEBUG;
    struct gan_backend_instance *inst = NULL;
    struct gan_error err;
    gan_error_clear(&err);

    ck_assert_int_eq(gan_backend_instance_new(m, cfg, &log, &inst, &err), GAN_OK);
    ck_assert_str_eq(gan_backend_instance_describe(inst),
                     "good: threads=7 scale=2 verbose=true label=fancy "
                     "undeclared=not-found wrong-type=invalid");
    ck_assert_int_eq(seen.count, 2);
    ck_assert_str_eq(seen.line[0], "backend good: created with 7 threads");
    ck_assert_int_eq(seen.level[1], GAN_LOG_DEBUG);
    ck_assert_str_eq(seen.line[1], "backend good: debug detail 42");

    gan_backend_instance_free(inst);
    gan_config_free(cfg);
    gan_module_close(m);
    gan_loader_free(l);
}
END_TEST

/* ------------------------------------------------------------------ ABI versions */

static gan_status open_status(const char *name, struct gan_error *err)
{
    gan_loader *l = test_loader();
    struct gan_module *m = NULL;
    gan_error_clear(err);
    gan_status st = gan_loader_open(l, GAN_PLUGIN_BACKEND, name, &m, err);
    ck_assert_ptr_null(m);
    gan_loader_free(l);
    return st;
}

START_TEST(abi_major_rejected)
{
    struct gan_error err;
    ck_assert_int_eq(open_status("abimajor", &err), GAN_ERR_ABI);
    char expected[512];
    snprintf(expected, sizeof expected,
             PLUGINS "/backend-abimajor.so: built for plugin ABI %d.0, this ganctl has ABI %d.%d: "
             "rebuild the plugin against these headers",
             GAN_ABI_MAJOR + 1, GAN_ABI_MAJOR, GAN_ABI_MINOR);
    ck_assert_str_eq(err.message, expected);
}
END_TEST

START_TEST(abi_newer_minor_rejected)
{
    struct gan_error err;
    ck_assert_int_eq(open_status("abinewer", &err), GAN_ERR_ABI);
    char expected[512];
    snprintf(expected, sizeof expected,
             PLUGINS "/backend-abinewer.so: built for plugin ABI %d.%d, this ganctl has ABI %d.%d: "
             "rebuild the plugin against these headers",
             GAN_ABI_MAJOR, GAN_ABI_MINOR + 1, GAN_ABI_MAJOR, GAN_ABI_MINOR);
    ck_assert_str_eq(err.message, expected);
}
END_TEST

START_TEST(abi_older_minor_accepted)
{
    gan_loader *l = test_loader();
    struct gan_module *m = open_ok(l, "abiolder");
    const struct gan_plugin *d = raw_descriptor(m);

    /* Its struct ends before `settings`: what lies beyond must read as zero. */
    ck_assert_uint_lt(d->struct_size, sizeof(struct gan_plugin));
    ck_assert_ptr_nonnull(d->settings);
    ck_assert_ptr_null(m->plugin.settings);
    for (size_t i = 0; i < sizeof m->plugin.reserved / sizeof m->plugin.reserved[0]; i++)
        ck_assert_ptr_null(m->plugin.reserved[i]);
    ck_assert_str_eq(m->plugin.name, "abiolder");

    /* Its table ends before `synchronize`: the core's default is used, not the bytes after. */
    const struct gan_backend_ops *theirs = d->ops;
    ck_assert_ptr_nonnull(theirs->synchronize);
    ck_assert_ptr_ne(m->backend.synchronize, theirs->synchronize);
    ck_assert_uint_eq(m->backend.struct_size, sizeof(struct gan_backend_ops));

    /* And it works: created with no settings, synchronize is the no-op. */
    gan_config *cfg = config_for(m, NULL);
    struct gan_backend_instance *inst = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_backend_instance_new(m, cfg, NULL, &inst, &err), GAN_OK);
    ck_assert_int_eq(m->backend.synchronize(inst->be), GAN_OK);
    ck_assert_str_eq(inst->host.error.message, "");
    gan_backend_instance_free(inst);
    gan_config_free(cfg);
    gan_module_close(m);
    gan_loader_free(l);
}
END_TEST

/* ------------------------------------------------------------------ broken modules */

struct broken_case {
    const char *name;
    gan_status status;
    const char *message;          /* after the module's path */
};

static const struct broken_case broken_cases[] = {
    { "nosym", GAN_ERR_NOT_FOUND,
      ": no symbol ganctl_plugin_descriptor (not a ganctl plugin): remove it from the plugin "
      "folder, or define its descriptor with GAN_DEFINE_PLUGIN" },
    { "noslot", GAN_ERR_ABI,
      ": required slot gemm missing from its backend ops table: implement it, or rebuild the "
      "plugin against these headers" },
    { "wrongkind", GAN_ERR_INVALID,
      ": declares scaler \"wrongkind\", but its file name says backend \"wrongkind\": rename "
      "the file to scaler-wrongkind.so" },
    { "wrongname", GAN_ERR_INVALID,
      ": declares backend \"other\", but its file name says backend \"wrongname\": rename the "
      "file to backend-other.so" },
    { "nulldesc", GAN_ERR_INVALID, ": ganctl_plugin_descriptor() returned NULL: fix the plugin" },
};

START_TEST(broken_module_rejected)
{
    const struct broken_case *c = &broken_cases[_i];
    struct gan_error err;
    ck_assert_int_eq(open_status(c->name, &err), c->status);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s/backend-%s.so%s", PLUGINS, c->name, c->message);
    ck_assert_str_eq(err.message, expected);
    assert_one_line(err.message);
}
END_TEST

/* ------------------------------------------------------------------ scalers */

#define SCALERS GAN_TEST_PLUGIN_DIR "/scalers/.libs"

/* A scaler's table is copied like every other kind's: the host's copy has the host's
 * size, what lies beyond the plugin's struct_size stays NULL even when the plugin's
 * memory holds more, and the required slots must be there. */
START_TEST(scaler_tables_copied_and_checked)
{
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_module_open(SCALERS "/scaler-short.so", GAN_PLUGIN_SCALER, "short", &m,
                                  &err) == GAN_OK, "%s", err.message);
    const struct gan_plugin *d = raw_descriptor(m);
    const struct gan_scaler_ops *theirs = d->ops;
    ck_assert_ptr_eq(m->plugin.ops, &m->scaler);
    ck_assert_uint_eq(m->scaler.struct_size, sizeof(struct gan_scaler_ops));
    ck_assert_ptr_eq(m->scaler.create, theirs->create);
    ck_assert_ptr_eq(m->scaler.update, theirs->update);
    ck_assert_ptr_eq(m->scaler.load_state, theirs->load_state);
    ck_assert_ptr_nonnull(theirs->describe);
    ck_assert_ptr_null(m->scaler.describe);
    gan_scaler *sc = NULL;
    ck_assert_int_eq(m->scaler.create(NULL, &sc), GAN_OK);
    ck_assert_double_eq(m->scaler.scale(sc), 1.0);
    gan_module_close(m);

    m = NULL;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_module_open(SCALERS "/scaler-noslot.so", GAN_PLUGIN_SCALER, "noslot", &m,
                                     &err), GAN_ERR_ABI);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, SCALERS "/scaler-noslot.so: required slot update missing from "
                     "its scaler ops table: implement it, or rebuild the plugin against these headers");
    assert_one_line(err.message);
}
END_TEST

/* A scaler without save_state and load_state loads, and the core's stand-ins save it as
 * its name, version 1 and no values, and load exactly that; anything else is refused with
 * the status a load_state would give. Half the pair is refused when the module loads. */
START_TEST(stateless_scaler_state)
{
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_module_open(SCALERS "/scaler-stateless.so", GAN_PLUGIN_SCALER, "stateless",
                                  &m, &err) == GAN_OK, "%s", err.message);
    ck_assert_ptr_null(m->scaler.save_state);
    ck_assert_ptr_null(m->scaler.load_state);
    gan_scaler *sc = NULL;
    ck_assert_int_eq(m->scaler.create(NULL, &sc), GAN_OK);
    struct gan_plugin_host h;
    gan_plugin_host_init(&h, "scaler stateless", "scaler", NULL, NULL, NULL);

    struct gan_scaler_state st;
    memset(&st, 0x5a, sizeof st);  /* every byte must be written */
    ck_assert_int_eq(gan_scaler_save_state(m, sc, &st), GAN_OK);
    ck_assert_str_eq(st.scaler, "stateless");
    ck_assert_int_eq(st.version, 1);
    ck_assert_uint_eq(st.count, 0);
    ck_assert_int_eq(st.values[0].type, 0);
    ck_assert_int_eq(gan_scaler_load_state(m, sc, &h.host, &st), GAN_OK);

    struct gan_scaler_state bad = st;
    snprintf(bad.values[0].name, sizeof bad.values[0].name, "scale");
    bad.values[0].type = GAN_SCALER_FLOAT64;
    bad.values[0].f = 1024;
    bad.count = 1;
    ck_assert_int_eq(gan_scaler_load_state(m, sc, &h.host, &bad), GAN_ERR_FORMAT);
    ck_assert_str_eq(h.error.message, "the saved state holds 1 value, but this build of stateless "
                     "keeps no state: resume with the build that saved it");
    bad = st;
    bad.version = 2;
    ck_assert_int_eq(gan_scaler_load_state(m, sc, &h.host, &bad), GAN_ERR_UNSUPPORTED);
    ck_assert_str_eq(h.error.message, "state version 2 is newer than this build of stateless, "
                     "which keeps no state, reads (1)");
    bad = st;
    snprintf(bad.scaler, sizeof bad.scaler, "static");
    ck_assert_int_eq(gan_scaler_load_state(m, sc, &h.host, &bad), GAN_ERR_INVALID);
    ck_assert_str_eq(h.error.message, "the state is scaler \"static\"'s, not stateless's");
    gan_module_close(m);

    /* A scaler with its own pair goes through it: the test module's save names itself. */
    m = NULL;
    ck_assert_msg(gan_module_open(SCALERS "/scaler-short.so", GAN_PLUGIN_SCALER, "short", &m,
                                  &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(m->scaler.create(NULL, &sc), GAN_OK);
    ck_assert_int_eq(gan_scaler_save_state(m, sc, &st), GAN_OK);
    ck_assert_str_eq(st.scaler, "short");
    snprintf(st.scaler, sizeof st.scaler, "other");
    ck_assert_int_eq(gan_scaler_load_state(m, sc, &h.host, &st), GAN_ERR_INVALID);
    gan_module_close(m);

    m = NULL;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_module_open(SCALERS "/scaler-halfstate.so", GAN_PLUGIN_SCALER,
                                     "halfstate", &m, &err), GAN_ERR_ABI);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, SCALERS "/scaler-halfstate.so: its scaler ops table sets "
                     "save_state but not load_state: set both, or leave both NULL for a scaler "
                     "without state");
    assert_one_line(err.message);
}
END_TEST

/* ------------------------------------------------------------------ recipes */

#define RECIPES GAN_TEST_PLUGIN_DIR "/recipes/.libs"

static const struct gan_plugin_info *find_info(const struct gan_plugin_list *list,
                                               const char *path);

static gan_status open_recipe(const char *name, struct gan_module **m, struct gan_error *err)
{
    char path[600];
    snprintf(path, sizeof path, RECIPES "/recipe-%s.so", name);
    *m = NULL;
    gan_error_clear(err);
    return gan_module_open(path, GAN_PLUGIN_RECIPE, name, m, err);
}

/* A recipe's table is copied like a scaler's: the host's size, nothing read beyond the
 * plugin's struct_size, and the required slots (create, plan, scales) checked. */
START_TEST(recipe_tables_copied_and_checked)
{
    struct gan_module *m;
    struct gan_error err;
    ck_assert_msg(open_recipe("unit", &m, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(m->plugin.kind, GAN_PLUGIN_RECIPE);
    const struct gan_plugin *d = raw_descriptor(m);
    const struct gan_recipe_ops *theirs = d->ops;
    ck_assert_ptr_eq(m->plugin.ops, &m->recipe);
    ck_assert_uint_eq(m->recipe.struct_size, sizeof(struct gan_recipe_ops));
    ck_assert_ptr_eq(m->recipe.create, theirs->create);
    ck_assert_ptr_eq(m->recipe.plan, theirs->plan);
    ck_assert_ptr_eq(m->recipe.scales, theirs->scales);
    ck_assert_ptr_eq(m->recipe.load_state, theirs->load_state);
    ck_assert_ptr_null(m->recipe.observe);
    ck_assert_ptr_nonnull(theirs->describe);
    ck_assert_ptr_null(m->recipe.describe);
    gan_recipe *rc = NULL;
    ck_assert_int_eq(m->recipe.create(NULL, &rc), GAN_OK);
    float scale = 0;
    char reason[96] = "";
    ck_assert_int_eq(m->recipe.scales(rc, NULL, NULL, NULL, &scale, reason), GAN_OK);
    ck_assert_float_eq(scale, 1.0f);
    ck_assert_str_eq(reason, "always 1");
    gan_module_close(m);

    ck_assert_int_eq(open_recipe("noplan", &m, &err), GAN_ERR_ABI);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, RECIPES "/recipe-noplan.so: required slot plan missing from "
                     "its recipe ops table: implement it, or rebuild the plugin against these headers");
    assert_one_line(err.message);
}
END_TEST

/* Both state slots or neither; and a name that fits a checkpoint's, stateless or not. */
START_TEST(recipe_state_pair_and_name)
{
    struct gan_module *m;
    struct gan_error err;
    ck_assert_msg(open_recipe("stateless", &m, &err) == GAN_OK, "%s", err.message);
    ck_assert_ptr_null(m->recipe.save_state);
    ck_assert_ptr_null(m->recipe.load_state);
    gan_module_close(m);

    ck_assert_int_eq(open_recipe("halfstate", &m, &err), GAN_ERR_ABI);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, RECIPES "/recipe-halfstate.so: its recipe ops table sets "
                     "save_state but not load_state: set both, or leave both NULL for a recipe "
                     "without state");
    assert_one_line(err.message);

    ck_assert_uint_eq(strlen("name-of-exactly-thirty-two-bytes"), GAN_RECIPE_NAME_MAX);
    ck_assert_int_eq(open_recipe("name-of-exactly-thirty-two-bytes", &m, &err), GAN_ERR_INVALID);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, RECIPES "/recipe-name-of-exactly-thirty-two-bytes.so: the "
                     "recipe name \"name-of-exactly-thirty-two-bytes\" is longer than a "
                     "checkpoint keeps (31 bytes): shorten it");
}
END_TEST

/* The loader finds recipes by their kind's word, and the listing names their settings
 * by the group they live in, fp8.NAME. */
START_TEST(recipe_found_and_listed)
{
    static const char *const dirs[] = { RECIPES };
    gan_loader *l = loader_of(dirs, 1, NULL, NO_PKGLIBDIR);
    ck_assert_int_eq(gan_plugin_kind_parse("recipe"), GAN_PLUGIN_RECIPE);
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_loader_open(l, GAN_PLUGIN_RECIPE, "unit", &m, &err) == GAN_OK, "%s",
                  err.message);
    ck_assert_str_eq(m->path, RECIPES "/recipe-unit.so");
    gan_module_close(m);

    struct gan_plugin_list list;
    ck_assert_int_eq(gan_loader_scan(l, &list, &err), GAN_OK);
    ck_assert_uint_eq(list.count, 5);
    const struct gan_plugin_info *unit = find_info(&list, RECIPES "/recipe-unit.so");
    ck_assert_str_eq(unit->kind, "recipe");
    ck_assert_ptr_null(unit->error);
    ck_assert_int_eq(unit->is_backend, 0);
    ck_assert_str_eq(unit->summary, "a recipe for the loader's tests");
    ck_assert_uint_eq(unit->setting_count, 1);
    ck_assert_str_eq(unit->settings[0].name, "fp8.unit.factor");
    ck_assert_str_eq(unit->settings[0].default_value, "2");
    const struct gan_plugin_info *half = find_info(&list, RECIPES "/recipe-halfstate.so");
    assert_contains(half->error, "sets save_state but not load_state");
    gan_plugin_list_clear(&list);
    gan_loader_free(l);
}
END_TEST

/* What a state's put received. */
struct put_record {
    int calls;
    char name[64];
    double first;
    size_t count;
    gan_status answer;
};

static gan_status record_put(void *arg, const char *name, const double *values, size_t count)
{
    struct put_record *r = arg;
    r->calls++;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->first = count ? values[0] : 0;
    r->count = count;
    return r->answer;
}

/* An instance is created with the group fp8.NAME of the configuration, and its state
 * goes through the module's pair or, for a recipe without state, the core's stand-ins:
 * nothing saved, nothing accepted. Another recipe's state is refused either way. */
START_TEST(recipe_instance_and_state)
{
    struct gan_module *m;
    struct gan_error err;
    ck_assert_msg(open_recipe("unit", &m, &err) == GAN_OK, "%s", err.message);
    gan_config *cfg = NULL;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    ck_assert_int_eq(gan_config_set(cfg, "fp8.unit.factor=5", &err), GAN_OK);
    char group[64];
    gan_recipe_group(group, sizeof group, "unit");
    ck_assert_str_eq(group, "fp8.unit");
    ck_assert_msg(gan_config_apply_plugin(cfg, group, "recipe \"unit\"", m->plugin.settings,
                                          &err) == GAN_OK, "%s", err.message);
    struct gan_recipe_instance *inst = NULL;
    ck_assert_msg(gan_recipe_instance_new(m, cfg, NULL, &inst, &err) == GAN_OK, "%s",
                  err.message);
    ck_assert_ptr_nonnull(inst->rc);
    ck_assert_str_eq(inst->host.group, "fp8.unit");
    ck_assert_str_eq(inst->host.label, "recipe unit");
    long long factor = 0;
    ck_assert_int_eq(inst->host.host.get_int(inst->host.host.ctx, "factor", &factor), GAN_OK);
    ck_assert_int_eq(factor, 5);
    /* Its describe lies beyond its table: the instance is described by its name. */
    ck_assert_str_eq(inst->description, "unit");

    struct put_record rec = { .answer = GAN_OK };
    ck_assert_int_eq(gan_recipe_instance_save_state(inst, record_put, &rec, &err), GAN_OK);
    ck_assert_int_eq(rec.calls, 1);
    ck_assert_str_eq(rec.name, "calls");
    ck_assert_uint_eq(rec.count, 1);
    ck_assert_double_eq(rec.first, 7);
    /* A failing put's status comes back as it is. */
    rec.answer = GAN_ERR_IO;
    ck_assert_int_eq(gan_recipe_instance_save_state(inst, record_put, &rec, &err), GAN_ERR_IO);

    static const double seven = 7;
    struct gan_recipe_array a[2] = { { "calls", &seven, 1 }, { "calls", &seven, 1 } };
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "unit", a, 1, &err), GAN_OK);
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "unit", a, 2, &err), GAN_ERR_FORMAT);
    ck_assert_str_eq(err.message, "the checkpoint's state of recipe \"unit\" has the array "
                     "\"calls\" twice");
    a[0].name = "calls;rm";
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "unit", a, 1, &err), GAN_ERR_FORMAT);
    assert_contains(err.message, "has an array whose name is not one a recipe writes");
    a[0].name = "other";
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "unit", a, 1, &err), GAN_ERR_FORMAT);
    assert_contains(err.message, "recipe \"unit\" (" RECIPES "/recipe-unit.so) refused the "
                    "checkpoint's state: ");
    a[0].name = "calls";
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "delayed", a, 1, &err), GAN_ERR_INVALID);
    ck_assert_str_eq(err.message, "the checkpoint's FP8 state belongs to recipe \"delayed\", not "
                     "to recipe \"unit\": resume with that recipe (fp8.recipe), or start afresh");
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "a\"b", a, 1, &err), GAN_ERR_INVALID);
    assert_contains(err.message, "belongs to another recipe, not to recipe \"unit\"");
    gan_recipe_instance_free(inst);
    gan_module_close(m);

    ck_assert_msg(open_recipe("stateless", &m, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_recipe_instance_new(m, cfg, NULL, &inst, &err) == GAN_OK, "%s",
                  err.message);
    rec.calls = 0;
    ck_assert_int_eq(gan_recipe_instance_save_state(inst, record_put, &rec, &err), GAN_OK);
    ck_assert_int_eq(rec.calls, 0);
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "stateless", NULL, 0, &err), GAN_OK);
    ck_assert_int_eq(gan_recipe_instance_load_state(inst, "stateless", a, 1, &err),
                     GAN_ERR_FORMAT);
    ck_assert_str_eq(err.message, "the checkpoint holds 1 state array (\"calls\" first) for "
                     "recipe \"stateless\", which keeps no state in this build: resume with the "
                     "build that saved it");
    gan_recipe_instance_free(inst);
    gan_module_close(m);
    gan_config_free(cfg);
}
END_TEST

/* A scratch folder for files the build does not make. */
static void scratch_dir(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/ganctl-loader-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void remove_dir(const char *dir, const char *const *names)
{
    char path[1024];
    for (const char *const *n = names; *n; n++) {
        snprintf(path, sizeof path, "%s/%s", dir, *n);
        unlink(path);
    }
    rmdir(dir);
}

START_TEST(text_file_is_not_a_module)
{
    static const char *const files[] = { "backend-junk.so", NULL };
    char dir[512];
    scratch_dir(dir, sizeof dir);
    put_file(dir, "backend-junk.so", "this is not a shared object\n");
    const char *const dirs[] = { dir };
    gan_loader *l = loader_of(dirs, 1, NULL, NO_PKGLIBDIR);
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);

    ck_assert_int_eq(gan_loader_open(l, GAN_PLUGIN_BACKEND, "junk", &m, &err), GAN_ERR_NOT_FOUND);
    char start[600];
    snprintf(start, sizeof start, "%s/backend-junk.so: not a loadable module (", dir);
    ck_assert_msg(strncmp(err.message, start, strlen(start)) == 0, "got: %s", err.message);
    assert_contains(err.message, "): remove it from the plugin folder or rebuild it");
    /* dlerror() repeats the path; the message names it once. */
    ck_assert_uint_eq(occurrences(err.message, "backend-junk.so"), 1);
    assert_one_line(err.message);

    gan_loader_free(l);
    remove_dir(dir, files);
}
END_TEST

/* ------------------------------------------------------------------ search path */

START_TEST(missing_module_names_folders)
{
    static const char *const dirs[] = { "/nonexistent/a", "/nonexistent/b" };
    gan_loader *l = loader_of(dirs, 2, "/nonexistent/env", "/nonexistent/pkglib");
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_loader_open(l, GAN_PLUGIN_BACKEND, "nope", &m, &err), GAN_ERR_NOT_FOUND);
    ck_assert_str_eq(err.message,
                     "backend \"nope\" not found: looked for backend-nope.so in /nonexistent/a, "
                     "/nonexistent/b, /nonexistent/env, /nonexistent/pkglib; run ganctl "
                     "--list-plugins to see what is installed");
    gan_loader_free(l);
}
END_TEST

START_TEST(search_path_parts)
{
    static const char *const dirs[] = { "/x/", "/y" };
    gan_loader *l = loader_of(dirs, 2, "::/y:/z//::/w", "/x");
    static const char *const expected[] = { "/x", "/y", "/z", "/w" };
    ck_assert_uint_eq(gan_loader_dir_count(l), 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(gan_loader_dir_at(l, i), expected[i]);
    ck_assert_ptr_null(gan_loader_dir_at(l, 4));
    gan_loader_free(l);
}
END_TEST

START_TEST(unsafe_name_refused)
{
    gan_loader *l = test_loader();
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_loader_open(l, GAN_PLUGIN_BACKEND, "../.libs/backend-good", &m, &err),
                     GAN_ERR_CONFIG);
    assert_contains(err.message, "\"../.libs/backend-good\" is not a valid backend name");
    ck_assert_ptr_null(m);
    gan_loader_free(l);
}
END_TEST

/* Which copy of backend-order.so wins for each arrangement of the three sources. */
struct order_case {
    const char *plugin_dirs[2];
    size_t dir_count;
    const char *env;
    const char *pkglib;
    const char *winner;
    const char *folder;
};

static const struct order_case order_cases[] = {
    { { ORDER1 }, 1, ORDER2, ORDER3, "first", ORDER1 },      /* --plugin-dir beats the rest */
    { { NULL }, 0, ORDER2, ORDER3, "second", ORDER2 },       /* GANCTL_PLUGIN_PATH beats pkglibdir */
    { { NULL }, 0, NULL, ORDER3, "third", ORDER3 },          /* pkglibdir last */
    { { ORDER3, ORDER1 }, 2, ORDER2, NULL, "third", ORDER3 }, /* --plugin-dir in the order given */
    { { NULL }, 0, ORDER3 ":" ORDER2, ORDER1, "third", ORDER3 }, /* the variable, left to right */
    { { "/nonexistent/d" }, 1, "/nonexistent/e", ORDER2, "second", ORDER2 }, /* gaps skipped */
};

START_TEST(search_order)
{
    const struct order_case *c = &order_cases[_i];
    gan_loader *l = loader_of(c->plugin_dirs, c->dir_count, c->env, c->pkglib);
    struct gan_module *m = open_ok(l, "order");
    ck_assert_str_eq(m->plugin.version, c->winner);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s/backend-order.so", c->folder);
    ck_assert_str_eq(m->path, expected);
    gan_module_close(m);
    gan_loader_free(l);
}
END_TEST

/* ------------------------------------------------------------------ slots */

#define NOCONV GAN_TEST_PLUGIN_DIR "/noconv/.libs"

/* backend.h's list names every slot in the table's order, and says which are required. */
START_TEST(backend_slot_names)
{
    ck_assert_str_eq(gan_backend_slot_name(GAN_BACKEND_SLOT_CREATE), "create");
    ck_assert_str_eq(gan_backend_slot_name(GAN_BACKEND_SLOT_GEMM), "gemm");
    ck_assert_str_eq(gan_backend_slot_name(GAN_BACKEND_SLOT_SYNCHRONIZE), "synchronize");
    ck_assert_str_eq(gan_backend_slot_name(GAN_BACKEND_SLOT_FP8_STATS), "fp8_stats");
    ck_assert_str_eq(gan_backend_slot_name(GAN_BACKEND_SLOT_GEMM_FP8), "gemm_fp8");
    ck_assert_str_eq(gan_backend_slot_name(GAN_BACKEND_SLOT_BINARY_ALPHA), "binary_alpha");
    ck_assert_int_eq(GAN_BACKEND_SLOT_BINARY_ALPHA + 1, GAN_BACKEND_SLOT_COUNT);
    ck_assert_ptr_null(gan_backend_slot_name(GAN_BACKEND_SLOT_COUNT));
    enum gan_backend_slot slot;
    ck_assert(gan_backend_slot_parse("conv2d_backward_filter", &slot));
    ck_assert_int_eq(slot, GAN_BACKEND_SLOT_CONV2D_BACKWARD_FILTER);
    ck_assert(!gan_backend_slot_parse("conv3d_forward", &slot));
    ck_assert(!gan_backend_slot_parse(NULL, &slot));
}
END_TEST

/* A backend without the optional convolutions loads; it supports every required slot
 * and synchronize (the core's default), not the convolutions, and a model that lists
 * them is refused with one line naming the slot, the backend and the model. */
START_TEST(backend_supports)
{
    struct gan_module *noconv = NULL, *good = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_module_open(NOCONV "/backend-noconv.so", GAN_PLUGIN_BACKEND, "noconv",
                                  &noconv, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(gan_module_open(PLUGINS "/backend-good.so", GAN_PLUGIN_BACKEND, "good",
                                     &good, &err), GAN_OK);
    ck_assert(gan_backend_supports(noconv, GAN_BACKEND_SLOT_GEMM));
    ck_assert(gan_backend_supports(noconv, GAN_BACKEND_SLOT_SYNCHRONIZE));
    ck_assert(!gan_backend_supports(noconv, GAN_BACKEND_SLOT_CONV2D_FORWARD));
    ck_assert(!gan_backend_supports(noconv, GAN_BACKEND_SLOT_CONV2D_BACKWARD_DATA));
    ck_assert(!gan_backend_supports(noconv, GAN_BACKEND_SLOT_CONV2D_BACKWARD_FILTER));
    ck_assert(!gan_backend_supports(noconv, GAN_BACKEND_SLOT_COUNT));
    /* the FP8 products (ABI 1.6) are optional: a module without them loads */
    ck_assert(!gan_backend_supports(noconv, GAN_BACKEND_SLOT_FP8_QUANTIZE));
    ck_assert(!gan_backend_supports(good, GAN_BACKEND_SLOT_GEMM_FP8));
    ck_assert(gan_backend_supports(good, GAN_BACKEND_SLOT_CONV2D_FORWARD));

    static const char *const convolves[] = { "gemm", "conv2d_forward", NULL };
    static const char *const unknown[] = { "conv3d_forward", NULL };
    struct gan_module model;
    memset(&model, 0, sizeof model);
    model.path = "/m/model-conv.so";
    model.plugin.name = "conv";
    ck_assert_int_eq(gan_backend_check_model(noconv, &model, "critic", &err), GAN_OK);
    model.model.backend_slots = convolves;
    ck_assert_int_eq(gan_backend_check_model(good, &model, "critic", &err), GAN_OK);
    ck_assert_int_eq(gan_backend_check_model(noconv, &model, "critic", &err), GAN_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.message, "backend \"noconv\" (" NOCONV "/backend-noconv.so) has no "
                                  "conv2d_forward, which the critic's model \"conv\" needs: choose "
                                  "a backend that has it (ganctl --list-plugins) or another model");
    model.model.backend_slots = unknown;
    ck_assert_int_eq(gan_backend_check_model(good, &model, "generator", &err), GAN_ERR_INVALID);
    assert_contains(err.message, "the generator's model \"conv\" (/m/model-conv.so) lists "
                                 "\"conv3d_forward\" in its backend_slots");
    gan_module_close(noconv);
    gan_module_close(good);
}
END_TEST

/* ------------------------------------------------------------------ devices */

START_TEST(no_device_reason_carried)
{
    gan_loader *l = test_loader();
    struct gan_module *m = open_ok(l, "nodevice");
    gan_config *cfg = config_for(m, NULL);
    struct gan_backend_instance *inst = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_backend_instance_new(m, cfg, NULL, &inst, &err), GAN_ERR_DEVICE);
    ck_assert_ptr_null(inst);
    ck_assert_str_eq(err.message, "backend \"nodevice\" (" PLUGINS "/backend-nodevice.so) reports "
                                  "no usable device: no widget attached to /dev/widget0");
    gan_config_free(cfg);
    gan_module_close(m);
    gan_loader_free(l);
}
END_TEST

/* ------------------------------------------------------------------ listing */

static const struct gan_plugin_info *find_info(const struct gan_plugin_list *list, const char *path)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].path, path) == 0)
            return &list->items[i];
    ck_abort_msg("%s not listed", path);
    return NULL;
}

START_TEST(scan_lists_everything)
{
    static const char *const dirs[] = { PLUGINS, ORDER1, ORDER2 };
    gan_loader *l = loader_of(dirs, 3, NULL, NO_PKGLIBDIR);
    struct gan_plugin_list list;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_loader_scan(l, &list, &err), GAN_OK);

    /* Ten modules in the first folder, one in each order folder. */
    ck_assert_uint_eq(list.count, 12);
    for (size_t i = 1; i < 10; i++)
        ck_assert_msg(strcmp(list.items[i - 1].path, list.items[i].path) < 0,
                      "not sorted: %s, %s", list.items[i - 1].path, list.items[i].path);

    const struct gan_plugin_info *good = find_info(&list, PLUGINS "/backend-good.so");
    ck_assert_str_eq(good->kind, "backend");
    ck_assert_str_eq(good->name, "good");
    ck_assert_str_eq(good->version, "1.2.3");
    ck_assert_str_eq(good->summary, "a well-formed test backend");
    ck_assert_ptr_null(good->error);
    ck_assert_int_eq(good->is_backend, 1);
    ck_assert_int_eq(good->available, 1);
    assert_contains(good->status, "good: threads=3 scale=0.5");
    ck_assert_uint_eq(good->setting_count, 4);
    ck_assert_str_eq(good->settings[0].name, "backend.threads");
    ck_assert_int_eq(good->settings[0].type, GAN_SETTING_INT);
    ck_assert_str_eq(good->settings[0].default_value, "3");
    ck_assert_str_eq(good->settings[3].summary, "a name");

    const struct gan_plugin_info *nodev = find_info(&list, PLUGINS "/backend-nodevice.so");
    ck_assert_int_eq(nodev->is_backend, 1);
    ck_assert_int_eq(nodev->available, 0);
    assert_contains(nodev->status, "reports no usable device: no widget attached to /dev/widget0");

    const struct gan_plugin_info *major = find_info(&list, PLUGINS "/backend-abimajor.so");
    ck_assert_ptr_nonnull(major->error);
    assert_contains(major->error, "backend-abimajor.so: built for plugin ABI");
    ck_assert_int_eq(major->is_backend, 0);

    const struct gan_plugin_info *nosym = find_info(&list, PLUGINS "/backend-nosym.so");
    assert_contains(nosym->error, "no symbol ganctl_plugin_descriptor");

    const struct gan_plugin_info *first = find_info(&list, ORDER1 "/backend-order.so");
    ck_assert_ptr_null(first->shadowed_by);
    ck_assert_str_eq(first->version, "first");
    const struct gan_plugin_info *second = find_info(&list, ORDER2 "/backend-order.so");
    ck_assert_str_eq(second->shadowed_by, ORDER1 "/backend-order.so");
    ck_assert_ptr_null(second->version);

    gan_plugin_list_clear(&list);
    ck_assert_uint_eq(list.count, 0);
    gan_loader_free(l);
}
END_TEST

START_TEST(scan_reports_strays)
{
    static const char *const files[] = {
        "backend-junk.so", "foo-bar.so", "libplain.so", "README", "backend-.so", NULL
    };
    char dir[512];
    scratch_dir(dir, sizeof dir);
    for (const char *const *f = files; *f; f++)
        put_file(dir, *f, "not a module\n");
    const char *const dirs[] = { dir };
    gan_loader *l = loader_of(dirs, 1, NULL, NO_PKGLIBDIR);
    struct gan_plugin_list list;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_loader_scan(l, &list, &err), GAN_OK);

    /* Only KIND-NAME.so files are candidates; each one is listed, with its error. */
    ck_assert_uint_eq(list.count, 2);
    ck_assert_str_eq(list.items[0].name, "junk");
    assert_contains(list.items[0].error, "backend-junk.so: not a loadable module (");
    ck_assert_str_eq(list.items[1].kind, "foo");
    assert_contains(list.items[1].error, "foo-bar.so: unknown plugin kind \"foo\" in its file name");

    gan_plugin_list_clear(&list);
    gan_loader_free(l);
    remove_dir(dir, files);
}
END_TEST

START_TEST(scan_empty_path)
{
    static const char *const dirs[] = { "/nonexistent/one" };
    gan_loader *l = loader_of(dirs, 1, NULL, NO_PKGLIBDIR);
    struct gan_plugin_list list;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_loader_scan(l, &list, &err), GAN_OK);
    ck_assert_uint_eq(list.count, 0);
    gan_plugin_list_clear(&list);
    gan_loader_free(l);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *loader_suite(void)
{
    Suite *s = suite_create("loader");

    TCase *good = tcase_create("good module");
    tcase_add_test(good, good_module_loads);
    tcase_add_test(good, good_backend_defaults);
    tcase_add_test(good, good_backend_configured);
    suite_add_tcase(s, good);

    TCase *abi = tcase_create("abi versions");
    tcase_add_test(abi, abi_major_rejected);
    tcase_add_test(abi, abi_newer_minor_rejected);
    tcase_add_test(abi, abi_older_minor_accepted);
    suite_add_tcase(s, abi);

    TCase *broken = tcase_create("broken modules");
    tcase_add_loop_test(broken, broken_module_rejected, 0,
                        (int)(sizeof broken_cases / sizeof broken_cases[0]));
    tcase_add_test(broken, text_file_is_not_a_module);
    tcase_add_test(broken, no_device_reason_carried);
    tcase_add_test(broken, backend_slot_names);
    tcase_add_test(broken, backend_supports);
    suite_add_tcase(s, broken);

    TCase *search = tcase_create("search path");
    tcase_add_test(search, missing_module_names_folders);
    tcase_add_test(search, scaler_tables_copied_and_checked);
    tcase_add_test(search, stateless_scaler_state);
    tcase_add_test(search, recipe_tables_copied_and_checked);
    tcase_add_test(search, recipe_state_pair_and_name);
    tcase_add_test(search, recipe_found_and_listed);
    tcase_add_test(search, recipe_instance_and_state);
    tcase_add_test(search, search_path_parts);
    tcase_add_test(search, unsafe_name_refused);
    tcase_add_loop_test(search, search_order, 0,
                        (int)(sizeof order_cases / sizeof order_cases[0]));
    suite_add_tcase(s, search);

    TCase *scan = tcase_create("listing");
    tcase_add_test(scan, scan_lists_everything);
    tcase_add_test(scan, scan_reports_strays);
    tcase_add_test(scan, scan_empty_path);
    suite_add_tcase(s, scan);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(loader_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
