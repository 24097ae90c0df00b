/* run_dir.c — the run folder: its creation, atomic text files, metrics.csv (with the cut
 * a resumed run needs), summary.json through jansson, and the progress line's text. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "train/run_dir.h"

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static gan_status nomem(struct gan_error *err)
{
    return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while writing the run folder");
}

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
    char *p = dup_string(path);
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
                              char **out, struct gan_error *err)
{
    *out = NULL;
    if (dir && *dir) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            n--;
        char *path = malloc(n + 1);
        if (!path)
            return nomem(err);
        memcpy(path, dir, n);
        path[n] = '\0';
        if (make_dirs(path) != 0) {
            gan_status st = gan_error_set(err, GAN_ERR_IO,
                                          "%s: cannot create the run folder %s: %s: choose another run.dir",
                                          origin, path, strerror(errno));
            free(path);
            return st;
        }
        if (exists(path, GAN_RUN_CHECKPOINT) || exists(path, GAN_RUN_METRICS)) {
            gan_status st = gan_error_set(err, GAN_ERR_CONFIG,
                                          "%s: the run folder %s already holds a run: continue it with ganctl --resume %s, or choose another run.dir",
                                          origin, path, path);
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
            *out = dup_string(path);
            return *out ? GAN_OK : nomem(err);
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

/* Writes bytes to dir/name through a temporary file, fsync and rename, then syncs the
 * folder so the rename itself survives a crash. */
static gan_status write_atomic(const char *path, const char *data, size_t size,
                               struct gan_error *err)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return nomem(err);
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    if (slash)
        snprintf(tmp, n + 16, "%.*s/.%s.XXXXXX", (int)dlen, path, slash + 1);
    else
        snprintf(tmp, n + 16, ".%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        gan_status st = gan_error_set(err, GAN_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    /* mkstemp makes the file 0600; results are for reading by others too. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    const char *p = data;
    size_t left = size;
    int bad = 0;
    while (left > 0 && !bad) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            bad = 1;
        else {
            p += w;
            left -= (size_t)w;
        }
    }
    int saved = errno;
    if (!bad && fsync(fd) != 0) {
        bad = 1;
        saved = errno;
    }
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        unlink(tmp);
        free(tmp);
        return gan_error_set(err, GAN_ERR_IO, "cannot write %s: %s", path, strerror(saved));
    }
    free(tmp);
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)dlen : 1, slash ? path : ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return GAN_OK;
}

gan_status gan_run_write_text(const char *dir, const char *name, const char *text,
                              struct gan_error *err)
{
    char *path = gan_run_path(dir, name);
    if (!path)
        return nomem(err);
    gan_status st = write_atomic(path, text, strlen(text), err);
    free(path);
    return st;
}

gan_status gan_run_read_text(const char *path, char **out, struct gan_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gan_error_set(err, errno == ENOENT ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                             "cannot read %s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    gan_status st = GAN_OK;
    while (buf) {
        if (len + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf)
        st = nomem(err);
    else if (ferror(f))
        st = gan_error_set(err, GAN_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    fclose(f);
    if (st != GAN_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    return GAN_OK;
}

/* ------------------------------------------------------------------ metrics.csv */

struct gan_metrics_csv {
    FILE *f;
    char *path;
    size_t columns;
};

static char *header_line(const char *const *columns, size_t count)
{
    size_t n = 2;
    for (size_t i = 0; i < count; i++)
        n += strlen(columns[i]) + 1;
    char *h = malloc(n);
    if (!h)
        return NULL;
    h[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        if (i)
            strcat(h, ",");
        strcat(h, columns[i]);
    }
    strcat(h, "\n");
    return h;
}

/* The rows of an existing file up to and including iteration `last`, header first. */
static gan_status cut_rows(const char *path, const char *header, int64_t last, char **kept,
                           size_t *kept_len, struct gan_error *err)
{
    char *text;
    gan_status st = gan_run_read_text(path, &text, err);
    if (st == GAN_ERR_NOT_FOUND)
        return gan_error_set(err, GAN_ERR_NOT_FOUND,
                             "%s is missing: a resumed run continues its metrics.csv; restore the file or start a new run",
                             path);
    if (st != GAN_OK)
        return st;
    size_t hlen = strlen(header);
    if (strncmp(text, header, hlen) != 0) {
        free(text);
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: its header differs from the columns this run writes (%.*s): the file belongs to another run; move it away to resume",
                             path, (int)(hlen - 1), header);
    }
    /* Keep whole lines (a crash can leave half a line) of iterations up to `last`. */
    size_t out = hlen;
    const char *p = text + hlen;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        char *end;
        long long it = strtoll(p, &end, 10);
        if (end == p || *end != ',') {
            free(text);
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: line %.20s… does not start with an iteration number: the file is damaged; move it away to resume",
                                 path, p);
        }
        if (it > last)
            break;
        size_t len = (size_t)(nl - p) + 1;
        memmove(text + out, p, len);
        out += len;
        p = nl + 1;
    }
    text[out] = '\0';
    *kept = text;
    *kept_len = out;
    return GAN_OK;
}

gan_status gan_metrics_csv_open(const char *path, const char *const *columns, size_t count,
                                int64_t resume_after, gan_metrics_csv **out,
                                struct gan_error *err)
{
    *out = NULL;
    char *header = header_line(columns, count);
    if (!header)
        return nomem(err);
    gan_status st = GAN_OK;
    if (resume_after >= 0) {
        char *kept = NULL;
        size_t len = 0;
        st = cut_rows(path, header, resume_after, &kept, &len, err);
        if (st == GAN_OK)
            st = write_atomic(path, kept, len, err);
        free(kept);
    } else {
        st = write_atomic(path, header, strlen(header), err);
    }
    free(header);
    if (st != GAN_OK)
        return st;
    gan_metrics_csv *m = calloc(1, sizeof *m);
    if (!m || !(m->path = dup_string(path))) {
        free(m);
        return nomem(err);
    }
    m->columns = count;
    m->f = fopen(path, "a");
    if (!m->f) {
        st = gan_error_set(err, GAN_ERR_IO, "cannot open %s to append: %s", path, strerror(errno));
        free(m->path);
        free(m);
        return st;
    }
    *out = m;
    return GAN_OK;
}

static void format_float(char *buf, size_t size, double x)
{
    if (isnan(x))
        snprintf(buf, size, "nan");
    else if (isinf(x))
        snprintf(buf, size, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, size, "%.9g", x);
}

gan_status gan_metrics_csv_row(gan_metrics_csv *m, const struct gan_cell *cells, size_t count,
                               struct gan_error *err)
{
    if (count != m->columns)
        return gan_error_set(err, GAN_ERR_INTERNAL, "%s: a row of %zu cells for %zu columns",
                             m->path, count, m->columns);
    for (size_t i = 0; i < count; i++) {
        char cell[256] = "";
        if (cells[i].kind == GAN_CELL_INT)
            snprintf(cell, sizeof cell, "%lld", cells[i].i);
        else if (cells[i].kind == GAN_CELL_FLOAT)
            format_float(cell, sizeof cell, cells[i].f);
        else if (cells[i].kind == GAN_CELL_TEXT && cells[i].s)
            snprintf(cell, sizeof cell, "%s", cells[i].s);
        fputs(cell, m->f);
        fputc(i + 1 < count ? ',' : '\n', m->f);
    }
    if (fflush(m->f) != 0 || ferror(m->f))
        return gan_error_set(err, GAN_ERR_IO, "cannot write %s: %s", m->path, strerror(errno));
    return GAN_OK;
}

gan_status gan_metrics_csv_sync(gan_metrics_csv *m, struct gan_error *err)
{
    if (fflush(m->f) != 0 || fsync(fileno(m->f)) != 0)
        return gan_error_set(err, GAN_ERR_IO, "cannot write %s: %s", m->path, strerror(errno));
    return GAN_OK;
}

gan_status gan_metrics_csv_close(gan_metrics_csv *m, struct gan_error *err)
{
    if (!m)
        return GAN_OK;
    gan_status st = GAN_OK;
    if (fclose(m->f) != 0)
        st = gan_error_set(err, GAN_ERR_IO, "cannot write %s: %s", m->path, strerror(errno));
    free(m->path);
    free(m);
    return st;
}

/* ------------------------------------------------------------------ summary.json */

/* A number, or null when it is not finite (JSON has no NaN). */
static json_t *number(double x)
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
        case GAN_CONFIG_FLOAT: j = number(v->f); break;
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

static json_t *quality_json(const struct gan_toy_quality *q)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (q->has_modes) {
        json_object_set_new(o, "modes_covered", json_integer(q->modes_covered));
        json_object_set_new(o, "modes_total", json_integer((json_int_t)q->modes_total));
        json_object_set_new(o, "high_quality_pct", number(q->high_quality_pct));
    }
    json_object_set_new(o, "sliced_w1", number(q->sliced_w1));
    return o;
}

/* Named quality values (an image run's) as one object. */
static json_t *named_json(const struct gan_named_value *v, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && v && i < n; i++)
        json_object_set_new(o, v[i].name, number(v[i].value));
    return o;
}

gan_status gan_run_summary_write(const char *dir, const struct gan_run_summary *s,
                                 struct gan_error *err)
{
    json_t *root = json_object();
    if (!root)
        return nomem(err);
    json_object_set_new(root, "status", json_string(s->status));
    json_object_set_new(root, "ganctl_version", string_or_null(s->version));
    json_object_set_new(root, "run_dir", string_or_null(s->run_dir));
    json_object_set_new(root, "data", string_or_null(s->data));
    json_object_set_new(root, "iterations", json_integer(s->iterations));
    json_object_set_new(root, "iterations_planned", json_integer(s->iterations_planned));
    json_object_set_new(root, "wall_time_s", number(s->wall_time_s));
    json_object_set_new(root, "iterations_per_s", number(s->iterations_per_s));
    json_object_set_new(root, "backend", string_or_null(s->backend));
    json_t *models = json_object();
    json_object_set_new(models, "generator", string_or_null(s->generator));
    json_object_set_new(models, "critic", string_or_null(s->critic));
    json_object_set_new(root, "models", models);
    json_t *final = json_object();
    for (size_t i = 0; final && i < s->final_count; i++)
        json_object_set_new(final, s->final[i].name, number(s->final[i].value));
    json_object_set_new(root, "final", final);
    if (s->has_quality) {
        json_t *q = json_object();
        json_object_set_new(q, "iteration", json_integer(s->quality_iteration));
        json_object_set_new(q, "samples", json_integer((json_int_t)s->quality_samples));
        if (s->quality_count) {
            json_object_set_new(q, "generated", named_json(s->quality_values, s->quality_count));
            json_object_set_new(q, "real_vs_real_floor",
                                named_json(s->floor_values, s->quality_count));
        } else {
            json_object_set_new(q, "generated", quality_json(&s->quality));
            json_object_set_new(q, "real_vs_real_floor", quality_json(&s->floor));
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
    json_object_set_new(root, "files", files);
    if (s->config)
        json_object_set_new(root, "config", config_json(s->config));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text)
        return nomem(err);
    size_t n = strlen(text);
    char *with_newline = malloc(n + 2);
    gan_status st;
    if (!with_newline) {
        st = nomem(err);
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

/* Appends printf output to buf at *used, never past size. */
static void add(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n < size - *used ? (size_t)n : size - *used - 1;
}

void gan_progress_format(char *buf, size_t size, const struct gan_progress *p)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    add(buf, size, &used, "iter %lld/%lld", (long long)p->iteration, (long long)p->total);
    if (p->it_per_s > 0) {
        char eta[32];
        gan_format_duration(eta, sizeof eta, (double)(p->total - p->iteration) / p->it_per_s);
        add(buf, size, &used, "  %.1f it/s  ETA %s", p->it_per_s, eta);
    }
    if (!isnan(p->critic_loss))
        add(buf, size, &used, "  critic %.4g", p->critic_loss);
    if (!isnan(p->generator_loss))
        add(buf, size, &used, "  gen %.4g", p->generator_loss);
    if (!isnan(p->w_distance))
        add(buf, size, &used, "  W %.4g", p->w_distance);
    if (p->has_quality && p->quality_count) {
        for (size_t i = 0; p->quality_values && i < p->quality_count; i++)
            add(buf, size, &used, "  %s %.4g", p->quality_values[i].name,
                p->quality_values[i].value);
    } else if (p->has_quality) {
        const struct gan_toy_quality *q = &p->quality;
        if (q->has_modes)
            add(buf, size, &used, "  modes %ld/%zu  hq %.1f%%", q->modes_covered, q->modes_total,
                q->high_quality_pct);
        add(buf, size, &used, "  sW1 %.4g", q->sliced_w1);
    }
}
