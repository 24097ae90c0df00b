/* SPDX-License-Identifier: MIT */
/* png_write.h — writes an 8-bit grey or RGB picture as a PNG, atomically: a hidden
 * temporary file beside the target (".NAME.XXXXXX"), fsync, a rename over it, and an
 * fsync of its folder. */
#ifndef GANCTL_CORE_PNG_WRITE_H
#define GANCTL_CORE_PNG_WRITE_H

#include <ganctl/status.h>

#include "base/error.h"

struct gan_png_picture {
    unsigned width, height;       /* in pixels, both at least 1 */
    int rgb;                      /* 1: three bytes a pixel (R, G, B); 0: one grey byte */
    const unsigned char *pixels;  /* rows top first, each width × (rgb ? 3 : 1) bytes */
    const char *title;            /* stored as the PNG's Title text; NULL or "" for none */
    int drawn;                    /* 1: a drawing (flat areas, lines, text), stored with
                                     no row filter; 0: pictures of samples, each row's
                                     filter chosen by libpng */
};

/* Writes `pic` to `path`. A reader sees either the old file or the whole new one, never
 * a part, and a failure removes its temporary file. `who` begins each error message
 * ("image grid", "toy plot"), so that it names the output that failed. */
gan_status gan_png_write(const char *path, const struct gan_png_picture *pic, const char *who,
                         struct gan_error *err);

#endif
