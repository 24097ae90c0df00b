/* SPDX-License-Identifier: MIT */
/* run_dir.c — the run folder: its creation, its text files, summary.json through
 * jansson, and the progress line's text. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/strings.h"
#include "io/text_file.h"
#include "train/run/run_dir.h"

char *gan_run_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* ------------------------------------------------------------------ the folder */

/* mkdir -p: every missing folder of `path`, each 0777 less the umask. */
static int make_dirs(const char *path)
{
    char *p = gan_strdup(path);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *c = '/';
    }
    int rc = mkdir(p, 0777);
    if (rc != 0 && errno == EEXIST) {
        struct stat sb;
        rc = stat(p, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
        if (rc)
            errno = ENOTDIR;
    }
    free(p);
    return rc;
}

static int exists(const char *dir, const char *name)
{
    char *p = gan_run_path(dir, name);
    int yes = p && access(p, F_OK) == 0;
    free(p);
    return yes;
}

gan_status gan_run_dir_create(const char *dir, const char *origin, const char *data_name,
                              char **out, gan_run_lock **lock, struct gan_error *err)
{
    *out = NULL;
    *lock = NULL;
    if (dir && *dir) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            n--;
        char *path = malloc(n + 1);
        if (!path)
            return gan_error_nomem(err, "writing the run folder");
        memcpy(path, dir, n);
        path[n] = '\0';
        if (make_dirs(path) != 0) {
            gan_status st = gan_error_set(err, GAN_ERR_IO,
                                          "%s: cannot create the run folder %s: %s: choose another run.dir",
                                          origin, path, strerror(errno));
            free(path);
            return st;
        }
        /* Locked first: a run another process is setting up in it is then either
         * refused by the lock or complete enough to be seen. */
        gan_status st = gan_run_lock_take(path, lock, err);
        if (st == GAN_OK && (exists(path, GAN_RUN_CONFIG) || exists(path, GAN_RUN_CHECKPOINT) ||
                             exists(path, GAN_RUN_METRICS)))
            st = gan_error_set(err, GAN_ERR_CONFIG,
                               "%s: the run folder %s already holds a run: continue it with ganctl --resume %s, or choose another run.dir",
                               origin, path, path);
        if (st != GAN_OK) {
            gan_run_lock_release(*lock);
            *lock = NULL;
            free(path);
            return st;
        }
        *out = path;
        return GAN_OK;
    }
    if (make_dirs("runs") != 0)
        return gan_error_set(err, GAN_ERR_IO,
                             "cannot create the folder runs/ for the run: %s: set run.dir to a folder you can write",
                             strerror(errno));
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    char path[512];
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(path, sizeof path, "runs/%s-%s", data_name, stamp);
        else
            snprintf(path, sizeof path, "runs/%s-%s-%d", data_name, stamp, k);
        if (mkdir(path, 0777) == 0) {
            if (!(*out = gan_strdup(path)))
                return gan_error_nomem(err, "writing the run folder");
            gan_status st = gan_run_lock_take(*out, lock, err);
            if (st != GAN_OK) {
                free(*out);
                *out = NULL;
            }
            return st;
        }
        if (errno != EEXIST)
            return gan_error_set(err, GAN_ERR_IO,
                                 "cannot create the run folder %s: %s: set run.dir to a folder you can write",
                                 path, strerror(errno));
    }
    return gan_error_set(err, GAN_ERR_IO,
                         "cannot find a free name for the run folder under runs/: set run.dir");
}

/* ------------------------------------------------------------------ whole files */

gan_status gan_run_write_text(const char *dir, const char *name, const char *text,
                              struct gan_error *err)
{
    char *path = gan_run_path(dir, name);
    if (!path)
        return gan_error_nomem(err, "writing the run folder");
    gan_status st = gan_file_write_atomic(path, text, strlen(text), err);
    free(path);
    return st;
}

/* ------------------------------------------------------------------ summary.json */

json_t *gan_run_json_number(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* The object for a dotted key's group, made on the way ("a.b.c" → root.a.b). */
static json_t *group_of(json_t *root, const char *key, const char **leaf)
{
    json_t *at = root;
    const char *p = key;
    const char *dot;
    while ((dot = strchr(p, '.')) != NULL) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(dot - p), p);
        json_t *next = json_object_get(at, name);
        if (!next || !json_is_object(next)) {
            next = json_object();
            if (!next || json_object_set_new(at, name, next) != 0)
                return NULL;
        }
        at = next;
        p = dot + 1;
    }
    *leaf = p;
    return at;
}

static json_t *config_json(const gan_config *cfg)
{
    json_t *root = json_object();
    for (size_t i = 0; root && i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        const char *leaf;
        json_t *g = group_of(root, v->key, &leaf);
        if (!g)
            continue;
        json_t *j = NULL;
        switch (v->type) {
        case GAN_CONFIG_INT: j = json_integer(v->i); break;
        case GAN_CONFIG_FLOAT: j = gan_run_json_number(v->f); break;
        case GAN_CONFIG_BOOL: j = json_boolean(v->b); break;
        case GAN_CONFIG_STRING: j = json_string(v->s); break;
        case GAN_CONFIG_ARRAY:
        case GAN_CONFIG_LIST:
            j = json_array();
            for (size_t k = 0; j && k < v->n_items; k++)
                json_array_append_new(j, json_string(v->items[k]));
            break;
        case GAN_CONFIG_GROUP: j = json_object(); break;
        }
        if (j)
            json_object_set_new(g, leaf, j);
    }
    return root;
}

json_t *gan_run_toy_quality_json(const struct gan_toy_quality *q)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (q->has_modes) {
        json_object_set_new(o, "modes_covered", json_integer(q->modes_covered));
        json_object_set_new(o, "modes_total", json_integer((json_int_t)q->modes_total));
        json_object_set_new(o, "high_quality_pct", gan_run_json_number(q->high_quality_pct));
    }
    json_object_set_new(o, "sliced_w1", gan_run_json_number(q->sliced_w1));
    return o;
}

/* Named quality values (an image run's) as one object. */
static json_t *named_json(const struct gan_named_value *v, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && v && i < n; i++)
        json_object_set_new(o, v[i].name, gan_run_json_number(v[i].value));
    return o;
}

gan_status gan_run_summary_write(const char *dir, const struct gan_run_summary *s,
                                 struct gan_error *err)
{
    json_t *root = json_object();
    if (!root)
        return gan_error_nomem(err, "writing the run folder");
    json_object_set_new(root, "status", json_string(s->status));
    json_object_set_new(root, "ganctl_version", string_or_null(s->version));
    json_object_set_new(root, "run_dir", string_or_null(s->run_dir));
    json_object_set_new(root, "run_id", string_or_null(s->run_id));
    if (s->ranks > 0)
        json_object_set_new(root, "ranks", json_integer(s->ranks));
    json_object_set_new(root, "data", string_or_null(s->data));
    json_object_set_new(root, "iterations", json_integer(s->iterations));
    json_object_set_new(root, "iterations_planned", json_integer(s->iterations_planned));
    json_object_set_new(root, "wall_time_s", gan_run_json_number(s->wall_time_s));
    json_object_set_new(root, "iterations_per_s", gan_run_json_number(s->iterations_per_s));
    json_object_set_new(root, "backend", string_or_null(s->backend));
    json_t *models = json_object();
    json_object_set_new(models, "generator", string_or_null(s->generator));
    json_object_set_new(models, "critic", string_or_null(s->critic));
    json_object_set_new(root, "models", models);
    json_t *final = json_object();
    for (size_t i = 0; final && i < s->final_count; i++)
        json_object_set_new(final, s->final[i].name, gan_run_json_number(s->final[i].value));
    json_object_set_new(root, "final", final);
    if (s->quality.has) {
        json_t *q = json_object();
        json_object_set_new(q, "iteration", json_integer(s->quality.iteration));
        json_object_set_new(q, "samples", json_integer((json_int_t)s->quality.samples));
        if (s->quality.count) {
            json_object_set_new(q, "generated", named_json(s->quality.values, s->quality.count));
            json_object_set_new(q, "real_vs_real_floor",
                                named_json(s->quality.floor_values, s->quality.count));
        } else {
            json_object_set_new(q, "generated", gan_run_toy_quality_json(&s->quality.toy));
            json_object_set_new(q, "real_vs_real_floor", gan_run_toy_quality_json(&s->quality.toy_floor));
        }
        json_object_set_new(root, "quality", q);
    } else {
        json_object_set_new(root, "quality", json_null());
    }
    json_t *files = json_object();
    json_object_set_new(files, "metrics", json_string(GAN_RUN_METRICS));
    json_object_set_new(files, "config", json_string(GAN_RUN_CONFIG));
    json_object_set_new(files, "checkpoint", string_or_null(s->checkpoint));
    json_object_set_new(files, "final_image", string_or_null(s->final_image));
    if (s->events_file)
        json_object_set_new(files, "tensorboard", json_string(s->events_file));
    json_object_set_new(root, "files", files);
    if (s->divergence) {
        const struct gan_run_divergence *d = s->divergence;
        json_t *o = json_object();
        json_object_set_new(o, "network", string_or_null(d->network));
        json_object_set_new(o, "reason", string_or_null(d->reason));
        json_object_set_new(o, "loss", gan_run_json_number(d->loss));
        json_object_set_new(o, "skipped", json_integer(d->skipped));
        json_object_set_new(o, "steps", json_integer(d->steps));
        json_object_set_new(o, "since_iteration", json_integer(d->since_iteration));
        json_object_set_new(o, "loss_scale", gan_run_json_number(d->scale));
        json_object_set_new(o, "message", string_or_null(d->message));
        json_object_set_new(root, "divergence", o);
    }
    if (s->config)
        json_object_set_new(root, "config", config_json(s->config));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text)
        return gan_error_nomem(err, "writing the run folder");
    size_t n = strlen(text);
    char *with_newline = malloc(n + 2);
    gan_status st;
    if (!with_newline) {
        st = gan_error_nomem(err, "writing the run folder");
    } else {
        memcpy(with_newline, text, n);
        with_newline[n] = '\n';
        with_newline[n + 1] = '\0';
        st = gan_run_write_text(dir, GAN_RUN_SUMMARY, with_newline, err);
    }
    free(with_newline);
    free(text);
    return st;
}

/* ------------------------------------------------------------------ progress */

void gan_format_duration(char *buf, size_t size, double seconds)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, size, "?");
        return;
    }
    long long s = (long long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, size, "%lldh%02lldm", s / 3600, (s / 60) % 60);
    else if (s >= 60)
        snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
    else
        snprintf(buf, size, "%llds", s);
}
