/* SPDX-License-Identifier: MIT */
/* safetensors_read.c — the safetensors reader: every header field validated before use,
 * the layout checked to tile the data section, and lookups by name and metadata key. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/file_open.h"
#include "base/strings.h"
#include "io/safetensors/safetensors_private.h"

/* ----------------------------------------------------------------- reader */

struct gan_st_file {
    char *label;
    unsigned char *owned;        /* the file's bytes, when gan_st_open read them */
    struct gan_st_tensor *tensors;
    size_t count;
    size_t *by_name;             /* indices into tensors, sorted by name */
    struct st_meta *meta;        /* sorted by key */
    size_t meta_count;
};

void gan_st_close(gan_st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->count; i++)
        free((char *)f->tensors[i].name);
    for (size_t i = 0; i < f->meta_count; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->tensors);
    free(f->by_name);
    free(f->meta);
    free(f->owned);
    free(f->label);
    free(f);
}

static const char *st_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a non-integer number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

/* The entry's dtype, into t->dtype. */
static gan_status st_parse_dtype(const char *label, const char *shown, json_t *entry,
                                 struct gan_st_tensor *t, char *err, size_t err_size)
{
    json_t *dtype = json_object_get(entry, "dtype");
    if (!dtype)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT, "%s: tensor \"%s\": no dtype", label,
                           shown);
    if (!json_is_string(dtype))
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": dtype is %s, not a string", label, shown,
                           st_json_kind(dtype));
    if (gan_st_dtype_parse(json_string_value(dtype), &t->dtype) != GAN_OK) {
        char dtype_shown[64];
        return gan_st_fail(err, err_size, GAN_ERR_UNSUPPORTED,
                           "%s: tensor \"%s\": unknown dtype \"%s\" (this reader knows BOOL, U8, "
                           "I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, "
                           "U64)", label, shown,
                           gan_st_printable(dtype_shown, sizeof dtype_shown,
                                            json_string_value(dtype)));
    }
    return GAN_OK;
}

/* The entry's shape, into t->ndim and t->shape. */
static gan_status st_parse_shape(const char *label, const char *shown, json_t *entry,
                                 struct gan_st_tensor *t, char *err, size_t err_size)
{
    json_t *shape = json_object_get(entry, "shape");
    if (!shape)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT, "%s: tensor \"%s\": no shape", label,
                           shown);
    if (!json_is_array(shape))
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": shape is %s, not an array", label, shown,
                           st_json_kind(shape));
    if (json_array_size(shape) > GAN_ST_MAX_DIMS)
        return gan_st_fail(err, err_size, GAN_ERR_UNSUPPORTED,
                           "%s: tensor \"%s\": shape has %zu dimensions; at most %d are supported",
                           label, shown, json_array_size(shape), GAN_ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    for (int d = 0; d < t->ndim; d++) {
        json_t *dim = json_array_get(shape, (size_t)d);
        if (!json_is_integer(dim) || json_integer_value(dim) < 0)
            return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: tensor \"%s\": shape entry %d is %s, not a non-negative "
                               "integer", label, shown, d,
                               json_is_integer(dim) ? "negative" : st_json_kind(dim));
        t->shape[d] = (uint64_t)json_integer_value(dim);
    }
    return GAN_OK;
}

/* The entry's data_offsets, [begin, end] with begin <= end, into range. */
static gan_status st_parse_offsets(const char *label, const char *shown, json_t *entry,
                                   uint64_t range[2], char *err, size_t err_size)
{
    json_t *offsets = json_object_get(entry, "data_offsets");
    if (!offsets)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT, "%s: tensor \"%s\": no data_offsets",
                           label, shown);
    if (!json_is_array(offsets) || json_array_size(offsets) != 2)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets must be an array [begin, end]",
                           label, shown);
    for (size_t k = 0; k < 2; k++) {
        json_t *v = json_array_get(offsets, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: tensor \"%s\": data_offsets %s is %s, not a non-negative "
                               "integer", label, shown, k ? "end" : "begin",
                               json_is_integer(v) ? "negative" : st_json_kind(v));
        range[k] = (uint64_t)json_integer_value(v);
    }
    if (range[1] < range[0])
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end before "
                           "they begin", label, shown, range[0], range[1]);
    return GAN_OK;
}

/* Reads one header entry into t (name not yet set). */
static gan_status st_parse_entry(const char *label, const char *name, json_t *entry,
                                 uint64_t data_len, struct gan_st_tensor *t,
                                 char *err, size_t err_size)
{
    char shown[128], shape_text[256];
    uint64_t range[2];
    gan_status status;
    gan_st_printable(shown, sizeof shown, name);
    if (!json_is_object(entry))
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": entry is %s, not an object with dtype, shape and "
                           "data_offsets", label, shown, st_json_kind(entry));
    const char *field;
    json_t *value;
    json_object_foreach(entry, field, value) {
        if (strcmp(field, "dtype") && strcmp(field, "shape") && strcmp(field, "data_offsets")) {
            char field_shown[128];
            return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: tensor \"%s\": unknown field \"%s\" (expected dtype, shape and "
                               "data_offsets)", label, shown,
                               gan_st_printable(field_shown, sizeof field_shown, field));
        }
    }

    if ((status = st_parse_dtype(label, shown, entry, t, err, err_size)) != GAN_OK)
        return status;
    if ((status = st_parse_shape(label, shown, entry, t, err, err_size)) != GAN_OK)
        return status;
    gan_st_shape_text(shape_text, sizeof shape_text, t->ndim, t->shape);
    if ((status = st_parse_offsets(label, shown, entry, range, err, err_size)) != GAN_OK)
        return status;

    size_t esize = gan_st_dtype_size(t->dtype);
    if (!gan_st_element_count(t->ndim, t->shape, &t->count) || t->count > UINT64_MAX / esize)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": shape %s of %s holds more bytes than fit in 64 bits",
                           label, shown, shape_text, gan_st_dtype_name(t->dtype));
    uint64_t bytes = t->count * esize;
    if (range[1] - range[0] != bytes)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] do not "
                           "match shape %s of %s (%" PRIu64 " bytes)", label, shown, range[0],
                           range[1], shape_text, gan_st_dtype_name(t->dtype), bytes);
    if (range[1] > data_len)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] run past "
                           "the end of the data section (%" PRIu64 " bytes); the file is "
                           "truncated?", label, shown, range[0], range[1], data_len);
    t->begin = range[0];
    t->nbytes = (size_t)bytes;
    return GAN_OK;
}

static gan_status st_parse_metadata(const char *label, json_t *meta, gan_st_file *f,
                                    char *err, size_t err_size)
{
    char shown[128];
    if (json_is_null(meta))
        return GAN_OK; /* the reference reader reads null as "no metadata" */
    if (!json_is_object(meta))
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: __metadata__ is %s, not an object of strings", label,
                           st_json_kind(meta));
    size_t n = json_object_size(meta);
    f->meta = calloc(n ? n : 1, sizeof *f->meta);
    if (!f->meta)
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory reading metadata",
                           label);
    const char *key;
    json_t *value;
    json_object_foreach(meta, key, value) {
        if (!json_is_string(value))
            return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: metadata \"%s\" is %s, not a string", label,
                               gan_st_printable(shown, sizeof shown, key), st_json_kind(value));
        char *key_copy = gan_strdup(key);
        char *value_copy = gan_strdup(json_string_value(value));
        if (!key_copy || !value_copy) {
            free(key_copy);
            free(value_copy);
            return gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory reading metadata",
                               label);
        }
        f->meta[f->meta_count].key = key_copy;
        f->meta[f->meta_count].value = value_copy;
        f->meta_count++;
    }
    qsort(f->meta, f->meta_count, sizeof *f->meta, gan_st_cmp_meta);
    return GAN_OK;
}

/* File order: by offsets, then (for empty tensors at one offset) by name. */
static int st_cmp_offsets(const void *pa, const void *pb)
{
    const struct gan_st_tensor *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->nbytes != b->nbytes)
        return a->nbytes < b->nbytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* qsort has no context argument; by-name sorting goes through this pair instead. */
struct st_name_ref {
    const char *name;
    size_t index;
};

static int st_cmp_name_ref(const void *pa, const void *pb)
{
    const struct st_name_ref *a = pa, *b = pb;
    return strcmp(a->name, b->name);
}

/* The data section must be tiled exactly: the reference reader requires it, and it means
 * no tensor can alias another or hide bytes between them. */
static gan_status st_check_layout(const char *label, const gan_st_file *f, uint64_t data_len,
                                  char *err, size_t err_size)
{
    char a_shown[128], b_shown[128];
    uint64_t cursor = 0;
    const struct gan_st_tensor *last = NULL; /* the tensor that ends at cursor */
    for (size_t i = 0; i < f->count; i++) {
        const struct gan_st_tensor *t = &f->tensors[i];
        uint64_t end = t->begin + t->nbytes;
        if (t->begin < cursor)
            return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] overlap "
                               "tensor \"%s\" [%" PRIu64 ", %" PRIu64 "]", label,
                               gan_st_printable(a_shown, sizeof a_shown, t->name), t->begin, end,
                               gan_st_printable(b_shown, sizeof b_shown, last->name), last->begin,
                               last->begin + last->nbytes);
        if (t->begin > cursor) {
            if (last)
                return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                                   "%s: bytes [%" PRIu64 ", %" PRIu64 ") of the data section "
                                   "belong to no tensor (between tensor \"%s\" and tensor \"%s\")",
                                   label, cursor, t->begin,
                                   gan_st_printable(a_shown, sizeof a_shown, last->name),
                                   gan_st_printable(b_shown, sizeof b_shown, t->name));
            return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: bytes [0, %" PRIu64 ") of the data section belong to no tensor "
                               "(before tensor \"%s\")", label, t->begin,
                               gan_st_printable(a_shown, sizeof a_shown, t->name));
        }
        if (t->nbytes > 0 || !last) {
            last = t;
        }
        cursor = end;
    }
    if (cursor != data_len)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: the data section is %" PRIu64 " bytes but the tensors end at byte "
                           "%" PRIu64 "; the %" PRIu64 " bytes after it belong to no tensor", label,
                           data_len, cursor, data_len - cursor);
    return GAN_OK;
}

/* The header length N from the first 8 bytes, checked against the limit and against the
 * bytes that follow the length field. */
static gan_status st_header_length(const unsigned char *bytes, size_t size, const char *label,
                                   uint64_t *length, char *err, size_t err_size)
{
    if (size < 8)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: %zu bytes is too short for a safetensors file, which starts with "
                           "an 8-byte header length", label, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | bytes[i];
    if (n > GAN_ST_MAX_HEADER)
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: header length %" PRIu64 " is over the %" PRIu64 "-byte limit; "
                           "not a safetensors file, or a corrupt one", label, n,
                           GAN_ST_MAX_HEADER);
    if (n > (uint64_t)(size - 8))
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: header length %" PRIu64 " runs past the end of the file (%zu "
                           "bytes follow the length field); the file is truncated", label, n,
                           size - 8);
    *length = n;
    return GAN_OK;
}

/* Every entry of the header object: the metadata into f->meta, the tensors into
 * f->tensors in the header's order, their data inside the data section `data`. */
static gan_status st_parse_entries(json_t *root, const unsigned char *data, uint64_t data_len,
                                   const char *label, gan_st_file *f, char *err, size_t err_size)
{
    size_t entries = json_object_size(root);
    f->tensors = calloc(entries ? entries : 1, sizeof *f->tensors);
    if (!f->tensors)
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
    const char *key;
    json_t *value;
    gan_status status;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "__metadata__") == 0) {
            status = st_parse_metadata(label, value, f, err, err_size);
            if (status != GAN_OK)
                return status;
            continue;
        }
        struct gan_st_tensor *t = &f->tensors[f->count];
        status = st_parse_entry(label, key, value, data_len, t, err, err_size);
        if (status != GAN_OK)
            return status;
        t->name = gan_strdup(key);
        if (!t->name)
            return gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
        t->data = data + t->begin;
        f->count++;
    }
    return GAN_OK;
}

/* f->by_name: the tensors' indices sorted by name, for gan_st_find. */
static gan_status st_index_names(gan_st_file *f, const char *label, char *err, size_t err_size)
{
    struct st_name_ref *refs = malloc((f->count ? f->count : 1) * sizeof *refs);
    f->by_name = malloc((f->count ? f->count : 1) * sizeof *f->by_name);
    if (!refs || !f->by_name) {
        free(refs);
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
    }
    for (size_t i = 0; i < f->count; i++) {
        refs[i].name = f->tensors[i].name;
        refs[i].index = i;
    }
    qsort(refs, f->count, sizeof *refs, st_cmp_name_ref);
    for (size_t i = 0; i < f->count; i++)
        f->by_name[i] = refs[i].index;
    free(refs);
    return GAN_OK;
}

/* Parses `size` bytes at `bytes`; *out is set on success. `owned` (may be NULL) is the
 * allocation holding them, taken over by the result (and freed on failure). */
static gan_status st_parse(const unsigned char *bytes, size_t size, unsigned char *owned,
                           const char *label, gan_st_file **out, char *err, size_t err_size)
{
    gan_status status = GAN_OK;
    json_t *root = NULL;
    *out = NULL;

    gan_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->label = gan_strdup(label))) {
        free(f);
        free(owned);
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
    }
    f->owned = owned;

    uint64_t n = 0;
    status = st_header_length(bytes, size, label, &n, err, err_size);
    if (status != GAN_OK)
        goto fail;
    uint64_t data_len = (uint64_t)(size - 8) - n;
    const unsigned char *data = bytes + 8 + n;

    json_error_t jerr;
    root = json_loadb((const char *)bytes + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        /* jansson's text quotes the header near the error, which may hold a newline or
         * any other control byte: the message must stay one line. */
        char why[sizeof jerr.text];
        status = gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                             "%s: the header is not valid JSON: %s (header byte %d)", label,
                             gan_st_printable(why, sizeof why, jerr.text), jerr.position);
        goto fail;
    }
    if (!json_is_object(root)) {
        status = gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                             "%s: the header is %s, not a JSON object", label, st_json_kind(root));
        goto fail;
    }

    status = st_parse_entries(root, data, data_len, label, f, err, err_size);
    if (status != GAN_OK)
        goto fail;

    qsort(f->tensors, f->count, sizeof *f->tensors, st_cmp_offsets);
    status = st_check_layout(label, f, data_len, err, err_size);
    if (status != GAN_OK)
        goto fail;

    status = st_index_names(f, label, err, err_size);
    if (status != GAN_OK)
        goto fail;

    json_decref(root);
    *out = f;
    return GAN_OK;

fail:
    json_decref(root);
    gan_st_close(f);
    return status;
}

gan_status gan_st_parse(const void *bytes, size_t size, const char *label, gan_st_file **out,
                        char *err, size_t err_size)
{
    if (!bytes && size > 0)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID, "%s: no bytes given", label);
    static const unsigned char none[1];
    return st_parse(bytes ? bytes : none, size, NULL, label ? label : "safetensors", out,
                    err, err_size);
}

gan_status gan_st_open(const char *path, gan_st_file **out, char *err, size_t err_size)
{
    *out = NULL;
    const char *kind;
    int fd = gan_open_regular(path, &kind);
    if (fd < 0 && kind)
        return gan_st_fail(err, err_size,
                           strcmp(kind, GAN_FILE_KIND_FOLDER) == 0 ? GAN_ERR_IO : GAN_ERR_CONFIG,
                           "%s is %s, not a regular file; only regular files are read", path,
                           kind);
    if (fd < 0)
        return gan_st_fail(err, err_size, errno == ENOENT ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                           "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gan_st_fail(err, err_size, GAN_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gan_st_fail(err, err_size, GAN_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX - 16) {
        close(fd);
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "%s: %jd bytes do not fit in this process's memory", path,
                           (intmax_t)st.st_size);
    }
    size_t size = (size_t)st.st_size;

    /* Peek at the header length so that the data section can be placed 8-byte aligned
     * in memory, wherever the header ends. A bad length is reported by st_parse. */
    size_t shift = 0;
    unsigned char head[8];
    if (size >= 8 && pread(fd, head, 8, 0) == 8) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--)
            n = (n << 8) | head[i];
        shift = (size_t)((8 - (n % 8)) % 8);
    }
    unsigned char *buf = malloc(size + shift + 1);
    if (!buf) {
        close(fd);
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "%s: out of memory reading %zu bytes", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, buf + shift + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            free(buf);
            if (r == 0)
                return gan_st_fail(err, err_size, GAN_ERR_IO,
                                   "%s: the file shrank from %zu to %zu bytes while being read",
                                   path, size, got);
            return gan_st_fail(err, err_size, GAN_ERR_IO, "%s: read failed: %s", path, strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    return st_parse(buf + shift, size, buf, path, out, err, err_size);
}

/* ----------------------------------------------------------------- queries */

size_t gan_st_count(const gan_st_file *f)
{
    return f->count;
}

const struct gan_st_tensor *gan_st_tensor_at(const gan_st_file *f, size_t index)
{
    return index < f->count ? &f->tensors[index] : NULL;
}

const struct gan_st_tensor *gan_st_find(const gan_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gan_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

gan_status gan_st_expect(const gan_st_file *f, const char *name, enum gan_st_dtype dtype,
                         int ndim, const uint64_t *shape, const struct gan_st_tensor **out,
                         char *err, size_t err_size)
{
    char shown[128], want[256], have[256];
    const struct gan_st_tensor *t = gan_st_find(f, name);
    *out = NULL;
    gan_st_printable(shown, sizeof shown, name);
    if (!t)
        return gan_st_fail(err, err_size, GAN_ERR_NOT_FOUND,
                           "%s: no tensor \"%s\" (the file holds %zu tensors)", f->label, shown,
                           f->count);
    int same = t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = t->shape[d] == shape[d];
    if (!same) {
        if (ndim < 0 || ndim > GAN_ST_MAX_DIMS)
            ndim = 0;
        return gan_st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\" is %s %s, expected %s %s", f->label, shown,
                           gan_st_dtype_name(t->dtype),
                           gan_st_shape_text(have, sizeof have, t->ndim, t->shape),
                           gan_st_dtype_name(dtype) ? gan_st_dtype_name(dtype) : "?",
                           gan_st_shape_text(want, sizeof want, ndim, shape));
    }
    *out = t;
    return GAN_OK;
}

size_t gan_st_metadata_count(const gan_st_file *f)
{
    return f->meta_count;
}

void gan_st_metadata_at(const gan_st_file *f, size_t index, const char **key, const char **value)
{
    *key = index < f->meta_count ? f->meta[index].key : NULL;
    *value = index < f->meta_count ? f->meta[index].value : NULL;
}

const char *gan_st_metadata_get(const gan_st_file *f, const char *key)
{
    size_t lo = 0, hi = f->meta_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, f->meta[mid].key);
        if (c == 0)
            return f->meta[mid].value;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
