/* SPDX-License-Identifier: MIT */
/* check_run_guard.c — tests of what keeps a run folder to one run (run_guard.h): the
 * temporary names the writers of a run folder's files make (hidden, and recognised as
 * leftovers; seen with inotify), which names count as leftovers and which do not, their
 * removal, the folder's lock, run ids, and a checkpoint's identity check. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/inotify.h>
#endif

#include "config/configuration.h"
#include "io/image/png_write.h"
#include "io/safetensors/safetensors.h"
#include "io/text_file.h"
#include "../lib/scratch.h"
#include "train/run/run_dir.h"
#include "train/run/run_guard.h"

static void setup(void)
{
    test_scratch_make("check_run_guard");
}

static const char *in_scratch(const char *name)
{
    static char path[800];
    snprintf(path, sizeof path, "%s/%s", test_scratch, name);
    return path;
}

static void touch(const char *name)
{
    FILE *f = fopen(in_scratch(name), "w");
    ck_assert_ptr_nonnull(f);
    fputs("x", f);
    fclose(f);
}

static int present(const char *name)
{
    return access(in_scratch(name), F_OK) == 0;
}

/* ------------------------------------------------------------------ temporary names */

#if defined(__linux__)
/* The names created in the scratch folder since the watch began, one per line. */
static void created_names(int fd, char *out, size_t size)
{
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    out[0] = '\0';
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if ((e->mask & IN_CREATE) && e->len) {
                strncat(out, e->name, size - strlen(out) - 1);
                strncat(out, "\n", size - strlen(out) - 1);
            }
            p += sizeof *e + e->len;
        }
}

enum writer { WRITE_PNG, WRITE_TEXT, WRITE_CHECKPOINT, WRITERS };

static const char *const targets[WRITERS] = { "final.png", "config.conf", "checkpoint.safetensors" };

static void write_with(enum writer which, const char *path)
{
    struct gan_error err;
    gan_error_clear(&err);
    if (which == WRITE_PNG) {
        static const unsigned char px[4] = { 0, 64, 128, 255 };
        struct gan_png_picture pic = { 2, 2, 0, px, "t", 0 };
        ck_assert_msg(gan_png_write(path, &pic, "test", &err) == GAN_OK, "%s", err.message);
    } else if (which == WRITE_TEXT) {
        ck_assert_msg(gan_file_write_atomic(path, "a = 1;\n", 7, &err) == GAN_OK, "%s",
                      err.message);
    } else {
        char msg[512];
        static const float v[2] = { 1, 2 };
        uint64_t shape[1] = { 2 };
        gan_st_writer *w = gan_st_writer_new();
        ck_assert_ptr_nonnull(w);
        ck_assert_int_eq(gan_st_writer_add(w, "x", GAN_ST_F32, 1, shape, v, sizeof v, msg,
                                           sizeof msg), GAN_OK);
        ck_assert_msg(gan_st_writer_write(w, path, msg, sizeof msg) == GAN_OK, "%s", msg);
        gan_st_writer_free(w);
    }
}
#endif

/* Each writer of a run folder's files makes its temporary file under a hidden name that
 * the leftover sweep recognises, and leaves only the target behind. */
START_TEST(temporary_names_are_hidden_leftovers)
{
#if defined(__linux__)
    const char *target = targets[_i];
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_ge(inotify_add_watch(fd, test_scratch, IN_CREATE), 0);
    /* Twice: the second write replaces the target rather than creating it. */
    write_with((enum writer)_i, in_scratch(target));
    write_with((enum writer)_i, in_scratch(target));
    char names[4096];
    created_names(fd, names, sizeof names);
    close(fd);
    int temporaries = 0;
    for (char *line = strtok(names, "\n"); line; line = strtok(NULL, "\n")) {
        ck_assert_msg(line[0] == '.', "%s wrote %s through a visible temporary file %s", "the writer",
                      target, line);
        ck_assert_msg(gan_run_is_leftover(line), "the temporary file %s of %s is not recognised as a leftover",
                      line, target);
        temporaries++;
    }
    ck_assert_int_eq(temporaries, 2);
    ck_assert(present(target));
#else
    (void)targets;
#endif
}
END_TEST

/* ------------------------------------------------------------------ leftovers */

START_TEST(leftover_names)
{
    static const char *const ours[] = {
        ".checkpoint.safetensors.tmp.1234.0", ".checkpoint.safetensors.tmp.7.42",
        ".config.conf.Ab12Cd", ".metrics.csv.XXXXXX", ".summary.json.zzzzzz",
        ".grad_stats.csv.a1b2c3", ".grad_underflow.csv.QWERTY", ".final.png.x1y2z3",
        ".real.png.000000", ".samples-000010.png.AbCdEf", ".samples-1234567.png.abcdef",
        "final.png.Ab12Cd", "samples-000200.png.x9y8z7",
    };
    static const char *const theirs[] = {
        "checkpoint.safetensors", "config.conf", "metrics.csv", "final.png", ".lock",
        "final.png.orig", "final.png.Ab12C", "final.png.Ab12Cd7", "final.png.Ab-2Cd",
        ".notes.txt.abcdef", "notes.txt.abcdef", "config.conf.abcdef", "metrics.csv.abcdef",
        ".checkpoint.safetensors.tmp.12x.0", ".checkpoint.safetensors.tmp.12.",
        ".checkpoint.safetensors.tmp..1", ".other.safetensors.tmp.1.2",
        ".samples-00010.png.abcdef", ".samples-0000a0.png.abcdef", "samples-000010.png",
        ".final.png", ".final.png.", ".",
    };
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        ck_assert_msg(gan_run_is_leftover(ours[i]), "%s is not taken for a leftover", ours[i]);
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++)
        ck_assert_msg(!gan_run_is_leftover(theirs[i]), "%s is taken for a leftover", theirs[i]);
}
END_TEST

START_TEST(leftovers_removed_and_nothing_else)
{
    touch(".checkpoint.safetensors.tmp.99.3");
    touch("final.png.Ab12Cd");
    touch(".metrics.csv.q1w2e3");
    touch("final.png");
    touch("notes.txt");
    touch(".notes.txt.abcdef");
    ck_assert_uint_eq(gan_run_remove_leftovers(test_scratch, NULL), 3);
    ck_assert(!present(".checkpoint.safetensors.tmp.99.3"));
    ck_assert(!present("final.png.Ab12Cd"));
    ck_assert(!present(".metrics.csv.q1w2e3"));
    ck_assert(present("final.png"));
    ck_assert(present("notes.txt"));
    ck_assert(present(".notes.txt.abcdef"));
    ck_assert_uint_eq(gan_run_remove_leftovers(test_scratch, NULL), 0);
}
END_TEST

/* ------------------------------------------------------------------ the lock */

/* flock(2) locks belong to an open file, so a second take in this process is refused
 * as another process's would be; a release lets the next one in and removes the file. */
START_TEST(lock_is_exclusive_and_names_its_holder)
{
    struct gan_error err;
    gan_error_clear(&err);
    gan_run_lock *a = NULL, *b = NULL;
    ck_assert_msg(gan_run_lock_take(test_scratch, &a, &err) == GAN_OK, "%s", err.message);
    ck_assert(present(GAN_RUN_LOCK));
    char *held = test_read_run_file(test_scratch, GAN_RUN_LOCK);
    char pid[64];
    snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    ck_assert_str_eq(held, pid);
    free(held);

    ck_assert_int_eq(gan_run_lock_take(test_scratch, &b, &err), GAN_ERR_IO);
    ck_assert_ptr_null(b);
    snprintf(pid, sizeof pid, "ganctl process %ld trains in it", (long)getpid());
    ck_assert_msg(strstr(err.message, pid), "%s", err.message);
    ck_assert_msg(strstr(err.message, test_scratch), "%s", err.message);

    gan_run_lock_release(a);
    ck_assert(!present(GAN_RUN_LOCK));
    gan_error_clear(&err);
    ck_assert_msg(gan_run_lock_take(test_scratch, &b, &err) == GAN_OK, "%s", err.message);
    gan_run_lock_release(b);
    gan_run_lock_release(NULL);
}
END_TEST

/* A lock file a killed process left (it holds a dead pid) is no lock. */
START_TEST(stale_lock_file_is_taken)
{
    FILE *f = fopen(in_scratch(GAN_RUN_LOCK), "w");
    ck_assert_ptr_nonnull(f);
    fputs("999999999\n", f);
    fclose(f);
    struct gan_error err;
    gan_error_clear(&err);
    gan_run_lock *a = NULL;
    ck_assert_msg(gan_run_lock_take(test_scratch, &a, &err) == GAN_OK, "%s", err.message);
    gan_run_lock_release(a);
}
END_TEST

/* ------------------------------------------------------------------ identity */

START_TEST(run_ids_are_hex_and_differ)
{
    char a[GAN_RUN_ID_SIZE], b[GAN_RUN_ID_SIZE];
    ck_assert_int_eq(gan_run_id_make(a, NULL), GAN_OK);
    ck_assert_int_eq(gan_run_id_make(b, NULL), GAN_OK);
    ck_assert_uint_eq(strlen(a), 32);
    ck_assert_uint_eq(strspn(a, "0123456789abcdef"), 32);
    ck_assert_str_ne(a, b);
}
END_TEST

static gan_config *config_of(const char *text)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    ck_assert_msg(gan_config_read_string(cfg, text, "test", GAN_CONFIG_FILE, &err) == GAN_OK, "%s",
                  err.message);
    return cfg;
}

struct identity_case {
    const char *folder, *saved;
    const char *message;          /* NULL: the same run */
};

static const struct identity_case identity_cases[] = {
    { "run = { id = \"aa\"; };", "run = { id = \"aa\"; iterations = 9; };", NULL },
    { "run = { id = \"aa\"; };", "run = { id = \"bb\"; };",
      "belongs to another run (another identity): run.id = \"bb\" in it, \"aa\" in config.conf" },
    { "run = { id = \"aa\"; };", "",
      "run.id = none (a run made before ganctl kept ids) in it, \"aa\" in config.conf" },
    { "", "", NULL },
    { "data = { name = \"8gaussians\"; };", "data = { name = \"25gaussians\"; };",
      "(another data set): data.name = \"25gaussians\" in it, \"8gaussians\" in config.conf" },
    { "critic = { model = { width = 16; }; };", "critic = { model = { width = 8; }; };",
      "(other network shapes): critic.model.width = 8 in it, 16 in config.conf" },
    { "", "generator = { model = { depth = 3; }; };",
      "generator.model.depth = 3 in it, no value in config.conf" },
    { "generator = { z_dim = 2; };", "generator = { z_dim = 4; };", "generator.z_dim = 4" },
    { "data = { batch_size = 8; };", "data = { batch_size = 16; };", NULL },
};

START_TEST(identity_check)
{
    const struct identity_case *c = &identity_cases[_i];
    gan_config *folder = config_of(c->folder), *saved = config_of(c->saved);
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_run_check_identity(folder, "config.conf", saved, "ck.safetensors", &err);
    if (!c->message) {
        ck_assert_msg(st == GAN_OK, "%s", err.message);
    } else {
        ck_assert_int_eq(st, GAN_ERR_FORMAT);
        ck_assert_msg(strstr(err.message, c->message), "\"%s\" lacks \"%s\"", err.message,
                      c->message);
        ck_assert_msg(strncmp(err.message, "ck.safetensors ", 15) == 0, "%s", err.message);
    }
    gan_config_free(folder);
    gan_config_free(saved);
}
END_TEST

static Suite *run_guard_suite(void)
{
    Suite *s = suite_create("run_guard");
    TCase *tc = tcase_create("temporary files");
    tcase_add_checked_fixture(tc, setup, test_scratch_remove);
    tcase_add_loop_test(tc, temporary_names_are_hidden_leftovers, 0, 3);
    tcase_add_test(tc, leftover_names);
    tcase_add_test(tc, leftovers_removed_and_nothing_else);
    suite_add_tcase(s, tc);

    tc = tcase_create("lock");
    tcase_add_checked_fixture(tc, setup, test_scratch_remove);
    tcase_add_test(tc, lock_is_exclusive_and_names_its_holder);
    tcase_add_test(tc, stale_lock_file_is_taken);
    suite_add_tcase(s, tc);

    tc = tcase_create("identity");
    tcase_add_test(tc, run_ids_are_hex_and_differ);
    tcase_add_loop_test(tc, identity_check, 0,
                        (int)(sizeof identity_cases / sizeof identity_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(run_guard_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
