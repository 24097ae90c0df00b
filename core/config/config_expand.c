/* SPDX-License-Identifier: MIT */
/* config_expand.c — the @include directives of a user's file expanded by ganctl, not by
 * libconfig: each path read against the folder of the file that holds it, each file
 * opened only when it is a regular one, nesting bounded, cycles refused, and a table
 * that gives every line of the expanded text back to its file and line. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file_open.h"
#include "config/config_private.h"

/* libconfig 1.5 expands includes itself, but against the folder of the file it was
 * given (or the current one) for every level, and it opens whatever a path names, a
 * FIFO included, and waits on it. So the text is put together here and libconfig reads
 * the whole of it as one string that holds no directive. */

/* libconfig's own bound on nested includes: the named file and ten levels below it. */
#define MAX_INCLUDE_DEPTH 10

/* Settings are a few kilobytes; a file included twice at each of ten levels would be
 * a thousand copies, so the expanded text is bounded rather than left to fill memory. */
#define MAX_EXPANDED_BYTES ((size_t)64 << 20)

int gan_config_read_regular(const char *path, char **out, const char **kind, struct stat *sb)
{
    *out = NULL;
    *kind = NULL;
    if (gan_is_dev_null(path)) {
        if (stat(path, sb) != 0)
            return -1;
        return (*out = gan_strdup("")) ? 0 : (errno = ENOMEM, -1);
    }
    FILE *f = gan_fopen_regular(path, kind);
    if (!f)
        return -1;
    if (fstat(fileno(f), sb) != 0) {
        int e = errno;
        fclose(f);
        errno = e;
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
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
    int e = errno;
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = e ? e : EIO;
        return -1;
    }
    buf[len] = '\0';
    *out = buf;
    return 0;
}

/* ------------------------------------------------------------------ the expanded text */

static gan_status append(struct gan_config_expanded *x, const char *s, size_t n,
                         struct gan_error *err)
{
    if (n > MAX_EXPANDED_BYTES - x->len)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: with its includes expanded the settings pass %zu MiB: include each file once, not again at every level",
                             x->files[0].name, MAX_EXPANDED_BYTES >> 20);
    if (x->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        while (x->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(x->text, cap);
        if (!grown)
            return gan_config_nomem(err);
        x->text = grown;
        x->cap = cap;
    }
    memcpy(x->text + x->len, s, n);
    x->len += n;
    x->text[x->len] = '\0';
    for (size_t i = 0; i < n; i++)
        x->lines += s[i] == '\n';
    return GAN_OK;
}

/* From the expanded text's current line on, the lines are `file`'s from `file_line`. */
static gan_status add_span(struct gan_config_expanded *x, size_t file, unsigned file_line,
                           struct gan_error *err)
{
    if (x->n_spans == x->cap_spans) {
        size_t cap = x->cap_spans ? x->cap_spans * 2 : 8;
        struct gan_config_span *grown = realloc(x->spans, cap * sizeof *grown);
        if (!grown)
            return gan_config_nomem(err);
        x->spans = grown;
        x->cap_spans = cap;
    }
    x->spans[x->n_spans++] = (struct gan_config_span){ x->lines, file, file_line };
    return GAN_OK;
}

static gan_status add_file(struct gan_config_expanded *x, const char *name, size_t parent,
                           unsigned line, struct gan_error *err)
{
    if (x->n_files == x->cap_files) {
        size_t cap = x->cap_files ? x->cap_files * 2 : 4;
        struct gan_config_file *grown = realloc(x->files, cap * sizeof *grown);
        if (!grown)
            return gan_config_nomem(err);
        x->files = grown;
        x->cap_files = cap;
    }
    char *copy = gan_strdup(name);
    if (!copy)
        return gan_config_nomem(err);
    x->files[x->n_files++] = (struct gan_config_file){ copy, parent, line };
    return GAN_OK;
}

const char *gan_config_expanded_where(const struct gan_config_expanded *x, unsigned line,
                                      unsigned *file_line)
{
    /* The last span that starts at or before the line: an empty included file leaves a
     * span that the including file's next one, starting on the same line, replaces. */
    size_t at = 0;
    for (size_t i = 0; i < x->n_spans && x->spans[i].first <= line; i++)
        at = i;
    const struct gan_config_span *s = &x->spans[at];
    *file_line = s->file_line + (line > s->first ? line - s->first : 0);
    return x->files[s->file].name;
}

void gan_config_expanded_free(struct gan_config_expanded *x)
{
    for (size_t i = 0; i < x->n_files; i++)
        free(x->files[i].name);
    free(x->files);
    free(x->spans);
    free(x->text);
    memset(x, 0, sizeof *x);
}

/* ------------------------------------------------------------------ expanding */

/* A file being expanded, and the ones that include it. */
struct frame {
    const struct frame *up;
    size_t file;                  /* its index in the expanded text's files */
    dev_t dev;
    ino_t ino;
    int depth;                    /* 0 for the named file */
};

struct expanding {
    struct gan_config_expanded *x;
    const struct frame *frame;
    const char *text;             /* the frame's file */
    size_t pos;                   /* how much of it is in the expanded text */
    struct gan_error *err;
    gan_status st;
};

static gan_status expand_text(struct gan_config_expanded *x, const char *text,
                              const struct frame *frame, struct gan_error *err);

/* "a.conf includes b.conf, which includes c.conf": the files from `from` down to the
 * frame `to`, then `last`. */
static void chain(char *out, size_t size, const struct gan_config_expanded *x,
                  const struct frame *to, size_t from, const char *last)
{
    const struct frame *list[MAX_INCLUDE_DEPTH + 1];
    int n = 0;
    for (const struct frame *f = to; f && n <= MAX_INCLUDE_DEPTH; f = f->up) {
        list[n++] = f;
        if (f->file == from)
            break;
    }
    size_t used = 0;
    out[0] = '\0';
    for (int i = n - 1; i >= 0 && used < size; i--)
        used += (size_t)snprintf(out + used, size - used, "%s%s", x->files[list[i]->file].name,
                                 i == n - 1 ? " includes " : ", which includes ");
    /* A chain too long for the message ends cut short, as the message itself would. */
    if (used < size && snprintf(out + used, size - used, "%s", last) < 0)
        out[used] = '\0';
}

/* The path an include names, read against the folder of the file that holds it. */
static void resolve(char *out, size_t size, const char *including, const char *name)
{
    const char *slash = strrchr(including, '/');
    if (name[0] == '/' || !slash)
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%.*s/%s", (int)(slash - including), including, name);
}

static int refuse(struct expanding *e, gan_status st)
{
    e->st = st;
    return 1;
}

static int on_directive(void *ctx, const struct gan_config_directive *d)
{
    struct expanding *e = ctx;
    struct gan_config_expanded *x = e->x;
    const char *file = x->files[e->frame->file].name;
    gan_status st = append(x, e->text + e->pos, d->start - e->pos, e->err);
    if (st != GAN_OK)
        return refuse(e, st);
    if (!d->closed)
        return refuse(e, gan_error_set(e->err, GAN_ERR_CONFIG,
                                       "%s:%u: the @include's path has no closing quote: end it with \"",
                                       file, d->line));
    char path[4200];
    resolve(path, sizeof path, file, d->path);
    if (d->truncated || strlen(path) + 1 >= sizeof path)
        return refuse(e, gan_error_set(e->err, GAN_ERR_CONFIG,
                                       "%s:%u: the @include's path is longer than 4095 bytes: name a shorter path",
                                       file, d->line));
    if (e->frame->depth >= MAX_INCLUDE_DEPTH)
        return refuse(e, gan_error_set(e->err, GAN_ERR_CONFIG,
                                       "%s:%u: the @include of %s nests more than %d levels below %s: include the files from fewer levels",
                                       file, d->line, path, MAX_INCLUDE_DEPTH,
                                       x->files[0].name));
    char *text;
    const char *kind;
    struct stat sb;
    if (gan_config_read_regular(path, &text, &kind, &sb) != 0) {
        if (kind)
            return refuse(e, gan_error_set(e->err, GAN_ERR_CONFIG,
                                           "%s:%u: the @include names %s, which is %s, not a regular file: include only regular files (the path is read from the folder of %s)",
                                           file, d->line, path, kind, file));
        return refuse(e, gan_error_set(e->err, GAN_ERR_CONFIG,
                                       "%s:%u: cannot read %s, which the @include names: %s: fix the path, which is read from the folder of %s",
                                       file, d->line, path, strerror(errno), file));
    }
    for (const struct frame *f = e->frame; f; f = f->up) {
        if (f->dev != sb.st_dev || f->ino != sb.st_ino)
            continue;
        char files[700];
        chain(files, sizeof files, x, e->frame, f->file, path);
        free(text);
        return refuse(e, gan_error_set(e->err, GAN_ERR_CONFIG,
                                       "%s:%u: the includes make a cycle (%s): a file may not include itself, directly or through others; remove one of these includes",
                                       file, d->line, files));
    }
    st = add_file(x, path, e->frame->file, d->line, e->err);
    if (st == GAN_OK) {
        struct frame child = { e->frame, x->n_files - 1, sb.st_dev, sb.st_ino,
                               e->frame->depth + 1 };
        st = expand_text(x, text, &child, e->err);
    }
    free(text);
    /* The rest of the directive's line begins a line of its own: the included text's
     * last token ends with its file, as it does when libconfig switches files. */
    if (st == GAN_OK && x->len && x->text[x->len - 1] != '\n')
        st = append(x, "\n", 1, e->err);
    if (st == GAN_OK)
        st = add_span(x, e->frame->file, d->end_line, e->err);
    if (st != GAN_OK)
        return refuse(e, st);
    e->pos = d->end;
    return 0;
}

static gan_status expand_text(struct gan_config_expanded *x, const char *text,
                              const struct frame *frame, struct gan_error *err)
{
    gan_status st = add_span(x, frame->file, 1, err);
    if (st != GAN_OK)
        return st;
    struct expanding e = { x, frame, text, 0, err, GAN_OK };
    if (gan_config_scan_includes(text, on_directive, &e))
        return e.st;
    return append(x, text + e.pos, strlen(text + e.pos), err);
}

/* A directive that only the files put together make (a string or a comment one of them
 * leaves open, closed by the next): libconfig would act on it, so it is refused. */
static int joined_directive(void *ctx, const struct gan_config_directive *d)
{
    *(unsigned *)ctx = d->line;
    return 1;
}

gan_status gan_config_expand(const char *path, const char *text, const struct stat *sb,
                             struct gan_config_expanded *out, struct gan_error *err)
{
    memset(out, 0, sizeof *out);
    out->lines = 1;
    gan_status st = add_file(out, path, SIZE_MAX, 0, err);
    if (st != GAN_OK)
        return st;
    struct frame top = { NULL, 0, sb->st_dev, sb->st_ino, 0 };
    st = expand_text(out, text, &top, err);
    unsigned line = 0;
    if (st == GAN_OK && out->n_files > 1 &&
        gan_config_scan_includes(out->text, joined_directive, &line)) {
        unsigned file_line;
        const char *file = gan_config_expanded_where(out, line, &file_line);
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s:%u: this line reads as an @include only with the included files put together (one of them leaves a string or a comment open): close the string or comment in the file where it begins",
                           file, file_line);
    }
    if (st != GAN_OK)
        gan_config_expanded_free(out);
    return st;
}
