/* SPDX-License-Identifier: MIT */
/* fuzz_config.c — the configuration reader (core/config/) on arbitrary libconfig text,
 * through gan_config_read_string, which reads a run's saved configuration back from
 * its checkpoint. Its oracle is the promise configuration.h makes of
 * gan_config_to_text, "reading the text back gives the same values": when the input is
 * accepted, its text is read into a fresh configuration, which must hold the same
 * values and write the same text. The check is made once after
 * reading and once more after the backend group has been checked against a plugin's
 * declared settings, as a run does before it saves the text; a configuration that
 * holds a value the later checks exist to refuse (a group where a setting belongs) is
 * not checked. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "config/configuration.h"
#include "fuzz.h"

#define LABEL "input.conf"

/* The settings the shipped CPU backend declares (backends/cpu/backend.c), so that its
 * group is checked as a run checks it. */
static const struct gan_setting_spec backend_spec[] = {
    { "threads", GAN_SETTING_INT, "0", "BLAS threads" },
    { "vector", GAN_SETTING_STRING, "auto", "widest vector level" },
    { NULL, 0, NULL, NULL },
};

static int same_value(const struct gan_config_value *a, const struct gan_config_value *b)
{
    if (strcmp(a->key, b->key) != 0 || a->type != b->type)
        return 0;
    switch (a->type) {
    case GAN_CONFIG_INT: return a->i == b->i;
    /* Bit for bit: the writer promises the shortest text that reads back as the same
     * double, so even -0.0 must stay itself. */
    case GAN_CONFIG_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case GAN_CONFIG_BOOL: return a->b == b->b;
    case GAN_CONFIG_STRING: return strcmp(a->s, b->s) == 0;
    case GAN_CONFIG_GROUP: return 1;
    case GAN_CONFIG_ARRAY:
    case GAN_CONFIG_LIST:
        if (a->strings != b->strings || a->n_items != b->n_items)
            return 0;
        for (size_t k = 0; a->strings && k < a->n_items; k++)
            if (strcmp(a->items[k], b->items[k]) != 0)
                return 0;
        return 1;
    }
    return 0;
}

static gan_config *fresh(void)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    if (gan_config_new(&cfg, &err) != GAN_OK)
        fuzz_fail("gan_config_new: %s", err.message);
    return cfg;
}

/* Reads `text` into a fresh configuration; with `plugin`, then checks the backend group.
 * NULL when either refuses it, with the reason (which must be one line) in err. */
static gan_config *read_text(const char *text, int plugin, struct gan_error *err)
{
    gan_config *cfg = fresh();
    gan_error_clear(err);
    gan_status st = gan_config_read_string(cfg, text, LABEL, GAN_CONFIG_FILE, err);
    if (st == GAN_OK && plugin)
        st = gan_config_apply_plugin(cfg, "backend", "backend \"cpu\"", backend_spec, err);
    if (st == GAN_OK)
        return cfg;
    if (st != GAN_ERR_CONFIG)
        fuzz_fail("refused with status %s: %s", gan_status_string(st), err->message);
    if (!err->message[0] || strchr(err->message, '\n'))
        fuzz_fail("refused without a one-line message: \"%s\"", err->message);
    gan_config_free(cfg);
    return NULL;
}

/* Nonzero when every value has a text form. Groups, and arrays or lists of anything but
 * strings, are kept only to be reported as the wrong type (configuration.h) by the
 * checks that follow reading (the schema's, a plugin's): the writer shows them as
 * "{ ... }", and the program writes only configurations that passed those checks. */
static int writable(const gan_config *cfg)
{
    for (size_t i = 0; i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        if (v->type == GAN_CONFIG_GROUP
            || ((v->type == GAN_CONFIG_ARRAY || v->type == GAN_CONFIG_LIST) && !v->strings))
            return 0;
    }
    return 1;
}

/* The oracle: `cfg`'s text, read back, gives the same values and the same text. */
static void check_round_trip(const gan_config *cfg, int plugin)
{
    char *text = gan_config_to_text(cfg, 0);
    if (!text)
        fuzz_fail("gan_config_to_text: out of memory");
    struct gan_error err;
    gan_config *back = read_text(text, plugin, &err);
    if (!back)
        fuzz_fail("the configuration's own text is refused: %s; the text:\n%s", err.message,
                  text);
    size_t n = gan_config_count(cfg);
    if (gan_config_count(back) != n)
        fuzz_fail("%zu values written, %zu read back; the text:\n%s", n,
                  gan_config_count(back), text);
    /* By key: the text nests a group's keys where its first key was set, so a group
     * whose keys were set apart comes back with them side by side. */
    for (size_t i = 0; i < n; i++) {
        const struct gan_config_value *a = gan_config_at(cfg, i);
        const struct gan_config_value *b = gan_config_find(back, a->key);
        if (!b)
            fuzz_fail("%s written, not read back; the text:\n%s", a->key, text);
        if (!same_value(a, b)) {
            char va[512], vb[512];
            gan_config_format_value(a, va, sizeof va);
            gan_config_format_value(b, vb, sizeof vb);
            fuzz_fail("%s = %s written, %s read back; the text:\n%s", a->key, va, vb, text);
        }
    }
    char *again = gan_config_to_text(back, 0);
    if (!again)
        fuzz_fail("gan_config_to_text: out of memory");
    if (strcmp(text, again) != 0)
        fuzz_fail("the text read back writes different text; first:\n%s\nthen:\n%s", text,
                  again);
    free(again);
    gan_config_free(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The reader takes a C string: the input up to its first NUL, as a file read into
     * memory would be seen. */
    char *text = malloc(size + 1);
    if (!text)
        fuzz_fail("out of memory");
    memcpy(text, data, size);
    text[size] = '\0';
    for (int plugin = 0; plugin < 2; plugin++) {
        struct gan_error err;
        gan_config *cfg = read_text(text, plugin, &err);
        if (!cfg)
            break;
        if (writable(cfg))
            check_round_trip(cfg, plugin);
        gan_config_free(cfg);
    }
    free(text);
    return 0;
}
