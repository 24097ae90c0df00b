/* SPDX-License-Identifier: MIT */
/* png_write.c — writes an 8-bit grey or RGB picture as a PNG with libpng, atomically: a
 * hidden temporary file beside the target, fsync, a rename over it, and an fsync of its
 * folder. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/image/png_write.h"

struct png_failure {
    char message[200];
};

/* libpng's default handlers print; these keep the message for the caller's error. */
static void on_png_error(png_structp png, png_const_charp msg)
{
    struct png_failure *f = png_get_error_ptr(png);
    snprintf(f->message, sizeof f->message, "%s", msg);
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Encodes the picture into `out`. Returns 0, or -1 with the reason in `fail`. */
static int encode(FILE *out, const struct gan_png_picture *pic, struct png_failure *fail)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, fail, on_png_error,
                                              on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(fail->message, sizeof fail->message, "libpng could not start an encoder");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, out);
    png_set_IHDR(png, info, pic->width, pic->height, 8,
                 pic->rgb ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text[2];
    int ntext = 0;
    memset(text, 0, sizeof text);
    text[ntext].compression = PNG_TEXT_COMPRESSION_NONE;
    text[ntext].key = (png_charp) "Software";
    text[ntext].text = (png_charp) PACKAGE_STRING;
    ntext++;
    if (pic->title && *pic->title) {
        text[ntext].compression = PNG_TEXT_COMPRESSION_NONE;
        text[ntext].key = (png_charp) "Title";
        text[ntext].text = (png_charp)pic->title;
        ntext++;
    }
    png_set_text(png, info, text, ntext);
    /* A drawing is mostly flat areas, lines and text over gentle shading, whose repeats
     * deflate finds as they are; libpng's per-row filter choice (five filters tried on
     * every row) costs time and here gained nothing. Unfiltered, a toy run's final plot
     * (543 × 591) came out a quarter smaller and its curves (1400 × 1080) as large,
     * each written in 2.6 times less time. */
    if (pic->drawn)
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    size_t stride = (size_t)pic->width * (pic->rgb ? 3 : 1);
    for (unsigned y = 0; y < pic->height; y++)
        png_write_row(png, pic->pixels + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

static gan_status write_fail(struct gan_error *err, const char *who, const char *path,
                             const char *what, const char *why, const char *fix)
{
    return gan_error_set(err, GAN_ERR_IO, "%s: cannot write %s: %s (%s); %s", who, path, what,
                         why, fix);
}

/* fsync on the folder that holds `path`, so that the rename is durable too. A file
 * system that cannot sync a folder (EINVAL) is taken at its word. */
static int sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

gan_status gan_png_write(const char *path, const struct gan_png_picture *pic, const char *who,
                         struct gan_error *err)
{
    if (!who)
        who = "PNG";
    if (!path || !*path)
        return gan_error_set(err, GAN_ERR_INVALID, "%s: no file name; pass the path of the "
                             "PNG to write", who);
    if (!pic || !pic->pixels || pic->width == 0 || pic->height == 0)
        return gan_error_set(err, GAN_ERR_INVALID, "%s %s: no picture to write (it needs "
                             "pixels and a width and height of at least 1)", who, path);
    /* "dir/.name.XXXXXX": hidden, as the other temporary files of a run folder, so that
     * one a killed process leaves is not taken for a picture. */
    size_t len = strlen(path);
    char *tmp = malloc(len + 9);
    if (!tmp)
        return write_fail(err, who, path, "no memory for the temporary name", strerror(ENOMEM),
                          "free some memory");
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(tmp, len + 9, "%.*s.%s.XXXXXX", (int)dir_len, path, path + dir_len);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        gan_status st = write_fail(err, who, path, "cannot create a temporary file beside it",
                                   strerror(errno), "create the folder, make it writable, or "
                                   "choose another path");
        free(tmp);
        return st;
    }
    /* mkstemp makes the file private; a picture is for everyone to read. */
    (void)fchmod(fd, 0644);
    FILE *out = fdopen(fd, "wb");
    if (!out) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return write_fail(err, who, path, "cannot open the temporary file", strerror(e),
                          "check the folder's permissions");
    }
    struct png_failure fail = { "" };
    const char *what = NULL, *why = NULL;
    if (encode(out, pic, &fail) != 0) {
        what = "the PNG encoder failed";
        why = fail.message;
    } else if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
        what = "writing the image data failed";
        why = strerror(errno);
    }
    if (fclose(out) != 0 && !what) {
        what = "closing the temporary file failed";
        why = strerror(errno);
    }
    if (!what && rename(tmp, path) != 0) {
        what = "renaming the temporary file over it failed";
        why = strerror(errno);
    }
    if (what) {
        /* Copy `why` first: it may be strerror's buffer, and unlink can change errno. */
        char reason[200];
        snprintf(reason, sizeof reason, "%s", why);
        unlink(tmp);
        free(tmp);
        return write_fail(err, who, path, what, reason, "check the free space and the "
                          "folder's permissions");
    }
    free(tmp);
    if (sync_parent(path) != 0)
        return write_fail(err, who, path, "the file was written but its folder could not be "
                          "synced", strerror(errno), "check the file system");
    return GAN_OK;
}
