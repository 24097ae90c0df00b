/* SPDX-License-Identifier: MIT */
/* jpeg_read.c — reads a whole JPEG file through libjpeg's decompressor, with an error
 * manager that turns its fatal errors (and a truncated file) into messages. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "base/file_open.h"
#include "io/image/jpeg_read.h"

int gan_jpeg_signature(const unsigned char *head, size_t n)
{
    return n >= 3 && head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff;
}

/* libjpeg's error manager, extended with the place to jump to and the message. */
struct reader {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int truncated;
};

static void on_error(j_common_ptr cinfo)
{
    struct reader *r = (struct reader *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, r->message);
    longjmp(r->jump, 1);
}

/* Warnings do not stop libjpeg; the one that says the data ended early is remembered,
 * so that a cut-off file is refused rather than trained on with a grey bottom. Others
 * (extraneous bytes before a marker, say) leave the pixels intact and are dropped:
 * nothing below the program prints. */
static void on_message(j_common_ptr cinfo, int level)
{
    struct reader *r = (struct reader *)cinfo->err;
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF)
        r->truncated = 1;
}

/* The part after setjmp; what it changes lives behind `out` and `cinfo`. */
static gan_status decode(struct jpeg_decompress_struct *cinfo, struct reader *r,
                         struct gan_decoded_image *out, const char *path,
                         struct gan_error *err)
{
    jpeg_read_header(cinfo, TRUE);
    if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: a CMYK JPEG, which ganctl does not "
                             "convert; save it as RGB", path);
    cinfo->out_color_space = cinfo->jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    if ((size_t)cinfo->image_width * cinfo->image_height > GAN_DECODED_MAX_PIXELS)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: a JPEG of %u × %u pixels, over the "
                             "limit of %zu pixels that ganctl decodes", path, (unsigned)cinfo->image_width,
                             (unsigned)cinfo->image_height, GAN_DECODED_MAX_PIXELS);
    jpeg_start_decompress(cinfo);
    unsigned channels = (unsigned)cinfo->output_components;
    if (channels != 1 && channels != 3)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: a JPEG of %u components, which ganctl "
                             "does not read", path, channels);
    size_t row = (size_t)cinfo->output_width * channels;
    out->samples = malloc(row * cinfo->output_height);
    if (!out->samples)
        return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory for a JPEG of %u × %u "
                             "pixels", path, (unsigned)cinfo->output_width,
                             (unsigned)cinfo->output_height);
    while (cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW line = (JSAMPROW)out->samples + (size_t)cinfo->output_scanline * row;
        jpeg_read_scanlines(cinfo, &line, 1);
    }
    jpeg_finish_decompress(cinfo);
    if (r->truncated)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: a truncated JPEG (the data ends "
                             "before the image does)", path);
    out->width = cinfo->output_width;
    out->height = cinfo->output_height;
    out->channels = channels;
    out->bits = 8;
    return GAN_OK;
}

gan_status gan_jpeg_read(const char *path, struct gan_decoded_image *out, struct gan_error *err)
{
    memset(out, 0, sizeof *out);
    const char *kind;
    FILE *f = gan_fopen_regular(path, &kind);
    if (!f && kind)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s is %s, not an image file; only regular "
                             "files are read", path, kind);
    if (!f)
        return gan_error_set(err, GAN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char head[3];
    size_t got = fread(head, 1, sizeof head, f);
    if (!gan_jpeg_signature(head, got)) {
        fclose(f);
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: not a JPEG file (no start-of-image "
                             "marker)", path);
    }
    rewind(f);
    struct jpeg_decompress_struct cinfo;
    struct reader r;
    memset(&r, 0, sizeof r);
    cinfo.err = jpeg_std_error(&r.mgr);
    r.mgr.error_exit = on_error;
    r.mgr.emit_message = on_message;
    gan_status st;
    if (setjmp(r.jump)) {
        st = gan_error_set(err, GAN_ERR_FORMAT, "%s: damaged JPEG: %s", path, r.message);
    } else {
        jpeg_create_decompress(&cinfo);
        jpeg_stdio_src(&cinfo, f);
        st = decode(&cinfo, &r, out, path, err);
    }
    jpeg_destroy_decompress(&cinfo);
    fclose(f);
    if (st != GAN_OK)
        gan_decoded_image_clear(out);
    return st;
}
