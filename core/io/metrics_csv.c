/* SPDX-License-Identifier: MIT */
/* metrics_csv.c — metrics.csv and its siblings: a header, then one row per logged
 * iteration, cut back to a checkpoint when a run resumes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strings.h"
#include "io/metrics_csv.h"
#include "io/text_file.h"

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

enum not_plain_why { OPEN_FAILED, IS_LINK, NOT_REGULAR };

/* The refusal of a table that is not a plain file of the run folder's own (or errno's
 * reason when the open failed otherwise). */
static gan_status not_plain(const char *path, enum not_plain_why why, struct gan_error *err)
{
    if (why == IS_LINK)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s is a symbolic link: ganctl follows no link out of a run folder; put the file itself there, or move the link away to resume",
                             path);
    if (why == OPEN_FAILED)
        return gan_error_set(err, GAN_ERR_IO, "cannot open %s to append: %s", path, strerror(errno));
    return gan_error_set(err, GAN_ERR_CONFIG,
                         "%s is not a regular file: a run folder's tables are plain files; move it away to resume",
                         path);
}

/* GAN_OK when `fd` is a regular file. */
static gan_status plain_file(int fd, const char *path, struct gan_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return gan_error_set(err, GAN_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    return S_ISREG(st.st_mode) ? GAN_OK : not_plain(path, NOT_REGULAR, err);
}

/* The rows of an existing file up to and including iteration `last`, header first. */
static gan_status cut_rows(const char *path, const char *header, int64_t last, char **kept,
                           size_t *kept_len, struct gan_error *err)
{
    /* Read before it is replaced: a link or a FIFO there is refused, neither followed
     * nor waited on. */
    struct stat kind;
    if (lstat(path, &kind) == 0 && !S_ISREG(kind.st_mode))
        return not_plain(path, S_ISLNK(kind.st_mode) ? IS_LINK : NOT_REGULAR, err);
    char *text;
    gan_status st = gan_file_read_text(path, &text, err);
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

gan_status gan_metrics_csv_check(const char *path, const char *const *columns, size_t count,
                                 int64_t resume_after, struct gan_error *err)
{
    char *header = header_line(columns, count);
    if (!header)
        return gan_error_nomem(err, "reading the run folder");
    char *kept = NULL;
    size_t len = 0;
    gan_status st = cut_rows(path, header, resume_after, &kept, &len, err);
    free(kept);
    free(header);
    return st;
}

gan_status gan_metrics_csv_open(const char *path, const char *const *columns, size_t count,
                                int64_t resume_after, gan_metrics_csv **out,
                                struct gan_error *err)
{
    *out = NULL;
    char *header = header_line(columns, count);
    if (!header)
        return gan_error_nomem(err, "writing the run folder");
    gan_status st = GAN_OK;
    if (resume_after >= 0) {
        char *kept = NULL;
        size_t len = 0;
        st = cut_rows(path, header, resume_after, &kept, &len, err);
        if (st == GAN_OK)
            st = gan_file_write_atomic(path, kept, len, err);
        free(kept);
    } else {
        st = gan_file_write_atomic(path, header, strlen(header), err);
    }
    free(header);
    if (st != GAN_OK)
        return st;
    gan_metrics_csv *m = calloc(1, sizeof *m);
    if (!m || !(m->path = gan_strdup(path))) {
        free(m);
        return gan_error_nomem(err, "writing the run folder");
    }
    m->columns = count;
    /* Appended to in place: a link put where the file just written was is refused, not
     * followed, so that no row lands outside the run folder. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    st = fd < 0 ? not_plain(path, errno == ELOOP ? IS_LINK : OPEN_FAILED, err)
                : plain_file(fd, path, err);
    if (st == GAN_OK && !(m->f = fdopen(fd, "a")))
        st = gan_error_set(err, GAN_ERR_IO, "cannot open %s to append: %s", path, strerror(errno));
    if (st != GAN_OK) {
        if (fd >= 0)
            close(fd);
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
