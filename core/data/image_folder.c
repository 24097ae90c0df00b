/* SPDX-License-Identifier: MIT */
/* image_folder.c — finds the image files under a folder, decodes and converts each once
 * into one block of bytes, skips and counts the bad ones, and splits off the held-out set. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/file_open.h"
#include "base/strings.h"
#include "data/image_folder.h"
#include "data/image_resize.h"
#include "io/image/jpeg_read.h"
#include "io/image/png_read.h"

/* What messages and the sets call themselves. */
static const char set_label[] = "image folder";

/* Folders deeper than this below data.path are not searched: a guard, not a layout rule. */
#define MAX_DEPTH 32

/* The paths found, relative to the folder. */
struct file_list {
    char **paths;
    size_t count, capacity;
};

static void file_list_free(struct file_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

static int add_path(struct file_list *l, const char *path)
{
    if (l->count == l->capacity) {
        size_t cap = l->capacity ? 2 * l->capacity : 256;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (!p)
            return -1;
        l->paths = p;
        l->capacity = cap;
    }
    if (!(l->paths[l->count] = gan_strdup(path)))
        return -1;
    l->count++;
    return 0;
}

static int has_image_suffix(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0
                   || strcasecmp(dot, ".jpeg") == 0);
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", a, *a ? "/" : "", b);
    return p;
}

/* Adds the image files under root/rel (rel "" = root itself) to `l`. */
static gan_status walk(const char *root, const char *rel, int depth, struct file_list *l,
                       struct gan_error *err)
{
    char *here = *rel ? join(root, rel) : gan_strdup(root);
    if (!here)
        return gan_error_set(err, GAN_ERR_NOMEM, "%s %s: out of memory", set_label, root);
    DIR *d = opendir(here);
    if (!d) {
        gan_status st = gan_error_set(err, errno == ENOENT || errno == ENOTDIR
                                               ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                                      "%s: cannot read the folder %s: %s; set data.path to "
                                      "a folder of PNG or JPEG images", set_label, here,
                                      strerror(errno));
        free(here);
        return st;
    }
    gan_status st = GAN_OK;
    struct dirent *e;
    while (st == GAN_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *child_rel = join(rel, e->d_name), *child = child_rel ? join(root, child_rel) : NULL;
        struct stat link_sb, sb;
        if (!child) {
            st = gan_error_set(err, GAN_ERR_NOMEM, "%s %s: out of memory", set_label, root);
        } else if (lstat(child, &link_sb) == 0 && stat(child, &sb) == 0) {
            if (S_ISDIR(sb.st_mode)) {
                if (!S_ISLNK(link_sb.st_mode) && depth < MAX_DEPTH)
                    st = walk(root, child_rel, depth + 1, l, err);
            } else if (S_ISREG(sb.st_mode) && has_image_suffix(e->d_name)) {
                if (add_path(l, child_rel) != 0)
                    st = gan_error_set(err, GAN_ERR_NOMEM, "%s %s: out of memory for the "
                                       "list of files", set_label, root);
            }
        }
        free(child_rel);
        free(child);
    }
    closedir(d);
    free(here);
    return st;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Decodes one file by its first bytes. */
static gan_status decode_file(const char *path, struct gan_decoded_image *img,
                              struct gan_error *err)
{
    const char *kind;
    FILE *f = gan_fopen_regular(path, &kind);
    if (!f && kind)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s is %s, not an image file; only regular "
                             "files are read", path, kind);
    if (!f)
        return gan_error_set(err, GAN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char head[GAN_PNG_SIGNATURE_SIZE];
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (gan_png_signature(head, got))
        return gan_png_read(path, img, err);
    if (gan_jpeg_signature(head, got))
        return gan_jpeg_read(path, img, err);
    return gan_error_set(err, GAN_ERR_FORMAT, "%s: neither a PNG nor a JPEG file (by its "
                         "first bytes)", path);
}

/* The images at keep[i] != 0 of `all` (n of them, `d` bytes each), in order, moved to a
 * new block; NULL when out of memory. */
static unsigned char *gather(const unsigned char *all, size_t n, size_t d,
                             const unsigned char *keep, size_t kept)
{
    unsigned char *out = malloc(kept ? kept * d : 1);
    if (!out)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            memcpy(out + k++ * d, all + i * d, d);
    return out;
}

/* Splits the n decoded images of `all` (taken) into the two sets. */
static gan_status split(const struct gan_image_folder_spec *spec, unsigned char *all, size_t n,
                        gan_image_set **train, gan_image_set **test, struct gan_error *err)
{
    const size_t d = (size_t)spec->channels * spec->size * spec->size;
    double want = nearbyint(spec->holdout * (double)n);
    size_t held = want < GAN_IMAGE_FOLDER_MIN_HOLDOUT ? GAN_IMAGE_FOLDER_MIN_HOLDOUT
                                                      : (size_t)want;
    if (held >= n) {
        free(all);
        return gan_error_set(err, GAN_ERR_FORMAT, "%s %s: %zu readable image%s, too few to "
                             "hold out %zu for the quality metrics (data.holdout = %g) and "
                             "train on the rest; add images to the folder (%d or more "
                             "are needed)", set_label, spec->dir, n, n == 1 ? "" : "s", held,
                             spec->holdout, GAN_IMAGE_FOLDER_MIN_HOLDOUT + 1);
    }
    uint32_t *order = malloc(n * sizeof *order);
    unsigned char *is_held = calloc(n, 1), *is_train = malloc(n);
    unsigned char *held_px = NULL, *train_px = NULL;
    gan_status st = GAN_OK;
    if (order && is_held && is_train) {
        gan_image_shuffle(GAN_IMAGE_FOLDER_SPLIT_SEED, 0, order, n);
        for (size_t i = 0; i < held; i++)
            is_held[order[i]] = 1;
        for (size_t i = 0; i < n; i++)
            is_train[i] = !is_held[i];
        held_px = gather(all, n, d, is_held, held);
        train_px = held_px ? gather(all, n, d, is_train, n - held) : NULL;
    }
    if (!train_px) {
        free(held_px);
        st = gan_error_set(err, GAN_ERR_NOMEM, "%s %s: out of memory splitting %zu images of "
                           "%zu bytes", set_label, spec->dir, n, d);
    }
    free(order);
    free(is_held);
    free(is_train);
    free(all);
    if (st != GAN_OK)
        return st;
    st = gan_image_set_wrap(spec->dir, GAN_IMAGE_TEST, set_label, held, spec->channels,
                            spec->size, held_px, test, err);
    if (st == GAN_OK)
        st = gan_image_set_wrap(spec->dir, GAN_IMAGE_TRAIN, set_label, n - held,
                                spec->channels, spec->size, train_px, train, err);
    else
        free(train_px);
    if (st != GAN_OK) {
        gan_image_set_free(*test);
        *test = NULL;
    }
    return st;
}

gan_status gan_image_folder_load(const struct gan_image_folder_spec *spec,
                                 const struct gan_log *log, gan_image_set **train,
                                 gan_image_set **test, struct gan_image_folder_report *report,
                                 struct gan_error *err)
{
    *train = *test = NULL;
    memset(report, 0, sizeof *report);
    const char *dir = spec->dir ? spec->dir : "";
    if ((spec->channels != 1 && spec->channels != 3) || spec->size == 0)
        return gan_error_set(err, GAN_ERR_INVALID, "%s: images of %u channels and side %u; "
                             "set data.channels to 1 or 3 and data.size to 1 or more",
                             set_label, spec->channels, spec->size);
    struct stat sb;
    if (!*dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return gan_error_set(err, GAN_ERR_NOT_FOUND, "%s: data.path = \"%s\" is not a folder; "
                             "set data.path to a folder of PNG or JPEG images", set_label, dir);
    struct file_list files = { NULL, 0, 0 };
    gan_status st = walk(dir, "", 0, &files, err);
    if (st != GAN_OK) {
        file_list_free(&files);
        return st;
    }
    if (files.count == 0) {
        file_list_free(&files);
        return gan_error_set(err, GAN_ERR_NOT_FOUND, "%s %s holds no image files (*.png, "
                             "*.jpg, *.jpeg, searched in its subfolders too); put PNG or JPEG "
                             "images there, or set data.path to the folder that holds them",
                             set_label, dir);
    }
    qsort(files.paths, files.count, sizeof *files.paths, compare_paths);
    report->files = files.count;
    const size_t d = (size_t)spec->channels * spec->size * spec->size;
    unsigned char *all = files.count <= SIZE_MAX / d ? malloc(files.count * d) : NULL;
    if (!all) {
        file_list_free(&files);
        return gan_error_set(err, GAN_ERR_NOMEM, "%s %s: out of memory for %zu images of %u "
                             "× %u × %u bytes; use fewer images or a smaller data.size",
                             set_label, dir, report->files, spec->channels, spec->size,
                             spec->size);
    }
    size_t decoded = 0;
    for (size_t i = 0; st == GAN_OK && i < files.count; i++) {
        char *path = join(dir, files.paths[i]);
        struct gan_decoded_image img;
        struct gan_error why;
        gan_error_clear(&why);
        memset(&img, 0, sizeof img);
        gan_status fst = path ? decode_file(path, &img, &why)
                              : gan_error_set(&why, GAN_ERR_NOMEM, "out of memory");
        if (fst == GAN_OK)
            fst = gan_image_convert(&img, spec->channels, spec->size, all + decoded * d, &why);
        gan_decoded_image_clear(&img);
        free(path);
        if (fst == GAN_OK) {
            decoded++;
        } else if (fst == GAN_ERR_NOMEM) {
            st = gan_error_set(err, fst, "%s %s: %s", set_label, dir, why.message);
        } else {
            if (report->skipped++ == 0)
                snprintf(report->first_skipped, sizeof report->first_skipped, "%s",
                         why.message);
        }
        if ((i + 1) % GAN_IMAGE_FOLDER_PROGRESS_EVERY == 0 && i + 1 < files.count)
            gan_log_write(log, GAN_LOG_INFO, "%s %s: read %zu of %zu files", set_label, dir,
                          i + 1, files.count);
    }
    file_list_free(&files);
    if (st == GAN_OK && decoded == 0)
        st = gan_error_set(err, GAN_ERR_FORMAT, "%s %s: none of its %zu image files could be "
                           "read (the first: %s); put readable PNG or JPEG images there",
                           set_label, dir, report->files, report->first_skipped);
    if (st != GAN_OK) {
        free(all);
        return st;
    }
    return split(spec, all, decoded, train, test, err);
}
