/* SPDX-License-Identifier: MIT */
/* cli.c — ganctl's actions: --help, --version, --list-plugins, --print-config, and
 * training (new or --resume); the options they come from are cli_options.c's. Errors
 * are one "ganctl: " line each. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ganctl/ganctl.h>

#include "train/state/state.h"
#include "cli.h"
#include "cli_options.h"
#include "ranks.h"
#include "config/configuration.h"
#include "base/error.h"
#include "classifier_cmd.h"
#include "grads_cmd.h"
#include "after_cmds.h"
#include "base/log.h"
#include "plugin/plugin_loader.h"
#include "progress.h"
#include "train/run/run.h"
#include "train/loop/trainer.h"

/* Nonzero while a progress line is on the terminal without its newline: a log line
 * then starts on a line of its own. */
static int progress_line_open;

/* The program's log sink: stderr, one prefixed line per message. */
static void stderr_sink(void *ctx, enum gan_log_level level, const char *line)
{
    (void)ctx;
    if (progress_line_open) {
        fputc('\n', stderr);
        progress_line_open = 0;
    }
    const char *tag = level == GAN_LOG_ERROR ? "error: "
                    : level == GAN_LOG_WARN  ? "warning: "
                    : level == GAN_LOG_DEBUG ? "debug: " : "";
    fprintf(stderr, "ganctl: %s%s\n", tag, line);
}

static int fail_line(const struct gan_error *err)
{
    fprintf(stderr, "ganctl: %s\n", err->message[0] ? err->message : gan_status_string(err->status));
    return err->status == GAN_ERR_CONFIG ? EXIT_USAGE : EXIT_RUNTIME;
}

/* ------------------------------------------------------------------ loading */

/* The --set and setting flags' changes, in argv order. */
static gan_status apply_assignments(const struct cli *c, gan_config *cfg, struct gan_error *err)
{
    gan_status st = GAN_OK;
    for (size_t i = 0; st == GAN_OK && i < c->assignment_count; i++) {
        const struct assignment *a = &c->assignments[i];
        if (a->set) {
            st = gan_config_set(cfg, a->set, err);
        } else {
            char origin[512];
            snprintf(origin, sizeof origin, "%s %s", a->flag, a->value);
            /* A name is a name even when it looks like a number; a level is a number. */
            if (strcmp(a->key, "run.debug_level") == 0)
                st = gan_config_set_flag(cfg, a->key, a->value, origin, err);
            else
                st = gan_config_set_string(cfg, a->key, a->value, origin, err);
        }
    }
    return st;
}

/* Whether the run folder `dir` holds a checkpoint yet. */
static int has_checkpoint(const char *dir)
{
    char *path = gan_run_path(dir, GAN_RUN_CHECKPOINT);
    int yes = path && access(path, F_OK) == 0;
    free(path);
    return yes;
}

/* The configuration a resumed run starts from, as `label` names it: the one saved in
 * its checkpoint, or the folder's config.conf where the run stopped before writing a
 * checkpoint (it then starts again from iteration 0). */
static gan_status saved_config(const char *dir, gan_config **out, char *label, size_t size,
                               struct gan_error *err)
{
    *out = NULL;
    /* A mistyped folder is told as such, not as a folder without a checkpoint. */
    struct stat folder;
    if (stat(dir, &folder) != 0 && errno == ENOENT)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--resume %s: the folder does not exist: give the run folder of an earlier run (its run.dir)",
                             dir);
    if (stat(dir, &folder) == 0 && !S_ISDIR(folder.st_mode))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--resume %s: not a folder: give the run folder of an earlier run (its run.dir)",
                             dir);
    char *path = gan_run_path(dir, GAN_RUN_CHECKPOINT);
    char *conf = gan_run_path(dir, GAN_RUN_CONFIG);
    if (!path || !conf) {
        free(path);
        free(conf);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory");
    }
    char *text = NULL;
    gan_status st;
    enum gan_config_source source = GAN_CONFIG_CHECKPOINT;
    if (!has_checkpoint(dir) && access(conf, F_OK) == 0) {
        snprintf(label, size, "%s", conf);
        source = GAN_CONFIG_RUN_FOLDER;
        st = gan_file_read_text(conf, &text, err);
    } else {
        snprintf(label, size, "%s (saved configuration)", path);
        st = gan_checkpoint_read_config(path, &text, err);
    }
    free(path);
    free(conf);
    /* A folder without a run is a mistake in the command, like a missing --config file. */
    if (st == GAN_ERR_NOT_FOUND) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        st = gan_error_set(err, GAN_ERR_CONFIG, "--resume %s: %s", dir, why);
    }
    if (st == GAN_OK)
        st = gan_config_new(out, err);
    if (st == GAN_OK)
        st = gan_config_read_string(*out, text, label, source, err);
    free(text);
    if (st != GAN_OK) {
        gan_config_free(*out);
        *out = NULL;
    }
    return st;
}

/* The file -c names: as given when it exists or is a path (has a slash); else the
 * installed example of that name when there is one, so that `ganctl -c
 * fashion-mnist.conf` runs the shipped set-up from any folder. A name found nowhere is
 * kept as given, for the error to name. */
static const char *config_file_path(const char *name, char *buf, size_t size)
{
    if (!name || strchr(name, '/') || access(name, F_OK) == 0)
        return name;
    int n = snprintf(buf, size, "%s/%s", GAN_PKGDATADIR, name);
    if (n < 0 || (size_t)n >= size || access(buf, F_OK) != 0)
        return name;
    return buf;
}

static gan_status load_config(const struct cli *c, struct gan_log *log, gan_config **out,
                              struct gan_error *err)
{
    gan_config *cfg;
    gan_status st;
    char example[4200];
    const char *config_file = config_file_path(c->config_file, example, sizeof example);
    if (c->resume) {
        /* A resumed run starts from its own settings, not from the installed file or
         * $GANCTL_CONFIG: those may have changed since it began. */
        char label[4200];
        if ((st = saved_config(c->resume, &cfg, label, sizeof label, err)) != GAN_OK)
            return st;
        if (config_file)
            st = gan_config_read_file(cfg, config_file, GAN_CONFIG_FILE, err);
    } else {
        if ((st = gan_config_new(&cfg, err)) != GAN_OK)
            return st;
        const char *env = getenv("GANCTL_CONFIG");
        struct gan_config_files files = {
            .installed = GAN_SYSCONFDIR "/ganctl.conf",
            .env = env && *env ? env : NULL,
            .file = config_file,
        };
        st = gan_config_read_files(cfg, &files, err);
    }
    if (st == GAN_OK)
        st = apply_assignments(c, cfg, err);
    if (st == GAN_OK && c->resume) {
        char origin[4200];
        snprintf(origin, sizeof origin, "--resume %s", c->resume);
        st = gan_config_set_string(cfg, "run.dir", c->resume, origin, err);
    }
    const char *level = NULL;
    enum gan_log_level parsed;
    if (st == GAN_OK && gan_config_get_string(cfg, "log.level", &level) == GAN_OK &&
        gan_log_level_parse(level, &parsed) == GAN_OK)
        log->level = parsed;
    if (st != GAN_OK) {
        gan_config_free(cfg);
        return st;
    }
    for (size_t i = 0; i < gan_config_file_count(cfg); i++)
        gan_log_write(log, GAN_LOG_DEBUG, "read %s", gan_config_file_at(cfg, i));
    *out = cfg;
    return GAN_OK;
}

/* What a resumed run may change: how long it runs, what it writes when, how much it
 * logs, and the backend (which may change the last bits of the results). */
static int may_change_on_resume(const char *key)
{
    static const char *const keys[] = {
        "run.dir", "run.iterations", "run.log_every", "run.eval_every", "run.image_every",
        "run.checkpoint_every", "run.debug_level", "log.level",
        "run.tensorboard", "run.diverged_skip_fraction", "run.diverged_window",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return 1;
    return strncmp(key, "backend.", 8) == 0;
}

static int same_value(const struct gan_config_value *a, const struct gan_config_value *b)
{
    char x[1024], y[1024];
    gan_config_format_value(a, x, sizeof x);
    gan_config_format_value(b, y, sizeof y);
    return a->type == b->type && strcmp(x, y) == 0;
}

/* A resumed run's settings against those it was trained with. */
static gan_status check_resume_changes(const struct cli *c, const gan_config *cfg,
                                       const gan_loader *loader, const struct gan_log *log,
                                       struct gan_error *err)
{
    gan_config *saved;
    char label[4200];
    gan_status st = saved_config(c->resume, &saved, label, sizeof label, err);
    if (st == GAN_OK)
        st = gan_trainer_check_config(saved, loader, err);
    for (size_t i = 0; st == GAN_OK && i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        const struct gan_config_value *was = gan_config_find(saved, v->key);
        if (was && same_value(v, was))
            continue;
        /* A setting of a loss term that loss.terms does not list: the session drops it
         * as it opens (ganctl's default, or a file's setting for the list that --set
         * replaced) or refuses it, saying why; the run never had it either way. */
        if (!was && gan_config_of_unlisted_term(cfg, v->key))
            continue;
        char now[512], then[512];
        gan_config_format_value(v, now, sizeof now);
        if (was)
            gan_config_format_value(was, then, sizeof then);
        else
            snprintf(then, sizeof then, "no value");
        if (may_change_on_resume(v->key)) {
            if (strncmp(v->key, "backend.", 8) == 0)
                gan_log_write(log, GAN_LOG_WARN,
                              "%s: %s = %s, the run was trained with %s: the results may differ in the last bits from an uninterrupted run",
                              v->origin, v->key, now, then);
            continue;
        }
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: %s = %s, but the run in %s was trained with %s: a resumed run keeps its settings except run.iterations, run.*_every, run.debug_level, run.tensorboard, run.diverged_skip_fraction, log.level and backend.*; start a new run to change it",
                           v->origin, v->key, now, c->resume, then);
    }
    gan_config_free(saved);
    return st;
}

static void log_settings(const gan_config *cfg, const struct gan_log *log)
{
    if (!gan_log_enabled(log, GAN_LOG_DEBUG))
        return;
    for (size_t i = 0; i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        char text[512];
        gan_config_format_value(v, text, sizeof text);
        gan_log_write(log, GAN_LOG_DEBUG, "%s = %s (%s)", v->key, text, v->origin);
    }
}

static gan_status make_loader(const struct cli *c, const struct gan_log *log, gan_loader **out,
                              struct gan_error *err)
{
    gan_status st = gan_loader_new(out, c->plugin_dirs, c->plugin_dir_count,
                                   getenv("GANCTL_PLUGIN_PATH"), GAN_PKGLIBDIR, err);
    if (st == GAN_OK && gan_log_enabled(log, GAN_LOG_DEBUG))
        for (size_t i = 0; i < gan_loader_dir_count(*out); i++)
            gan_log_write(log, GAN_LOG_DEBUG, "plugin folder %zu: %s", i + 1,
                          gan_loader_dir_at(*out, i));
    return st;
}

/* The selected backend, loaded, its settings checked, and created. */
static gan_status open_backend(const gan_loader *loader, gan_config *cfg, const struct gan_log *log,
                               struct gan_module **module, struct gan_backend_instance **inst,
                               struct gan_error *err)
{
    gan_status st = gan_open_backend(loader, cfg, module, err);
    if (st != GAN_OK)
        return st;
    log_settings(cfg, log);
    return gan_backend_instance_new(*module, cfg, log, inst, err);
}

/* ------------------------------------------------------------------ --list-plugins */

static void list_plugins(const gan_loader *loader, const struct gan_plugin_list *list)
{
    printf("Plugin search path:\n");
    for (size_t i = 0; i < gan_loader_dir_count(loader); i++) {
        const char *dir = gan_loader_dir_at(loader, i);
        printf("  %s%s\n", dir, access(dir, F_OK) == 0 ? "" : " (does not exist)");
    }
    if (!list->count) {
        printf("\nNo plugins found: modules are files named KIND-NAME.so in these folders.\n");
        return;
    }
    for (size_t i = 0; i < list->count; i++) {
        const struct gan_plugin_info *p = &list->items[i];
        putchar('\n');
        if (p->shadowed_by) {
            printf("%s %s (shadowed)\n  file:     %s\n  shadowed by %s, found earlier in the search path\n",
                   p->kind, p->name, p->path, p->shadowed_by);
            continue;
        }
        if (p->error) {
            printf("%s %s (does not load)\n  file:     %s\n  error:    %s\n", p->kind, p->name,
                   p->path, p->error);
            continue;
        }
        printf("%s %s %s\n  file:     %s\n", p->kind, p->name, p->version, p->path);
        if (*p->summary)
            printf("  summary:  %s\n", p->summary);
        if (p->is_backend)
            printf("  status:   %s%s%s\n", p->available ? "available (" : "unavailable: ",
                   p->status, p->available ? ")" : "");
        for (size_t s = 0; s < p->setting_count; s++) {
            const struct gan_plugin_setting_info *si = &p->settings[s];
            printf("  setting:  %s, %s", si->name, gan_setting_type_phrase(si->type));
            if (si->default_value)
                printf(", default %s", si->default_value);
            if (*si->summary)
                printf(": %s", si->summary);
            putchar('\n');
        }
    }
}

/* ------------------------------------------------------------------ training */

/* The signal that asked training to stop, 0 while none did. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
    stop_signal = signo;
}

/* The first SIGINT or SIGTERM asks the trainer to stop after the iteration in
 * progress; the handler is then reset, so a second one stops ganctl at once. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

struct progress_state {
    const struct gan_log *log;
    int terminal;                 /* stderr is a terminal: one line, rewritten in place */
    double last_draw;
};

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* On a terminal, the progress line is redrawn at most ten times a second (and at each
 * evaluation), fitted to the terminal's width so that it never wraps (cli/progress.c);
 * elsewhere each evaluation gives one plain log line with every field. */
static void on_progress(void *ctx, const struct gan_progress *p, int final)
{
    struct progress_state *ps = ctx;
    char line[1024];
    gan_progress_line(line, sizeof line, p, ps->terminal ? gan_terminal_width(STDERR_FILENO) : 0);
    if (ps->terminal && gan_log_enabled(ps->log, GAN_LOG_INFO)) {
        double now = monotonic_s();
        if (!final && !p->evaluated && now - ps->last_draw < 0.1)
            return;
        ps->last_draw = now;
        fprintf(stderr, "\r\033[K%s", line);
        progress_line_open = 1;
        if (final) {
            fputc('\n', stderr);
            progress_line_open = 0;
        }
        fflush(stderr);
        return;
    }
    if (p->evaluated || final)
        gan_log_write(ps->log, GAN_LOG_INFO, "%s", line);
}

/* The final quality line, with the real-vs-real floors beside the values. */
static void print_result(const struct gan_trainer_result *r)
{
    char wall[32];
    gan_format_duration(wall, sizeof wall, r->session_s);
    printf("%s: %lld of %lld iterations; this session %s at %.2f it/s; run folder %s\n",
           r->interrupted ? "stopped" : "trained", (long long)r->iterations,
           (long long)r->planned, wall, r->it_per_s, r->run_dir);
    if (!r->has_quality)
        return;
    if (r->quality_count) {
        printf("quality at iteration %lld (%s, %zu generated vs %zu test images):",
               (long long)r->quality_iteration, r->data, r->quality_samples, r->quality_samples);
        for (size_t i = 0; i < r->quality_count; i++)
            printf("%s %s %.4g (floor %.4g)", i ? "," : "", r->quality_values[i].name,
                   r->quality_values[i].value, r->floor_values[i].value);
        printf("\n");
        return;
    }
    const struct gan_toy_quality *q = &r->quality, *f = &r->floor;
    printf("quality at iteration %lld (%s, %u generated vs %u real samples):",
           (long long)r->quality_iteration, r->data, GAN_EVAL_SAMPLES, GAN_EVAL_SAMPLES);
    if (q->has_modes)
        printf(" modes %ld/%zu (floor %ld/%zu), high-quality %.1f%% (floor %.1f%%),",
               q->modes_covered, q->modes_total, f->modes_covered, f->modes_total,
               q->high_quality_pct, f->high_quality_pct);
    printf(" sliced W1 %.4f (floor %.4f)\n", q->sliced_w1, f->sliced_w1);
}

static int train_ranks(const struct cli *c, gan_config *cfg, const gan_loader *loader,
                       const struct gan_log *log, gan_comm *comm);

/* Training, as one process or as one rank of mpirun's (ranks.h). */
static int train(const struct cli *c, gan_config *cfg, const gan_loader *loader,
                 const struct gan_log *log)
{
    gan_comm *comm = NULL;
    struct gan_log rank_log;
    int rc = gan_cli_ranks_open(&comm, &rank_log, log);
    if (rc == 0)
        rc = train_ranks(c, cfg, loader, &rank_log, comm);
    return gan_cli_ranks_close(comm, rc, EXIT_SIGNAL_BASE);
}

static int train_ranks(const struct cli *c, gan_config *cfg, const gan_loader *loader,
                       const struct gan_log *log, gan_comm *comm)
{
    struct gan_error err;
    gan_error_clear(&err);
    struct progress_state ps = { log, isatty(STDERR_FILENO), 0.0 };
    struct gan_trainer_setup setup = {
        .config = cfg, .loader = loader, .log = log, .resume_dir = c->resume,
        .restart = c->resume && !has_checkpoint(c->resume),
        .stop = &stop_signal, .events = { .ctx = &ps,
                    .progress = gan_cli_ranks_speaks(comm) ? on_progress : NULL },
        .comm = comm,
    };
    if (c->resume && check_resume_changes(c, cfg, loader, log, &err) != GAN_OK)
        return gan_cli_ranks_fail(comm, &err, fail_line);
    gan_trainer *t = NULL;
    if (gan_trainer_new(&setup, &t, &err) != GAN_OK)
        return gan_cli_ranks_fail(comm, &err, fail_line);
    log_settings(cfg, log);
    gan_log_write(log, GAN_LOG_INFO, "backend: %s", gan_trainer_backend_description(t));
    gan_log_write(log, GAN_LOG_INFO, "%s in %s",
                  !c->resume ? "training a new run"
                  : gan_trainer_resumed(t) ? "resuming from its checkpoint"
                  : "training the run again from iteration 0", gan_trainer_run_dir(t));
    catch_stop_signals();
    struct gan_trainer_result r;
    gan_status st = gan_trainer_run(t, &r, &err);
    if (st == GAN_OK)
        gan_cli_ranks_ended_together(comm);
    if (progress_line_open) {
        fputc('\n', stderr);
        progress_line_open = 0;
    }
    int rc = 0;
    if (st != GAN_OK) {
        rc = gan_cli_ranks_fail(comm, &err, fail_line);
        if (rc == EXIT_USAGE)
            rc = EXIT_RUNTIME;
    } else {
        int speaks = gan_cli_ranks_speaks(comm);
        if (speaks)
            print_result(&r);
        if (r.diverged) {
            if (speaks) {
                fflush(stdout);
                fprintf(stderr, "ganctl: %s\n", r.divergence);
            }
            rc = EXIT_DIVERGED;
        }
        if (r.interrupted) {
            gan_log_write(log, GAN_LOG_INFO,
                          "stopped by signal %d after iteration %lld; checkpoint in %s/%s: continue with ganctl --resume %s",
                          (int)stop_signal, (long long)r.iterations, r.run_dir, GAN_RUN_CHECKPOINT,
                          r.run_dir);
            rc = EXIT_SIGNAL_BASE + (int)stop_signal;
        }
    }
    gan_trainer_free(t);
    return rc;
}

/* ------------------------------------------------------------------ grads */

static void print_line(void *arg, const char *text)
{
    fprintf(arg, "%s\n", text);
}

/* --debug-level 2: each network's comparison with its FP32 shadow, every row. */
static void print_probes(const struct gan_grads_args *args, const struct gan_grads_report *r)
{
    if (args->debug_level < 2)
        return;
    if (!r->probe[0] && !r->probe[1]) {
        printf("debug level 2: the checkpoint's run computes in FP32; there is no 16-bit backward to compare\n");
        return;
    }
    printf("true underflow (values zero in the 16-bit backward but not in its FP32 shadow):\n");
    for (int i = 1; i >= 0; i--)
        gan_probe_report(r->probe[i], i ? "critic" : "generator", SIZE_MAX, print_line, stdout);
}

/* `ganctl grads ...`: argv[0] is "grads". The result line goes to stdout. */
static int grads_command(int argc, char **argv)
{
    struct gan_log log;
    gan_log_init(&log, stderr_sink, NULL);
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_grads_args args;
    gan_loader *loader = NULL;
    struct gan_grads_report r;
    memset(&r, 0, sizeof r);
    int rc = 0;
    if (gan_grads_parse_args(argc, argv, &args, &err) != GAN_OK) {
        rc = fail_line(&err);
    } else if (args.help) {
        fputs(gan_grads_usage(), stdout);
    } else if (gan_loader_new(&loader, args.plugin_dirs, args.plugin_dir_count,
                              getenv("GANCTL_PLUGIN_PATH"), GAN_PKGLIBDIR, &err) != GAN_OK ||
               gan_grads_run(&args, loader, &log, &r, &err) != GAN_OK) {
        rc = fail_line(&err);
    } else {
        const struct gan_grads_value *cl = gan_grads_find_value(&r.values, "loss.critic");
        const struct gan_grads_value *gl = gan_grads_find_value(&r.values, "loss.generator");
        printf("wrote %s: gradients of %zu critic and %zu generator tensors and %zu loss values, "
               "checkpoint iteration %lld, batch of %lld; loss.critic %.9g, loss.generator %.9g\n",
               args.out, r.critic_tensors, r.generator_tensors, r.values.count,
               (long long)r.iteration, (long long)r.batch_size, cl ? cl->value : NAN,
               gl ? gl->value : NAN);
        print_probes(&args, &r);
    }
    gan_grads_report_free(&r);
    fflush(stdout);
    gan_loader_free(loader);
    gan_grads_args_free(&args);
    return rc;
}

/* ------------------------------------------------------------------ main */

/* --help and --version without --backend, answered from the options alone so that
 * they work without a configuration or plugins. Returns 1 when the program is done,
 * with *rc its exit status (a usage error's too) and c's lists freed; 0 to go on. */
static int answered_by_options(struct cli *c, int argc, char **argv, int *rc)
{
    *rc = gan_cli_parse_options(c, argc, argv);
    if (*rc || c->help) {
        if (!*rc)
            gan_cli_usage(stdout);
        free(c->plugin_dirs);
        free(c->assignments);
        return 1;
    }
    if (c->version && !c->backend_chosen) {
        gan_cli_print_version();
        free(c->plugin_dirs);
        free(c->assignments);
        return 1;
    }
    return 0;
}

/* --list-plugins: the plugins the search path holds. The list is the caller's to
 * clear, whether the scan succeeded or not. */
static int list_plugins_action(const gan_loader *loader, struct gan_plugin_list *list,
                               struct gan_error *err)
{
    if (gan_loader_scan(loader, list, err) != GAN_OK)
        return fail_line(err);
    list_plugins(loader, list);
    return 0;
}

/* --print-config: the configuration as a run would use it, with each value's origin;
 * checked first, so that what is printed is a configuration a run accepts. */
static int print_config_action(gan_config *cfg, const gan_loader *loader,
                               struct gan_error *err)
{
    if (gan_trainer_check_config(cfg, loader, err) != GAN_OK)
        return fail_line(err);
    char *text = gan_config_to_text(cfg, 1);
    if (!text) {
        fputs("ganctl: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    fputs(text, stdout);
    free(text);
    return 0;
}

/* --version with --backend: the program's version, then the chosen backend's, which
 * needs the backend opened. *module and *inst are the caller's to free, opened or not. */
static int backend_version_action(const gan_loader *loader, gan_config *cfg,
                                  const struct gan_log *log, struct gan_module **module,
                                  struct gan_backend_instance **inst, struct gan_error *err)
{
    gan_cli_print_version();
    if (open_backend(loader, cfg, log, module, inst, err) != GAN_OK)
        return fail_line(err);
    printf("backend %s %s: %s\n", (*module)->plugin.name,
           (*module)->plugin.version ? (*module)->plugin.version : "",
           gan_backend_instance_describe(*inst));
    return 0;
}

int gan_cli_main(int argc, char **argv)
{
    /* A command word comes first; everything else is an option of training's. */
    if (argc > 1 && strcmp(argv[1], "grads") == 0)
        return grads_command(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "classifier") == 0)
        return gan_classifier_command(argc - 1, argv + 1);
    int after_rc;
    if (argc > 1 && gan_after_command(argc - 1, argv + 1, &after_rc))
        return after_rc;
    struct cli c;
    memset(&c, 0, sizeof c);
    int rc;
    if (answered_by_options(&c, argc, argv, &rc))
        return rc;

    struct gan_log log;
    gan_log_init(&log, stderr_sink, NULL);
    struct gan_error err;
    gan_error_clear(&err);
    gan_config *cfg = NULL;
    gan_loader *loader = NULL;
    struct gan_module *module = NULL;
    struct gan_backend_instance *inst = NULL;
    struct gan_plugin_list list = { NULL, 0 };

    if (load_config(&c, &log, &cfg, &err) != GAN_OK ||
        make_loader(&c, &log, &loader, &err) != GAN_OK)
        rc = fail_line(&err);
    else if (c.list_plugins)
        rc = list_plugins_action(loader, &list, &err);
    else if (c.print_config)
        rc = print_config_action(cfg, loader, &err);
    else if (c.version)
        rc = backend_version_action(loader, cfg, &log, &module, &inst, &err);
    else
        rc = train(&c, cfg, loader, &log);

    fflush(stdout);
    gan_plugin_list_clear(&list);
    gan_backend_instance_free(inst);
    gan_module_close(module);
    gan_loader_free(loader);
    gan_config_free(cfg);
    free(c.plugin_dirs);
    free(c.assignments);
    return rc;
}
