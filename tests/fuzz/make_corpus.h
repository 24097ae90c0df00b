/* SPDX-License-Identifier: MIT */
/* make_corpus.h — what make_corpus.c shares with the image seeds' writer,
 * make_corpus_images.c. */
#ifndef GANCTL_TEST_FUZZ_MAKE_CORPUS_H
#define GANCTL_TEST_FUZZ_MAKE_CORPUS_H

#include <stddef.h>

/* OUTDIR/target/name, the folder made when missing (a static buffer). */
const char *out_path(const char *target, const char *name);
/* Writes n bytes to out_path(target, name); aborts on failure. */
void write_bytes(const char *target, const char *name, const void *bytes, size_t n);
/* The whole file `path` (malloc'd), its size in *n; aborts on failure. */
unsigned char *read_bytes(const char *path, size_t *n);

/* The seeds of the image and folder harnesses. */
void image_seeds(void);

#endif
