/* SPDX-License-Identifier: MIT */
/* check_config_finite.c — every float setting, the core's and a plugin's, refuses values
 * that are not finite when the configuration is read (a configuration error, one line
 * naming the setting), so that --print-config never writes a value libconfig cannot read
 * back; and the optimizer's FP32 numbers stay within FP32. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/configuration.h"

static gan_config *fresh(void)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    return cfg;
}

static void assert_one_line(const struct gan_error *err, const char *part)
{
    ck_assert_msg(strstr(err->message, part), "\"%s\" lacks \"%s\"", err->message, part);
    ck_assert_msg(!strchr(err->message, '\n'), "\"%s\" is not one line", err->message);
}

/* ------------------------------------------------------------------ --set */

struct refusal {
    const char *set;
    const char *message;          /* the whole line */
};

static const struct refusal set_refusals[] = {
    { "critic.optimizer.lr=1e410",
      "--set critic.optimizer.lr=1e410: \"critic.optimizer.lr\" must be a finite number, got one beyond a double's range: write a finite number of magnitude below 1.8e308" },
    { "generator.optimizer.lr=-1e410",
      "--set generator.optimizer.lr=-1e410: \"generator.optimizer.lr\" must be a finite number, got one beyond a double's range: write a finite number of magnitude below 1.8e308" },
    { "critic.optimizer.lr=nan",
      "--set critic.optimizer.lr=nan: \"critic.optimizer.lr\" must be a finite number, got \"nan\": write a finite number without quotes" },
    { "critic.optimizer.lr=inf",
      "--set critic.optimizer.lr=inf: \"critic.optimizer.lr\" must be a finite number, got \"inf\": write a finite number without quotes" },
    { "critic.optimizer.beta1=-inf",
      "--set critic.optimizer.beta1=-inf: \"critic.optimizer.beta1\" must be a finite number, got \"-inf\": write a finite number without quotes" },
    { "critic.optimizer.clip_norm=Infinity",
      "--set critic.optimizer.clip_norm=Infinity: \"critic.optimizer.clip_norm\" must be a finite number, got \"Infinity\": write a finite number without quotes" },
    { "penalty.inner_scale=1e999",
      "--set penalty.inner_scale=1e999: \"penalty.inner_scale\" must be a finite number, got one beyond a double's range: write a finite number of magnitude below 1.8e308" },
    /* A plugin's group is checked against its spec later, but a value that is no
     * finite number is refused at once, whatever the plugin declares. */
    { "scaler.scale=1e999",
      "--set scaler.scale=1e999: \"scaler.scale\" must be a finite number, got one beyond a double's range: write a finite number of magnitude below 1.8e308" },
    { "loss.gradient-penalty.lambda=-1e400",
      "--set loss.gradient-penalty.lambda=-1e400: \"loss.gradient-penalty.lambda\" must be a finite number, got one beyond a double's range: write a finite number of magnitude below 1.8e308" },
    /* The update computes in FP32: a larger learning rate or weight decay is inf there. */
    { "critic.optimizer.lr=1e300",
      "--set critic.optimizer.lr=1e300: \"critic.optimizer.lr\" must be between 0 and 3.4028234e+38, got 1e+300" },
    { "generator.optimizer.weight_decay=3.5e38",
      "--set generator.optimizer.weight_decay=3.5e38: \"generator.optimizer.weight_decay\" must be between 0 and 3.4028234e+38, got 3.5e+38" },
};

START_TEST(set_refuses_non_finite)
{
    const struct refusal *c = &set_refusals[_i];
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_set(cfg, c->set, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, c->message);
    gan_config_free(cfg);
}
END_TEST

/* The bounds themselves and ordinary values still pass. */
START_TEST(finite_values_pass)
{
    static const char *const ok[] = {
        "critic.optimizer.lr=3.4028234e38", "critic.optimizer.lr=1e-320",
        "generator.optimizer.weight_decay=0", "critic.optimizer.clip_norm=1e300",
        "scaler.scale=1e300", "penalty.inner_scale=1e30",
    };
    gan_config *cfg = fresh();
    struct gan_error err;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        gan_error_clear(&err);
        ck_assert_msg(gan_config_set(cfg, ok[i], &err) == GAN_OK, "%s: %s", ok[i], err.message);
    }
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ files */

START_TEST(file_refuses_overflow)
{
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_read_string(cfg, "critic = {\n  optimizer = {\n    lr = 1e410;\n  };\n};\n",
                                            "run.conf", GAN_CONFIG_FILE, &err),
                     GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, "run.conf:3: \"critic.optimizer.lr\" must be a finite number, got one beyond a double's range: write a finite number of magnitude below 1.8e308");
    gan_config_free(cfg);

    /* A plugin's setting in its group, in a file. */
    cfg = fresh();
    ck_assert_int_eq(gan_config_read_string(cfg, "scaler = { name = \"static\"; scale = -2e308; };\n",
                                            "run.conf", GAN_CONFIG_FILE, &err),
                     GAN_ERR_CONFIG);
    assert_one_line(&err, "run.conf:1: \"scaler.scale\" must be a finite number");
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ plugins */

static const struct gan_setting_spec spec[] = {
    { "ratio", GAN_SETTING_FLOAT, "0.5", "a ratio" },
    { NULL, 0, NULL, NULL },
};

/* A word that reads as a non-finite number, left for the plugin's spec. */
START_TEST(plugin_float_refuses_non_finite_word)
{
    static const char *const words[] = { "nan", "inf", "-inf", "NaN", "infinity" };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        gan_config *cfg = fresh();
        struct gan_error err;
        gan_error_clear(&err);
        char set[64], expected[256];
        snprintf(set, sizeof set, "backend.ratio=%s", words[i]);
        ck_assert_msg(gan_config_set(cfg, set, &err) == GAN_OK, "%s", err.message);
        ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"test\"", spec, &err),
                         GAN_ERR_CONFIG);
        snprintf(expected, sizeof expected,
                 "--set %s: \"backend.ratio\" must be a finite number, got \"%s\": write a finite number without quotes",
                 set, words[i]);
        ck_assert_str_eq(err.message, expected);
        gan_config_free(cfg);
    }
}
END_TEST

/* A plugin that declares a default beyond a double's range is the plugin's bug. */
START_TEST(plugin_default_must_be_finite)
{
    static const struct gan_setting_spec bad[] = {
        { "ratio", GAN_SETTING_FLOAT, "1e999", "a ratio" },
        { NULL, 0, NULL, NULL },
    };
    gan_config *cfg = fresh();
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_apply_plugin(cfg, "backend", "backend \"test\"", bad, &err),
                     GAN_ERR_INVALID);
    ck_assert_str_eq(err.message, "backend \"test\" declares the default 1e999 for \"backend.ratio\", which is not a finite number: fix the plugin");
    ck_assert_ptr_null(gan_config_find(cfg, "backend.ratio"));
    gan_config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ writing back */

/* What is stored is written so that it reads back the same, down to the last bit. */
START_TEST(floats_write_back_exactly)
{
    static const char *const values[] = {
        "critic.optimizer.lr=3.4028234e38", "critic.optimizer.lr=4.9e-324",
        "critic.optimizer.lr=0.1", "critic.optimizer.clip_norm=1.7976931348623157e308",
        "scaler.scale=2.2250738585072014e-308", "scaler.scale=-0.0",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        gan_config *cfg = fresh();
        struct gan_error err;
        gan_error_clear(&err);
        ck_assert_msg(gan_config_set(cfg, values[i], &err) == GAN_OK, "%s", err.message);
        char *text = gan_config_to_text(cfg, 0);
        ck_assert_ptr_nonnull(text);
        gan_config *back = fresh();
        ck_assert_msg(gan_config_read_string(back, text, "printed", GAN_CONFIG_FILE, &err) == GAN_OK,
                      "%s: %s", values[i], err.message);
        const char *key_end = strchr(values[i], '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(key_end - values[i]), values[i]);
        double a, b;
        ck_assert_int_eq(gan_config_get_float(cfg, key, &a), GAN_OK);
        ck_assert_int_eq(gan_config_get_float(back, key, &b), GAN_OK);
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s read back as %.17g", values[i], b);
        free(text);
        gan_config_free(back);
        gan_config_free(cfg);
    }
}
END_TEST

static Suite *finite_suite(void)
{
    Suite *s = suite_create("config finite");
    TCase *tc = tcase_create("finite");
    tcase_add_loop_test(tc, set_refuses_non_finite, 0,
                        (int)(sizeof set_refusals / sizeof set_refusals[0]));
    tcase_add_test(tc, finite_values_pass);
    tcase_add_test(tc, file_refuses_overflow);
    tcase_add_test(tc, plugin_float_refuses_non_finite_word);
    tcase_add_test(tc, plugin_default_must_be_finite);
    tcase_add_test(tc, floats_write_back_exactly);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(finite_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
