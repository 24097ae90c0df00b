/* SPDX-License-Identifier: MIT */
/* safetensors.h — reading and writing safetensors files (checkpoints, gradient dumps).
 * Core-internal: the files must load in Python's `safetensors` package and PyTorch. */
#ifndef GANCTL_CORE_SAFETENSORS_H
#define GANCTL_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>

/* The format, as the reference implementation (huggingface/safetensors) writes it:
 *
 *   8 bytes   N, the header length, unsigned little-endian
 *   N bytes   a JSON object: {"__metadata__": {"key": "value", ...},
 *             "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
 *             followed by spaces so that 8 + N is a multiple of 8
 *   the rest  raw little-endian tensor data; offsets count from the end of the header
 *
 * Errors: every fallible call takes `err`/`err_size`, a buffer that receives one line
 * naming the file, the tensor and what is wrong. `err` may be NULL; a message that does
 * not fit is cut short, always NUL-terminated. */

/* Element types. The order is the reference implementation's own (ascending alignment):
 * its writer lays tensors out by descending dtype in this order, then by name, and this
 * writer does the same so that both produce identical bytes. */
enum gan_st_dtype {
    GAN_ST_BOOL = 0,
    GAN_ST_U8,
    GAN_ST_I8,
    GAN_ST_F8_E5M2,
    GAN_ST_F8_E4M3,
    GAN_ST_I16,
    GAN_ST_U16,
    GAN_ST_F16,
    GAN_ST_BF16,
    GAN_ST_I32,
    GAN_ST_U32,
    GAN_ST_F32,
    GAN_ST_F64,
    GAN_ST_I64,
    GAN_ST_U64,
    GAN_ST_DTYPE_COUNT
};

/* Most dimensions a tensor may have here (the format itself sets no limit). */
#define GAN_ST_MAX_DIMS 8

/* Largest header this reader accepts, as in the reference implementation. */
#define GAN_ST_MAX_HEADER ((uint64_t)100000000)

/* Bytes per element, or 0 for a value outside the enum. */
size_t gan_st_dtype_size(enum gan_st_dtype dtype);

/* The spelling in the file ("F32", "BF16", ...), or NULL for a value outside the enum. */
const char *gan_st_dtype_name(enum gan_st_dtype dtype);

/* The dtype spelled `name` (exact, case-sensitive). GAN_ERR_NOT_FOUND when unknown. */
gan_status gan_st_dtype_parse(const char *name, enum gan_st_dtype *dtype);

/* The same element type as a ganctl tensor dtype. */
enum gan_st_dtype gan_st_dtype_from_gan(enum gan_dtype dtype);

/* ----------------------------------------------------------------- writer */

typedef struct gan_st_writer gan_st_writer;

/* An empty writer. Returns NULL only when out of memory. */
gan_st_writer *gan_st_writer_new(void);
void gan_st_writer_free(gan_st_writer *w);

/* Adds a tensor. `name` is copied; `shape` (ndim values, 0 <= ndim <= GAN_ST_MAX_DIMS,
 * 0 for a scalar) is copied; `data` (nbytes bytes, little-endian, row-major) is borrowed
 * and must stay valid until gan_st_writer_write returns. nbytes must equal the element
 * count times the dtype's size. Rejected: an empty name, "__metadata__", a name already
 * added, a name that is not valid UTF-8. */
gan_status gan_st_writer_add(gan_st_writer *w, const char *name, enum gan_st_dtype dtype,
                             int ndim, const uint64_t *shape, const void *data, size_t nbytes,
                             char *err, size_t err_size);

/* Sets a metadata entry (both strings copied, valid UTF-8); setting a key again replaces
 * its value. Metadata keys are written sorted bytewise. */
gan_status gan_st_writer_set_metadata(gan_st_writer *w, const char *key, const char *value,
                                      char *err, size_t err_size);

/* Writes the file atomically: a temporary file in the same folder, fsync, rename over
 * `path`, fsync of the folder. On failure no temporary file is left and an existing file
 * at `path` is untouched (unless only the final folder sync failed, which the message
 * says). The writer can be written again or freed afterwards. */
gan_status gan_st_writer_write(gan_st_writer *w, const char *path, char *err, size_t err_size);

/* ----------------------------------------------------------------- reader */

typedef struct gan_st_file gan_st_file;

/* One tensor of an opened file. Valid until gan_st_close. `data` points at nbytes bytes,
 * little-endian; files from gan_st_open have their data section 8-byte aligned, so a
 * tensor whose offset is a multiple of its element size (any file written by this writer
 * or the reference one) may be read in place. */
struct gan_st_tensor {
    const char *name;
    enum gan_st_dtype dtype;
    int ndim;
    uint64_t shape[GAN_ST_MAX_DIMS];
    uint64_t count;              /* elements: the product of the shape (1 for a scalar) */
    uint64_t begin;              /* data_offsets as written in the header */
    const void *data;
    size_t nbytes;
};

/* Reads and validates the whole file at `path`; nothing in it is trusted before that:
 * the header length (at most GAN_ST_MAX_HEADER, inside the file), the JSON, each entry's
 * dtype, shape and offsets (sizes computed without overflow), and the layout (the
 * tensors tile the data section exactly, as the reference reader requires). Stricter
 * than the reference reader: a repeated key, an unknown field in an entry, or more than
 * GAN_ST_MAX_DIMS dimensions is an error, and dtypes outside the enum (FP4, FP6, E8M0,
 * complex) are GAN_ERR_UNSUPPORTED. The whole file is read into memory (not mapped), so
 * another process truncating it cannot crash this one. */
gan_status gan_st_open(const char *path, gan_st_file **out, char *err, size_t err_size);

/* The same, on `size` bytes in memory, which are borrowed for the life of the result
 * (tensor data points into them). `label` names the source in messages. */
gan_status gan_st_parse(const void *bytes, size_t size, const char *label, gan_st_file **out,
                        char *err, size_t err_size);

void gan_st_close(gan_st_file *f);

/* Tensors in the order of their data in the file. */
size_t gan_st_count(const gan_st_file *f);
const struct gan_st_tensor *gan_st_tensor_at(const gan_st_file *f, size_t index);

/* The tensor called `name`, or NULL. */
const struct gan_st_tensor *gan_st_find(const gan_st_file *f, const char *name);

/* The tensor called `name`, checked against the dtype and shape the caller expects:
 * GAN_ERR_NOT_FOUND when absent, GAN_ERR_FORMAT when it differs (the message shows both). */
gan_status gan_st_expect(const gan_st_file *f, const char *name, enum gan_st_dtype dtype,
                         int ndim, const uint64_t *shape, const struct gan_st_tensor **out,
                         char *err, size_t err_size);

/* Metadata entries, sorted by key; the value for `key`, or NULL. */
size_t gan_st_metadata_count(const gan_st_file *f);
void gan_st_metadata_at(const gan_st_file *f, size_t index, const char **key, const char **value);
const char *gan_st_metadata_get(const gan_st_file *f, const char *key);

#endif
