/* SPDX-License-Identifier: MIT */
/* check_config.c — the configuration (files, --set, precedence, origins, errors, plugin
 * settings) and the host services that answer a plugin's settings from it. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/configuration.h"
#include "plugin/host.h"

/* ------------------------------------------------------------------ helpers */

/* A scratch folder, removed by the fixture's teardown (run in the test's process). */
static char scratch[512];
static char written[16][600];
static int written_count;

static void scratch_setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/ganctl-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(scratch));
    written_count = 0;
}

static void scratch_teardown(void)
{
    for (int i = 0; i < written_count; i++)
        unlink(written[i]);
    rmdir(scratch);
}

/* Writes `text` to scratch/name and returns the path (valid for the test). */
static const char *put_file(const char *name, const char *text)
{
    ck_assert_int_lt(written_count, 16);
    char *path = written[written_count++];
    snprintf(path, sizeof written[0], "%s/%s", scratch, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

static gan_config *fresh(void)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    return cfg;
}

static void set_ok(gan_config *cfg, const char *assignment)
{
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_config_set(cfg, assignment, &err) == GAN_OK, "%s: %s", assignment, err.message);
}

static void read_ok(gan_config *cfg, const char *path, enum gan_config_source source)
{
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_config_read_file(cfg, path, source, &err) == GAN_OK, "%s", err.message);
}

/* "path:line" for a scratch file. */
static const char *at(const char *path, int line)
{
    static char buf[4][700];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s:%d", path, line);
    return b;
}

static void assert_value(const gan_config *cfg, const char *key, long long i, const char *origin)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    ck_assert_msg(v != NULL, "%s has no value", key);
    ck_assert_int_eq(v->type, GAN_CONFIG_INT);
    ck_assert_int_eq(v->i, i);
    ck_assert_str_eq(v->origin, origin);
}

/* ------------------------------------------------------------------ precedence */

START_TEST(precedence_four_sources)
{
    const char *installed = put_file("installed.conf",
        "# the installed file\n"
        "backend = {\n"
        "  a = 1;\n"
        "  b = 1;\n"
        "  c = 1;\n"
        "  d = 1;\n"
        "};\n"
        "log = { level = \"error\"; };\n");
    const char *env = put_file("env.conf",
        "backend: { b = 2; c = 2; d = 2; };\n"
        "log: { level = \"warn\"; };\n");
    const char *file = put_file("file.conf",
        "\n"
        "backend = { c = 3; d = 3; };\n");
    gan_config *cfg = fresh();
    struct gan_config_files files = { installed, env, file };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_config_read_files(cfg, &files, &err) == GAN_OK, "%s", err.message);
    set_ok(cfg, "backend.d=4");

    assert_value(cfg, "backend.a", 1, at(installed, 3));
    assert_value(cfg, "backend.b", 2, at(env, 1));
    assert_value(cfg, "backend.c", 3, at(file, 2));
    assert_value(cfg, "backend.d", 4, "--set backend.d=4");
    ck_assert_int_eq(gan_config_find(cfg, "backend.d")->source, GAN_CONFIG_COMMAND_LINE);
    ck_assert_int_eq(gan_config_find(cfg, "backend.c")->source, GAN_CONFIG_FILE);
    ck_assert_int_eq(gan_config_find(cfg, "backend.b")->source, GAN_CONFIG_ENV);
    ck_assert_int_eq(gan_config_find(cfg, "backend.a")->source, GAN_CONFIG_INSTALLED);

    const char *level;
    ck_assert_int_eq(gan_config_get_string(cfg, "log.level", &level), GAN_OK);
    ck_assert_str_eq(level, "warn");
    ck_assert_str_eq(gan_config_find(cfg, "log.level")->origin, at(env, 2));

    /* Untouched core keys keep their defaults. */
    const char *backend;
    ck_assert_int_eq(gan_config_get_string(cfg, "backend.name", &backend), GAN_OK);
    ck_assert_str_eq(backend, "cpu");
    ck_assert_str_eq(gan_config_find(cfg, "backend.name")->origin, "default");

    ck_assert_uint_eq(gan_config_file_count(cfg), 3);
    char expected[700];
    snprintf(expected, sizeof expected, "%s (named by GANCTL_CONFIG)", env);
    ck_assert_str_eq(gan_config_file_at(cfg, 1), expected);
    gan_config_free(cfg);
}
END_TEST

START_TEST(later_set_wins)
{
    gan_config *cfg = fresh();
    size_t defaults = gan_config_count(cfg);
    set_ok(cfg, "log.level=debug");
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_set_string(cfg, "backend.name", "first", "--backend first", &err), GAN_OK);
    set_ok(cfg, "backend.name=second");
    set_ok(cfg, "log.level=error");
    const char *s;
    ck_assert_int_eq(gan_config_get_string(cfg, "backend.name", &s), GAN_OK);
    ck_assert_str_eq(s, "second");
    ck_assert_str_eq(gan_config_find(cfg, "backend.name")->origin, "--set backend.name=second");
    ck_assert_int_eq(gan_config_get_string(cfg, "log.level", &s), GAN_OK);
    ck_assert_str_eq(s, "error");
    /* Replacing keeps one entry per key. */
    ck_assert_uint_eq(gan_config_count(cfg), defaults);
    gan_config_free(cfg);
}
END_TEST

START_TEST(missing_installed_is_fine)
{
    gan_config *cfg = fresh();
    char path[700];
    snprintf(path, sizeof path, "%s/absent.conf", scratch);
    struct gan_config_files files = { path, NULL, NULL };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_files(cfg, &files, &err), GAN_OK);
    ck_assert_uint_eq(gan_config_file_count(cfg), 0);
    gan_config_free(cfg);
}
END_TEST

struct missing_case {
    enum gan_config_source source;
    const char *says;
};

static const struct missing_case missing_cases[] = {
    { GAN_CONFIG_ENV, " (named by GANCTL_CONFIG): No such file or directory: fix the path or unset GANCTL_CONFIG" },
    { GAN_CONFIG_FILE, " (given with --config): No such file or directory: check the path given to --config" },
};

START_TEST(missing_file_is_an_error)
{
    const struct missing_case *c = &missing_cases[_i];
    gan_config *cfg = fresh();
    char path[700], expected[1024];
    snprintf(path, sizeof path, "%s/absent.conf", scratch);
    snprintf(expected, sizeof expected, "cannot read configuration file %s%s", path, c->says);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_file(cfg, path, c->source, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, expected);
    gan_config_free(cfg);
}
END_TEST

START_TEST(include_names_its_file)
{
    const char *inc = put_file("inc.conf", "\nlog = { level = \"loud\"; };\n");
    const char *main_file = put_file("main.conf", "@include \"inc.conf\"\n");
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_file(cfg, main_file, GAN_CONFIG_FILE, &err), GAN_ERR_CONFIG);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "%s:2: \"log.level\" must be one of error, warn, info, debug, got \"loud\"", inc);
    ck_assert_str_eq(err.message, expected);
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ --set values */

struct set_case {
    const char *assignment;
    enum gan_config_type type;
    long long i;
    double f;
    int b;
    const char *s;
};

static const struct set_case set_cases[] = {
    { "backend.x=42", GAN_CONFIG_INT, 42, 0, 0, NULL },
    { "backend.x=-7", GAN_CONFIG_INT, -7, 0, 0, NULL },
    { "backend.x=+5", GAN_CONFIG_INT, 5, 0, 0, NULL },
    { "backend.x=0x1F", GAN_CONFIG_INT, 31, 0, 0, NULL },
    { "backend.x=3000000000", GAN_CONFIG_INT, 3000000000LL, 0, 0, NULL },
    { "backend.x=-9000000000L", GAN_CONFIG_INT, -9000000000LL, 0, 0, NULL },
    { "backend.x=1.5", GAN_CONFIG_FLOAT, 0, 1.5, 0, NULL },
    { "backend.x=-2.5e-3", GAN_CONFIG_FLOAT, 0, -2.5e-3, 0, NULL },
    { "backend.x=1e6", GAN_CONFIG_FLOAT, 0, 1e6, 0, NULL },
    { "backend.x=true", GAN_CONFIG_BOOL, 0, 0, 1, NULL },
    { "backend.x=FALSE", GAN_CONFIG_BOOL, 0, 0, 0, NULL },
    { "backend.x=cpu", GAN_CONFIG_STRING, 0, 0, 0, "cpu" },
    { "backend.x=\"quoted string\"", GAN_CONFIG_STRING, 0, 0, 0, "quoted string" },
    { "backend.x=\"say \\\"hi\\\"\"", GAN_CONFIG_STRING, 0, 0, 0, "say \"hi\"" },
    { "backend.x=\"\"", GAN_CONFIG_STRING, 0, 0, 0, "" },
    { "backend.x=\"42\"", GAN_CONFIG_STRING, 0, 0, 0, "42" },
    { " backend.x = padded ", GAN_CONFIG_STRING, 0, 0, 0, "padded" },
    { "backend.x=a;b=2", GAN_CONFIG_STRING, 0, 0, 0, "a;b=2" },
    { "backend.x=1.2.3", GAN_CONFIG_STRING, 0, 0, 0, "1.2.3" },
    { "backend.x=4x", GAN_CONFIG_STRING, 0, 0, 0, "4x" },
    { "backend.x=/tmp/run a", GAN_CONFIG_STRING, 0, 0, 0, "/tmp/run a" },
    { "backend.x=x=y", GAN_CONFIG_STRING, 0, 0, 0, "x=y" },
    { "backend.x=[1, 2]", GAN_CONFIG_ARRAY, 0, 0, 0, NULL },
    { "backend.x=(1, \"a\")", GAN_CONFIG_LIST, 0, 0, 0, NULL },
};

START_TEST(set_parses_values)
{
    const struct set_case *c = &set_cases[_i];
    gan_config *cfg = fresh();
    set_ok(cfg, c->assignment);
    const struct gan_config_value *v = gan_config_find(cfg, "backend.x");
    ck_assert_ptr_nonnull(v);
    ck_assert_msg(v->type == c->type, "%s: type %s", c->assignment, gan_config_type_phrase(v->type));
    switch (c->type) {
    case GAN_CONFIG_INT: ck_assert_int_eq(v->i, c->i); break;
    case GAN_CONFIG_FLOAT: ck_assert_double_eq(v->f, c->f); break;
    case GAN_CONFIG_BOOL: ck_assert_int_eq(v->b, c->b); break;
    case GAN_CONFIG_STRING: ck_assert_str_eq(v->s, c->s); break;
    default: break;
    }
    char origin[256];
    snprintf(origin, sizeof origin, "--set %s", c->assignment);
    ck_assert_str_eq(v->origin, origin);
    gan_config_free(cfg);
}
END_TEST

struct bad_set_case {
    const char *assignment;
    const char *message;
};

static const struct bad_set_case bad_set_cases[] = {
    { "backend.threads", "--set backend.threads: expected KEY=VALUE, e.g. --set backend.threads=4" },
    { "=4", "--set =4: \"\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE" },
    { "back end.x=1", "--set back end.x=1: \"back end.x\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE" },
    { "backend..x=1", "--set backend..x=1: \"backend..x\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE" },
    { "backend.x.=1", "--set backend.x.=1: \"backend.x.\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE" },
    { "9lives=1", "--set 9lives=1: \"9lives\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE" },
    { "backend.x=", "--set backend.x=: no value after '=': write --set backend.x=VALUE (an empty string is backend.x=\"\")" },
    { "backend.x=\"open", "--set backend.x=\"open: \"open is not a complete quoted string (escape \\\" and \\\\ inside it)" },
    { "backend.x=\"a\"; w = 1", "--set backend.x=\"a\"; w = 1: \"a\"; w = 1 is not a complete quoted string (escape \\\" and \\\\ inside it)" },
    { "backend.x=[1,", "--set backend.x=[1,: [1, is not a valid libconfig array, list or group" },
    { "backend.x=99999999999999999999", "--set backend.x=99999999999999999999: 99999999999999999999 does not fit in a 64-bit integer" },
    { "log={ level = \"warn\"; }", "--set log={ level = \"warn\"; }: --set takes one setting, not a group: set each one, e.g. --set log.KEY=VALUE" },
    { "log=warn", "--set log=warn: \"log\" must be a group, got a string: set the settings inside it, e.g. log.level" },
    { "foo=1", "--set foo=1: unknown setting \"foo\": remove it; ganctl.conf(5) lists the settings" },
    { "log.levl=debug", "--set log.levl=debug: unknown setting \"log.levl\"; did you mean \"log.level\"?" },
    { "bakend.threads=2", "--set bakend.threads=2: unknown setting \"bakend.threads\"; did you mean \"backend.threads\"?" },
    { "log.level=3", "--set log.level=3: \"log.level\" must be a string, got an integer: write the value in double quotes" },
    { "log.level=verbose", "--set log.level=verbose: \"log.level\" must be one of error, warn, info, debug, got \"verbose\"" },
    { "backend.name=true", "--set backend.name=true: \"backend.name\" must be a string, got a boolean: write the value in double quotes" },
};

START_TEST(set_rejects_bad_syntax)
{
    const struct bad_set_case *c = &bad_set_cases[_i];
    gan_config *cfg = fresh();
    size_t defaults = gan_config_count(cfg);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_set(cfg, c->assignment, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, c->message);
    /* A rejected assignment leaves the configuration as it was. */
    ck_assert_uint_eq(gan_config_count(cfg), defaults);
    const char *level;
    ck_assert_int_eq(gan_config_get_string(cfg, "log.level", &level), GAN_OK);
    ck_assert_str_eq(level, "info");
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ file errors */

struct file_error_case {
    const char *text;
    const char *message;          /* after "path:" */
};

static const struct file_error_case file_error_cases[] = {
    { "log = { level = \"info\"; };\nfoo = 1;\n", "2: unknown setting \"foo\": remove it; ganctl.conf(5) lists the settings" },
    { "\n\nlog = {\n  levl = \"debug\";\n};\n", "4: unknown setting \"log.levl\"; did you mean \"log.level\"?" },
    { "bakend = { threads = 2; };\n", "1: unknown setting \"bakend\"; did you mean \"backend\"?" },
    { "log = { level = 3; };\n", "1: \"log.level\" must be a string, got an integer: write the value in double quotes" },
    { "log = { level = \"verbose\"; };\n", "1: \"log.level\" must be one of error, warn, info, debug, got \"verbose\"" },
    { "log = { level = { x = 1; }; };\n", "1: \"log.level\" must be a string, got a group: write the value in double quotes" },
    { "backend = \"cpu\";\n", "1: \"backend\" must be a group, got a string: set the settings inside it, e.g. backend.name" },
    { "backend = {\n  name = \"cpu\";\n  threads = ;\n};\n", "3: syntax error (libconfig: syntax error): fix the file; ganctl.conf(5) describes the syntax" },
    { "log = { level = \"info\" \n", "2: syntax error (libconfig: syntax error): fix the file; ganctl.conf(5) describes the syntax" },
    /* libconfig has no nan or inf: the line is read to name the setting. */
    { "generator = {\n  optimizer = {\n    lr = nan;\n  };\n};\n", "3: generator.optimizer.lr = nan: a setting must be a finite number; write a number" },
    { "# lr = 1;\ncritic = {\n  scheduler : { x = 0.5; };\n  optimizer = {\n    lr = -Infinity ; // \"{\"\n  };\n};\n", "5: critic.optimizer.lr = -Infinity: a setting must be a finite number; write a number" },
    { "run = { iterations = 2; };\nlr = +INF\n", "2: lr = +INF: a setting must be a finite number; write a number" },
};

START_TEST(file_errors_name_line_and_key)
{
    const struct file_error_case *c = &file_error_cases[_i];
    const char *path = put_file("bad.conf", c->text);
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_file(cfg, path, GAN_CONFIG_FILE, &err), GAN_ERR_CONFIG);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s:%s", path, c->message);
    ck_assert_str_eq(err.message, expected);
    gan_config_free(cfg);
}
END_TEST

START_TEST(directory_is_not_a_file)
{
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_file(cfg, scratch, GAN_CONFIG_FILE, &err), GAN_ERR_CONFIG);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "cannot read configuration file %s (given with --config): it is a directory: check the path given to --config",
             scratch);
    ck_assert_str_eq(err.message, expected);
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ plugin settings */

static const struct gan_setting_spec spec[] = {
    { "threads", GAN_SETTING_INT, "0", "threads" },
    { "ratio", GAN_SETTING_FLOAT, "0.5", "a ratio" },
    { "fast", GAN_SETTING_BOOL, "true", "go fast" },
    { "mode", GAN_SETTING_STRING, "\"auto\"", "a mode" },
    { "nodefault", GAN_SETTING_INT, NULL, "no default" },
    { NULL, 0, NULL, NULL },
};

START_TEST(plugin_settings_checked_and_defaulted)
{
    const char *path = put_file("plugin.conf", "backend = {\n  threads = 4;\n  ratio = 2;\n};\n");
    gan_config *cfg = fresh();
    read_ok(cfg, path, GAN_CONFIG_FILE);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_config_apply_plugin(cfg, "backend", "backend \"test\"", spec, &err) == GAN_OK,
                  "%s", err.message);

    assert_value(cfg, "backend.threads", 4, at(path, 2));
    double ratio;
    ck_assert_int_eq(gan_config_get_float(cfg, "backend.ratio", &ratio), GAN_OK);
    ck_assert_double_eq(ratio, 2.0); /* an integer is a fine float */
    int fast;
    ck_assert_int_eq(gan_config_get_bool(cfg, "backend.fast", &fast), GAN_OK);
    ck_assert_int_eq(fast, 1);
    ck_assert_str_eq(gan_config_find(cfg, "backend.fast")->origin, "default");
    ck_assert_int_eq(gan_config_find(cfg, "backend.fast")->source, GAN_CONFIG_DEFAULT);
    const char *mode;
    ck_assert_int_eq(gan_config_get_string(cfg, "backend.mode", &mode), GAN_OK);
    ck_assert_str_eq(mode, "auto");
    ck_assert_ptr_null(gan_config_find(cfg, "backend.nodefault"));
    /* Typed getters refuse the wrong type. */
    long long n;
    ck_assert_int_eq(gan_config_get_int(cfg, "backend.mode", &n), GAN_ERR_CONFIG);
    ck_assert_int_eq(gan_config_get_int(cfg, "backend.nodefault", &n), GAN_ERR_NOT_FOUND);
    gan_config_free(cfg);
}
END_TEST

struct plugin_error_case {
    const char *set;
    const char *message;
};

static const struct plugin_error_case plugin_error_cases[] = {
    { "backend.thread=2", "--set backend.thread=2: unknown setting \"backend.thread\"; did you mean \"backend.threads\"?" },
    { "backend.zzz=1", "--set backend.zzz=1: unknown setting \"backend.zzz\": backend \"test\" reads backend.threads, backend.ratio, backend.fast, backend.mode, backend.nodefault (ganctl --list-plugins shows them)" },
    { "backend.threads=four", "--set backend.threads=four: \"backend.threads\" must be an integer, got a string: write a whole number without quotes" },
    { "backend.threads=2.5", "--set backend.threads=2.5: \"backend.threads\" must be an integer, got a float: write a whole number without quotes" },
    { "backend.ratio=\"0.5\"", "--set backend.ratio=\"0.5\": \"backend.ratio\" must be a number, got a string: write a number without quotes" },
    { "backend.fast=yes", "--set backend.fast=yes: \"backend.fast\" must be a boolean, got a string: write true or false without quotes" },
    { "backend.mode=7", "--set backend.mode=7: \"backend.mode\" must be a string, got an integer: write the value in double quotes" },
    { "backend.mode=[1]", "--set backend.mode=[1]: \"backend.mode\" must be a string, got an array: write the value in double quotes" },
};

START_TEST(plugin_settings_rejected)
{
    const struct plugin_error_case *c = &plugin_error_cases[_i];
    gan_config *cfg = fresh();
    set_ok(cfg, c->set); /* backend.* waits for the plugin's spec */
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"test\"", spec, &err),
                     GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, c->message);
    gan_config_free(cfg);
}
END_TEST

START_TEST(plugin_file_errors_keep_line)
{
    const char *path = put_file("typo.conf", "# cpu settings\nbackend = {\n  name = \"cpu\";\n  thread = 2;\n};\n");
    gan_config *cfg = fresh();
    read_ok(cfg, path, GAN_CONFIG_FILE);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"test\"", spec, &err),
                     GAN_ERR_CONFIG);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "%s:4: unknown setting \"backend.thread\"; did you mean \"backend.threads\"?", path);
    ck_assert_str_eq(err.message, expected);
    gan_config_free(cfg);
}
END_TEST

START_TEST(plugin_without_settings)
{
    gan_config *cfg = fresh();
    set_ok(cfg, "backend.threads=2");
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"bare\"", NULL, &err),
                     GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, "--set backend.threads=2: unknown setting \"backend.threads\": "
                                  "backend \"bare\" has no settings of its own; remove it");
    gan_config_free(cfg);
    /* Without user values a plugin without settings is fine, and backend.name is the core's. */
    cfg = fresh();
    set_ok(cfg, "backend.name=bare");
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"bare\"", NULL, &err), GAN_OK);
    gan_config_free(cfg);
}
END_TEST

START_TEST(plugin_spec_bugs_blamed_on_plugin)
{
    static const struct gan_setting_spec bad_default[] = {
        { "n", GAN_SETTING_INT, "\"x\"", "" }, { NULL, 0, NULL, NULL },
    };
    static const struct gan_setting_spec taken_name[] = {
        { "name", GAN_SETTING_STRING, NULL, "" }, { NULL, 0, NULL, NULL },
    };
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"buggy\"", bad_default, &err),
                     GAN_ERR_INVALID);
    ck_assert_str_eq(err.message, "backend \"buggy\" declares the default \"x\" for \"backend.n\", "
                                  "which is not an integer: fix the plugin");
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"buggy\"", taken_name, &err),
                     GAN_ERR_INVALID);
    ck_assert_str_eq(err.message, "backend \"buggy\" declares a setting \"name\" that ganctl already "
                                  "uses: fix the plugin");
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ host services */

struct captured {
    int count;
    char line[4][512];
};

static void capture(void *ctx, enum gan_log_level level, const char *line)
{
    struct captured *c = ctx;
    (void)level;
    if (c->count < 4)
        snprintf(c->line[c->count], sizeof c->line[0], "%s", line);
    c->count++;
}

START_TEST(host_answers_declared_settings)
{
    gan_config *cfg = fresh();
    set_ok(cfg, "backend.threads=6");
    set_ok(cfg, "backend.mode=\"manual\"");
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"test\"", spec, &err), GAN_OK);
    struct gan_plugin_host h;
    gan_plugin_host_init(&h, "backend test", "backend", spec, cfg, NULL);
    const struct gan_host *host = &h.host;
    ck_assert_ptr_eq(host->ctx, &h);
    ck_assert_uint_eq(host->struct_size, sizeof(struct gan_host));

    long long threads;
    double ratio, threads_f;
    int fast;
    const char *mode;
    ck_assert_int_eq(host->get_int(host->ctx, "threads", &threads), GAN_OK);
    ck_assert_int_eq(threads, 6);
    ck_assert_int_eq(host->get_float(host->ctx, "threads", &threads_f), GAN_OK);
    ck_assert_double_eq(threads_f, 6.0);
    ck_assert_int_eq(host->get_float(host->ctx, "ratio", &ratio), GAN_OK);
    ck_assert_double_eq(ratio, 0.5);
    ck_assert_int_eq(host->get_bool(host->ctx, "fast", &fast), GAN_OK);
    ck_assert_int_eq(fast, 1);
    ck_assert_int_eq(host->get_string(host->ctx, "mode", &mode), GAN_OK);
    ck_assert_str_eq(mode, "manual");

    /* Undeclared keys, even ones present in the configuration, are not the plugin's. */
    ck_assert_int_eq(host->get_string(host->ctx, "name", &mode), GAN_ERR_NOT_FOUND);
    ck_assert_int_eq(host->get_int(host->ctx, "undeclared", &threads), GAN_ERR_NOT_FOUND);
    ck_assert_int_eq(host->get_int(host->ctx, "nodefault", &threads), GAN_ERR_NOT_FOUND);

    /* Asking for a declared setting as another type is the plugin's bug. */
    ck_assert_int_eq(host->get_int(host->ctx, "mode", &threads), GAN_ERR_INVALID);
    ck_assert_str_eq(h.error.message, "backend test asked for setting \"backend.mode\" as an integer, "
                                      "but declared it a string: fix the plugin");
    ck_assert_int_eq(host->get_bool(host->ctx, "threads", &fast), GAN_ERR_INVALID);
    gan_config_free(cfg);
}
END_TEST

START_TEST(host_logs_fails_and_counts)
{
    struct captured seen = { 0 };
    struct gan_log log;
    gan_log_init(&log, capture, &seen);
    log.level = GAN_LOG_WARN;
    struct gan_plugin_host h;
    gan_plugin_host_init(&h, "scaler dynamic", "scaler", NULL, NULL, &log);
    const struct gan_host *host = &h.host;

    host->log(host->ctx, GAN_LOG_INFO, "dropped at level warn");
    host->log(host->ctx, GAN_LOG_WARN, "scale fell to %g", 0.25);
    host->log(host->ctx, GAN_LOG_ERROR, "two\nlines");
    ck_assert_int_eq(seen.count, 2);
    ck_assert_str_eq(seen.line[0], "scaler dynamic: scale fell to 0.25");
    ck_assert_str_eq(seen.line[1], "scaler dynamic: two lines");

    /* Parenthesised: check.h defines a function-like macro named fail. */
    ck_assert_int_eq((host->fail)(host->ctx, GAN_ERR_DEVICE, "no %s", "device"), GAN_ERR_DEVICE);
    ck_assert_int_eq(h.error.status, GAN_ERR_DEVICE);
    ck_assert_str_eq(h.error.message, "no device");

    void *a = host->alloc(host->ctx, 100);
    void *b = host->alloc(host->ctx, 28);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq((uintptr_t)a % _Alignof(max_align_t), 0);
    memset(a, 0xab, 100);
    ck_assert_uint_eq(h.live_bytes, 128);
    ck_assert_uint_eq(h.live_blocks, 2);
    host->free(host->ctx, a);
    host->free(host->ctx, NULL);
    ck_assert_uint_eq(h.live_bytes, 28);
    ck_assert_uint_eq(h.peak_bytes, 128);
    host->free(host->ctx, b);
    ck_assert_uint_eq(h.live_blocks, 0);

    /* Without a configuration, a plugin has no values at all. */
    long long v;
    ck_assert_int_eq(host->get_int(host->ctx, "anything", &v), GAN_ERR_NOT_FOUND);
}
END_TEST

/* ------------------------------------------------------------------ small parts */

START_TEST(edit_distance)
{
    ck_assert_uint_eq(gan_config_edit_distance("kitten", "sitting"), 3);
    ck_assert_uint_eq(gan_config_edit_distance("", "abc"), 3);
    ck_assert_uint_eq(gan_config_edit_distance("backend.thread", "backend.threads"), 1);
    ck_assert_uint_eq(gan_config_edit_distance("same", "same"), 0);
}
END_TEST

START_TEST(format_reads_back)
{
    gan_config *cfg = fresh();
    set_ok(cfg, "backend.f=2.0");
    set_ok(cfg, "backend.s=\"a \\\"q\\\" \\\\ b\"");
    set_ok(cfg, "backend.b=true");
    set_ok(cfg, "backend.i=-12");
    char buf[128];
    gan_config_format_value(gan_config_find(cfg, "backend.f"), buf, sizeof buf);
    ck_assert_str_eq(buf, "2.0");
    gan_config_format_value(gan_config_find(cfg, "backend.s"), buf, sizeof buf);
    ck_assert_str_eq(buf, "\"a \\\"q\\\" \\\\ b\"");
    gan_config_format_value(gan_config_find(cfg, "backend.b"), buf, sizeof buf);
    ck_assert_str_eq(buf, "true");
    gan_config_format_value(gan_config_find(cfg, "backend.i"), buf, sizeof buf);
    ck_assert_str_eq(buf, "-12");
    gan_config_free(cfg);
}
END_TEST

START_TEST(log_levels)
{
    static const char *const names[] = { "error", "warn", "info", "debug" };
    for (int i = 0; i < 4; i++) {
        enum gan_log_level level;
        ck_assert_int_eq(gan_log_level_parse(names[i], &level), GAN_OK);
        ck_assert_int_eq(level, i);
        ck_assert_str_eq(gan_log_level_name(level), names[i]);
    }
    enum gan_log_level level = GAN_LOG_INFO;
    ck_assert_int_eq(gan_log_level_parse("INFO", &level), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_log_level_parse("verbose", &level), GAN_ERR_INVALID);
    ck_assert_int_eq(level, GAN_LOG_INFO);
}
END_TEST

/* ------------------------------------------------------------------ suite */

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ------------------------------------------------------------------ training settings */

START_TEST(training_defaults_and_nesting)
{
    gan_config *cfg = fresh();
    long long it;
    ck_assert_int_eq(gan_config_get_int(cfg, "run.iterations", &it), GAN_OK);
    ck_assert_int_gt(it, 0);
    const char *const *terms;
    size_t n;
    ck_assert_int_eq(gan_config_get_strings(cfg, "loss.terms", &terms, &n), GAN_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(terms[0], "wasserstein");
    ck_assert_str_eq(terms[1], "gradient-penalty");
    /* Nested groups in a file, a term's group under loss. */
    const char *path = put_file("train.conf",
        "critic = {\n  iterations = 3;\n  model = { name = \"mlp\"; width = 64; };\n"
        "  optimizer = { lr = 2e-4; };\n};\n"
        "loss = {\n  terms = (\"wasserstein\", \"gradient-penalty\");\n"
        "  gradient-penalty = { lambda = 0.5; };\n};\n");
    read_ok(cfg, path, GAN_CONFIG_FILE);
    assert_value(cfg, "critic.iterations", 3, at(path, 2));
    assert_value(cfg, "critic.model.width", 64, at(path, 3));
    double lr, lambda;
    ck_assert_int_eq(gan_config_get_float(cfg, "critic.optimizer.lr", &lr), GAN_OK);
    ck_assert_double_eq(lr, 2e-4);
    ck_assert_int_eq(gan_config_get_float(cfg, "loss.gradient-penalty.lambda", &lambda), GAN_OK);
    ck_assert_double_eq(lambda, 0.5);
    ck_assert_int_eq(gan_config_get_strings(cfg, "loss.terms", &terms, &n), GAN_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(gan_config_find(cfg, "loss.terms")->origin, at(path, 7));
    ck_assert(gan_config_is_core_key("run.seed"));
    ck_assert(!gan_config_is_core_key("critic.model.width"));
    ck_assert_ptr_nonnull(gan_config_key_summary("critic.iterations"));
    gan_config_free(cfg);
}
END_TEST

static const struct bad_set_case bad_training_cases[] = {
    { "run.iterations=0", "--set run.iterations=0: \"run.iterations\" must be at least 1, got 0" },
    { "data.batch_size=2000000", "--set data.batch_size=2000000: \"data.batch_size\" must be between 1 and 1048576, got 2000000" },
    { "critic.optimizer.beta1=1", "--set critic.optimizer.beta1=1: \"critic.optimizer.beta1\" must be between 0 and 0.999999, got 1" },
    { "generator.optimizer.lr=-1e-3", "--set generator.optimizer.lr=-1e-3: \"generator.optimizer.lr\" must be between 0 and 3.4028234e+38, got -0.001" },
    { "data.name=moons", "--set data.name=moons: \"data.name\" must be one of 8gaussians, 25gaussians, swissroll, fashion-mnist, folder, got \"moons\"" },
    { "loss.terms=wasserstein", "--set loss.terms=wasserstein: \"loss.terms\" must be a list of strings, got a string: write it in brackets, e.g. loss.terms = [\"wasserstein\", \"gradient-penalty\"]" },
    { "loss.terms=[1, 2]", "--set loss.terms=[1, 2]: \"loss.terms\" must be a list of strings, got one that holds other values: write it in brackets, e.g. loss.terms = [\"wasserstein\", \"gradient-penalty\"]" },
    { "loss.terms=[]", "--set loss.terms=[]: \"loss.terms\" is empty: list at least one name, e.g. loss.terms = [\"wasserstein\", \"gradient-penalty\"]" },
    { "loss.terms=[\"a\", \"a\"]", "--set loss.terms=[\"a\", \"a\"]: \"loss.terms\" names \"a\" twice: list each once" },
    { "loss.gradient-penalty=1", "--set loss.gradient-penalty=1: \"loss.gradient-penalty\" must be a group, got an integer: a loss term's settings go inside it, e.g. loss.gradient-penalty = { lambda = 0.1; }" },
    { "critic.iteration=3", "--set critic.iteration=3: unknown setting \"critic.iteration\"; did you mean \"critic.iterations\"?" },
    { "run.metrics_time=1", "--set run.metrics_time=1: \"run.metrics_time\" must be a boolean, got an integer: write true or false without quotes" },
};

START_TEST(training_values_checked)
{
    const struct bad_set_case *c = &bad_training_cases[_i];
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_set(cfg, c->assignment, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, c->message);
    gan_config_free(cfg);
}
END_TEST

/* Settings of a loss term that loss.terms does not list are an error, except ganctl's
 * own defaults, which are dropped; likewise a plugin group's defaults the selected
 * plugin does not declare. */
START_TEST(unused_term_groups)
{
    static const struct gan_setting_spec tiny_spec[] = {
        { "depth", GAN_SETTING_INT, "2", "layers" },
        { NULL, 0, NULL, NULL },
    };
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    const char *only[] = { "wasserstein" };
    ck_assert(gan_config_find(cfg, "loss.gradient-penalty.lambda") != NULL);
    ck_assert_int_eq(gan_config_check_loss_groups(cfg, only, 1, NULL, &err), GAN_OK);
    ck_assert_ptr_null(gan_config_find(cfg, "loss.gradient-penalty.lambda"));
    /* A model plugin without "width": ganctl's default width is dropped, not an error. */
    ck_assert(gan_config_find(cfg, "critic.model.width") != NULL);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "critic.model", "model \"tiny\"", tiny_spec, &err),
                     GAN_OK);
    ck_assert_ptr_null(gan_config_find(cfg, "critic.model.width"));
    assert_value(cfg, "critic.model.depth", 2, "default");
    /* The user's own value is not dropped: it is reported. */
    set_ok(cfg, "loss.hinge.margin=1");
    ck_assert_int_eq(gan_config_check_loss_groups(cfg, only, 1, NULL, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, "--set loss.hinge.margin=1: \"loss.hinge.margin\" configures the loss term \"hinge\", which loss.terms does not list: add \"hinge\" to loss.terms or remove the setting");
    set_ok(cfg, "generator.model.width=9");
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "generator.model", "model \"tiny\"", tiny_spec, &err),
                     GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "unknown setting \"generator.model.width\""));
    gan_config_free(cfg);
}
END_TEST

struct unused_seen {
    int n;
    char key[64], origin[64];
};

/* The shipped terms, as the loader would find them. */
static int is_installed(void *ctx, const char *term)
{
    (void)ctx;
    static const char *const shipped[] = { "wasserstein", "gradient-penalty", "non-saturating",
                                           "hinge", "r1" };
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++)
        if (strcmp(term, shipped[i]) == 0)
            return 1;
    return 0;
}

static void on_unused(void *ctx, const char *key, const char *origin)
{
    struct unused_seen *u = ctx;
    u->n++;
    snprintf(u->key, sizeof u->key, "%s", key);
    snprintf(u->origin, sizeof u->origin, "%s", origin);
}

/* A file's setting for a term of the file's own list, when --set replaces the list: not
 * the file's mistake, so it is dropped and reported as unused, not refused; the same
 * setting from the command line that replaced the list is still refused. */
START_TEST(test_loss_groups_of_a_replaced_list)
{
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_string(cfg, "loss = {\n  terms = [\"wasserstein\", "
                                            "\"gradient-penalty\"];\n  gradient-penalty = "
                                            "{ lambda = 3.0; };\n};\n", "run.conf",
                                            GAN_CONFIG_FILE, &err), GAN_OK);
    set_ok(cfg, "loss.terms=[\"hinge\"]");
    const char *only[] = { "hinge" };
    struct unused_seen u = { 0 };
    const struct gan_config_replaced_terms replaced = { is_installed, on_unused, &u };
    ck_assert_int_eq(gan_config_check_loss_groups(cfg, only, 1, &replaced, &err), GAN_OK);
    ck_assert_int_eq(u.n, 1);
    ck_assert_str_eq(u.key, "loss.gradient-penalty.lambda");
    ck_assert_str_eq(u.origin, "run.conf:3");
    ck_assert_ptr_null(gan_config_find(cfg, "loss.gradient-penalty.lambda"));
    set_ok(cfg, "loss.r1.gamma=1");
    ck_assert_int_eq(gan_config_check_loss_groups(cfg, only, 1, &replaced, &err),
                     GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "\"loss.r1.gamma\" configures the loss term \"r1\""));
    ck_assert_int_eq(u.n, 1);
    gan_config_free(cfg);
    /* A misspelt term in the file is still refused, replaced list or not. */
    cfg = fresh();
    ck_assert_int_eq(gan_config_read_string(cfg, "loss = { rl = { gamma = 3.0; }; };\n",
                                            "typo.conf", GAN_CONFIG_FILE, &err), GAN_OK);
    set_ok(cfg, "loss.terms=[\"hinge\"]");
    ck_assert_int_eq(gan_config_check_loss_groups(cfg, only, 1, &replaced, &err),
                     GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "typo.conf:1: \"loss.rl.gamma\" configures the loss term \"rl\""));
    ck_assert_int_eq(u.n, 1);
    gan_config_free(cfg);
}
END_TEST

/* Each FP8 recipe has a group of its own under fp8, read from a file's nested groups,
 * --set and the saved text alike; the selected recipe's group is checked against what it
 * declares, and a group of any other recipe is refused. */
START_TEST(recipe_groups)
{
    static const struct gan_setting_spec delayed_spec[] = {
        { "history", GAN_SETTING_INT, "1024", "window" },
        { "algorithm", GAN_SETTING_STRING, "\"max\"", "max or most_recent" },
        { "margin", GAN_SETTING_INT, "0", "binades" },
        { NULL, 0, NULL, NULL },
    };
    const char *path = put_file("fp8.conf",
        "fp8 = {\n"
        "  delayed = { history = 16; algorithm = \"most_recent\"; };\n"
        "  current = {\n"
        "    margin = 2;\n"
        "  };\n"
        "};\n");
    gan_config *cfg = fresh();
    read_ok(cfg, path, GAN_CONFIG_FILE);
    assert_value(cfg, "fp8.delayed.history", 16, at(path, 2));
    assert_value(cfg, "fp8.current.margin", 2, at(path, 4));
    set_ok(cfg, "fp8.block.size=128");
    assert_value(cfg, "fp8.block.size", 128, "--set fp8.block.size=128");

    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_set(cfg, "fp8.delayed=1", &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, "--set fp8.delayed=1: \"fp8.delayed\" must be a group, got an "
                     "integer: a recipe's settings go inside it, e.g. fp8.delayed = { margin = 1; }");

    char *text = gan_config_to_text(cfg, 0);
    ck_assert_ptr_nonnull(text);
    gan_config *back = fresh();
    ck_assert_msg(gan_config_read_string(back, text, "saved", GAN_CONFIG_FILE, &err) == GAN_OK,
                  "%s", err.message);
    const struct gan_config_value *size = gan_config_find(back, "fp8.block.size");
    ck_assert_ptr_nonnull(size);
    ck_assert_int_eq(size->i, 128);
    ck_assert_int_eq(strncmp(size->origin, "saved:", 6), 0);
    ck_assert_ptr_nonnull(gan_config_find(back, "fp8.delayed.algorithm"));
    free(text);
    gan_config_free(back);

    ck_assert_msg(gan_config_apply_plugin(cfg, "fp8.delayed", "recipe \"delayed\"", delayed_spec,
                                          &err) == GAN_OK, "%s", err.message);
    assert_value(cfg, "fp8.delayed.margin", 0, "default");
    ck_assert_int_eq(gan_config_check_recipe_groups(cfg, "delayed", &err), GAN_ERR_CONFIG);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s: \"fp8.current.margin\" configures the FP8 recipe "
             "\"current\", but fp8.recipe selects \"delayed\": remove the setting, or select "
             "\"current\"", at(path, 4));
    ck_assert_str_eq(err.message, expected);
    gan_config_free(cfg);

    cfg = fresh();
    set_ok(cfg, "fp8.delayed.history=4");
    ck_assert_int_eq(gan_config_check_recipe_groups(cfg, "delayed", &err), GAN_OK);
    ck_assert_int_eq(gan_config_check_recipe_groups(cfg, NULL, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, "--set fp8.delayed.history=4: \"fp8.delayed.history\" configures "
                     "the FP8 recipe \"delayed\", but this run uses no FP8 recipe: remove the "
                     "setting");
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "fp8.delayed", "recipe \"delayed\"", NULL, &err),
                     GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "unknown setting \"fp8.delayed.history\""));
    gan_config_free(cfg);
}
END_TEST

/* The configuration written as text reads back to the same values, lists and nested
 * plugin groups included. */
START_TEST(text_reads_back)
{
    gan_config *cfg = fresh();
    set_ok(cfg, "run.dir=\"/tmp/a \\\"q\\\" b\"");
    set_ok(cfg, "run.seed=5000000000");
    set_ok(cfg, "critic.optimizer.lr=0.1");
    set_ok(cfg, "loss.terms=[\"wasserstein\", \"gradient-penalty\", \"x\"]");
    set_ok(cfg, "loss.x.weight=2.5");
    set_ok(cfg, "backend.threads=3");
    char *text = gan_config_to_text(cfg, 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "  lr = 0.1;  # --set critic.optimizer.lr=0.1\n"));
    ck_assert_ptr_nonnull(strstr(text, "seed = 5000000000L;"));
    const char *path = put_file("back.conf", text);
    gan_config *back = fresh();
    read_ok(back, path, GAN_CONFIG_FILE);
    ck_assert_uint_eq(gan_config_count(back), gan_config_count(cfg));
    for (size_t i = 0; i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        const struct gan_config_value *b = gan_config_find(back, v->key);
        ck_assert_msg(b != NULL, "%s did not come back", v->key);
        char x[512], y[512];
        gan_config_format_value(v, x, sizeof x);
        gan_config_format_value(b, y, sizeof y);
        ck_assert_str_eq(x, y);
    }
    gan_config *again = fresh();
    struct gan_error err;
    ck_assert_int_eq(gan_config_read_string(again, text, "saved", GAN_CONFIG_FILE, &err), GAN_OK);
    ck_assert_int_eq(strncmp(gan_config_find(again, "loss.x.weight")->origin, "saved:", 6), 0);
    free(text);
    gan_config_free(cfg);
    gan_config_free(back);
    gan_config_free(again);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");

    TCase *prec = tcase_create("precedence");
    tcase_add_checked_fixture(prec, scratch_setup, scratch_teardown);
    tcase_add_test(prec, precedence_four_sources);
    tcase_add_test(prec, later_set_wins);
    tcase_add_test(prec, missing_installed_is_fine);
    tcase_add_loop_test(prec, missing_file_is_an_error, 0, COUNT(missing_cases));
    tcase_add_test(prec, include_names_its_file);
    suite_add_tcase(s, prec);

    TCase *set = tcase_create("--set");
    tcase_add_loop_test(set, set_parses_values, 0, COUNT(set_cases));
    tcase_add_loop_test(set, set_rejects_bad_syntax, 0, COUNT(bad_set_cases));
    suite_add_tcase(s, set);

    TCase *files = tcase_create("file errors");
    tcase_add_checked_fixture(files, scratch_setup, scratch_teardown);
    tcase_add_loop_test(files, file_errors_name_line_and_key, 0, COUNT(file_error_cases));
    tcase_add_test(files, directory_is_not_a_file);
    suite_add_tcase(s, files);

    TCase *plugin = tcase_create("plugin settings");
    tcase_add_checked_fixture(plugin, scratch_setup, scratch_teardown);
    tcase_add_test(plugin, plugin_settings_checked_and_defaulted);
    tcase_add_loop_test(plugin, plugin_settings_rejected, 0, COUNT(plugin_error_cases));
    tcase_add_test(plugin, plugin_file_errors_keep_line);
    tcase_add_test(plugin, plugin_without_settings);
    tcase_add_test(plugin, plugin_spec_bugs_blamed_on_plugin);
    suite_add_tcase(s, plugin);

    TCase *train = tcase_create("training settings");
    tcase_add_checked_fixture(train, scratch_setup, scratch_teardown);
    tcase_add_test(train, training_defaults_and_nesting);
    tcase_add_loop_test(train, training_values_checked, 0, COUNT(bad_training_cases));
    tcase_add_test(train, unused_term_groups);
    tcase_add_test(train, test_loss_groups_of_a_replaced_list);
    tcase_add_test(train, recipe_groups);
    tcase_add_test(train, text_reads_back);
    suite_add_tcase(s, train);

    TCase *host = tcase_create("host services");
    tcase_add_test(host, host_answers_declared_settings);
    tcase_add_test(host, host_logs_fails_and_counts);
    suite_add_tcase(s, host);

    TCase *parts = tcase_create("parts");
    tcase_add_test(parts, edit_distance);
    tcase_add_test(parts, format_reads_back);
    tcase_add_test(parts, log_levels);
    suite_add_tcase(s, parts);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
