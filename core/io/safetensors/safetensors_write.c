/* SPDX-License-Identifier: MIT */
/* safetensors_write.c — the safetensors writer: tensors and metadata collected, laid out
 * and escaped exactly as the reference implementation does, written atomically. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strings.h"
#include "io/safetensors/safetensors_private.h"

/* ----------------------------------------------------------------- writer */

struct st_wtensor {
    char *name;
    enum gan_st_dtype dtype;
    int ndim;
    uint64_t shape[GAN_ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
};

struct gan_st_writer {
    struct st_wtensor *tensors;
    size_t count, capacity;
    struct st_meta *meta;
    size_t meta_count, meta_capacity;
};

gan_st_writer *gan_st_writer_new(void)
{
    return calloc(1, sizeof(struct gan_st_writer));
}

void gan_st_writer_free(gan_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->count; i++)
        free(w->tensors[i].name);
    for (size_t i = 0; i < w->meta_count; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->tensors);
    free(w->meta);
    free(w);
}

/* Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), as JSON and the
 * reference reader (Rust's str) require. */
static int st_valid_utf8(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        unsigned char c = *s;
        int extra;
        uint32_t cp;
        if (c < 0x80) {
            s++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            extra = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        for (int k = 1; k <= extra; k++) {
            if ((s[k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[k] & 0x3f);
        }
        if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000)
            || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        s += extra + 1;
    }
    return 1;
}

/* Grows *array (of `elem` bytes each) so that it holds at least one more element. */
static int st_reserve(void **array, size_t *capacity, size_t count, size_t elem)
{
    if (count < *capacity)
        return 1;
    size_t cap = *capacity ? *capacity * 2 : 16;
    if (cap > SIZE_MAX / elem)
        return 0;
    void *grown = realloc(*array, cap * elem);
    if (!grown)
        return 0;
    *array = grown;
    *capacity = cap;
    return 1;
}

gan_status gan_st_writer_add(gan_st_writer *w, const char *name, enum gan_st_dtype dtype,
                             int ndim, const uint64_t *shape, const void *data, size_t nbytes,
                             char *err, size_t err_size)
{
    char shown[128], shape_text[256];
    if (!name || !name[0])
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: a tensor name must not be empty");
    gan_st_printable(shown, sizeof shown, name);
    if (strcmp(name, "__metadata__") == 0)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: \"__metadata__\" is reserved for the metadata; "
                           "choose another tensor name");
    if (!st_valid_utf8(name))
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor name \"%s\" is not valid UTF-8", shown);
    if (!gan_st_dtype_name(dtype))
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor \"%s\": dtype %d is not a safetensors dtype",
                           shown, (int)dtype);
    if (ndim < 0 || ndim > GAN_ST_MAX_DIMS || (ndim > 0 && !shape))
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor \"%s\": %d dimensions; between 0 and %d are "
                           "supported", shown, ndim, GAN_ST_MAX_DIMS);
    uint64_t count;
    gan_st_shape_text(shape_text, sizeof shape_text, ndim, shape);
    if (!gan_st_element_count(ndim, shape, &count) || count > UINT64_MAX / gan_st_dtype_size(dtype))
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor \"%s\": shape %s is too large", shown, shape_text);
    uint64_t expected = count * gan_st_dtype_size(dtype);
    if (expected != (uint64_t)nbytes)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor \"%s\": %zu bytes of data given, but shape %s of "
                           "%s needs %" PRIu64, shown, nbytes, shape_text, gan_st_dtype_name(dtype),
                           expected);
    if (nbytes > 0 && !data)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor \"%s\": data is NULL", shown);
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                               "safetensors: tensor \"%s\" was already added; names must be unique",
                               shown);
    if (!st_reserve((void **)&w->tensors, &w->capacity, w->count, sizeof *w->tensors))
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "safetensors: out of memory adding tensor \"%s\"", shown);
    struct st_wtensor *t = &w->tensors[w->count];
    memset(t, 0, sizeof *t);
    t->name = gan_strdup(name);
    if (!t->name)
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "safetensors: out of memory adding tensor \"%s\"", shown);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    t->data = data;
    t->nbytes = nbytes;
    w->count++;
    return GAN_OK;
}

gan_status gan_st_writer_set_metadata(gan_st_writer *w, const char *key, const char *value,
                                      char *err, size_t err_size)
{
    char shown[128];
    if (!key || !value)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: a metadata key and value must not be NULL");
    gan_st_printable(shown, sizeof shown, key);
    if (!st_valid_utf8(key) || !st_valid_utf8(value))
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: metadata \"%s\": key and value must be valid UTF-8",
                           shown);
    char *copy = gan_strdup(value);
    if (!copy)
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "safetensors: out of memory setting metadata \"%s\"", shown);
    for (size_t i = 0; i < w->meta_count; i++) {
        if (strcmp(w->meta[i].key, key) == 0) {
            free(w->meta[i].value);
            w->meta[i].value = copy;
            return GAN_OK;
        }
    }
    char *key_copy = gan_strdup(key);
    if (!key_copy
        || !st_reserve((void **)&w->meta, &w->meta_capacity, w->meta_count, sizeof *w->meta)) {
        free(copy);
        free(key_copy);
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "safetensors: out of memory setting metadata \"%s\"", shown);
    }
    w->meta[w->meta_count].key = key_copy;
    w->meta[w->meta_count].value = copy;
    w->meta_count++;
    return GAN_OK;
}

/* A growing byte string; `failed` sticks once an allocation fails. */
struct st_buf {
    char *bytes;
    size_t len, cap;
    int failed;
};

static void st_put(struct st_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (n > cap - b->len) {
            if (cap > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            cap *= 2;
        }
        char *grown = realloc(b->bytes, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->bytes = grown;
        b->cap = cap;
    }
    memcpy(b->bytes + b->len, s, n);
    b->len += n;
}

static void st_puts(struct st_buf *b, const char *s)
{
    st_put(b, s, strlen(s));
}

static void st_putu(struct st_buf *b, uint64_t v)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%" PRIu64, v);
    st_put(b, text, (size_t)n);
}

/* A JSON string escaped exactly as serde_json (the reference writer) escapes it: the two
 * mandatory escapes, the short forms \b \f \n \r \t, \u00xx in lower-case hex for the
 * other control bytes, and everything else (including '/', DEL and non-ASCII) verbatim. */
static void st_put_json_string(struct st_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    st_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[7];
        switch (c) {
        case '"': st_put(b, "\\\"", 2); break;
        case '\\': st_put(b, "\\\\", 2); break;
        case '\b': st_put(b, "\\b", 2); break;
        case '\f': st_put(b, "\\f", 2); break;
        case '\n': st_put(b, "\\n", 2); break;
        case '\r': st_put(b, "\\r", 2); break;
        case '\t': st_put(b, "\\t", 2); break;
        default:
            if (c < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                st_put(b, esc, 6);
            } else {
                st_put(b, (const char *)&c, 1);
            }
        }
    }
    st_put(b, "\"", 1);
}

/* The reference layout: descending dtype (in the enum's order), then name, bytewise. */
static int st_cmp_layout(const void *pa, const void *pb)
{
    const struct st_wtensor *a = *(const struct st_wtensor *const *)pa;
    const struct st_wtensor *b = *(const struct st_wtensor *const *)pb;
    if (a->dtype != b->dtype)
        return a->dtype > b->dtype ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Builds the padded header into `b` and the layout order into `order`. */
static gan_status st_build_header(gan_st_writer *w, const struct st_wtensor **order,
                                  struct st_buf *b, char *err, size_t err_size, const char *path)
{
    for (size_t i = 0; i < w->count; i++)
        order[i] = &w->tensors[i];
    qsort(order, w->count, sizeof *order, st_cmp_layout);
    if (w->meta_count > 1)
        qsort(w->meta, w->meta_count, sizeof *w->meta, gan_st_cmp_meta);

    int first = 1;
    st_put(b, "{", 1);
    if (w->meta_count > 0) {
        st_puts(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->meta_count; i++) {
            if (i)
                st_put(b, ",", 1);
            st_put_json_string(b, w->meta[i].key);
            st_put(b, ":", 1);
            st_put_json_string(b, w->meta[i].value);
        }
        st_put(b, "}", 1);
        first = 0;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->count; i++) {
        const struct st_wtensor *t = order[i];
        if (!first)
            st_put(b, ",", 1);
        first = 0;
        st_put_json_string(b, t->name);
        st_puts(b, ":{\"dtype\":\"");
        st_puts(b, gan_st_dtype_name(t->dtype));
        st_puts(b, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d)
                st_put(b, ",", 1);
            st_putu(b, t->shape[d]);
        }
        st_puts(b, "],\"data_offsets\":[");
        st_putu(b, offset);
        st_put(b, ",", 1);
        if ((uint64_t)t->nbytes > UINT64_MAX - offset)
            return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                               "%s: the tensors hold more than 2^64 bytes together", path);
        offset += t->nbytes;
        st_putu(b, offset);
        st_puts(b, "]}");
    }
    st_put(b, "}", 1);
    /* Spaces, so that the data (after the 8-byte length) starts 8-byte aligned. */
    while (!b->failed && b->len % 8 != 0)
        st_put(b, " ", 1);
    if (b->failed)
        return gan_st_fail(err, err_size, GAN_ERR_NOMEM,
                           "%s: out of memory building the safetensors header", path);
    if ((uint64_t)b->len > GAN_ST_MAX_HEADER)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "%s: the header would be %zu bytes, over the %" PRIu64 "-byte limit "
                           "readers accept; use fewer or shorter names and metadata",
                           path, b->len, GAN_ST_MAX_HEADER);
    return GAN_OK;
}

static int st_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t done = write(fd, p, chunk);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        if (done == 0) {
            errno = EIO;
            return 0;
        }
        p += done;
        n -= (size_t)done;
    }
    return 1;
}

/* Distinguishes temporary files of concurrent writes by one process. */
static atomic_uint st_temp_serial;

/* Creates the temporary file `temp` that will be renamed over `path` (base: its last
 * component), open for writing in *fd. */
static gan_status st_create_temp(const char *path, const char *base, const char *dir,
                                 char *temp, size_t temp_size, int *fd, char *err,
                                 size_t err_size)
{
    /* The temporary file sits next to the target so that rename(2) replaces the target
     * in one step; O_EXCL with a per-call name keeps concurrent writers apart. Mode 0666
     * lets the umask decide, as for any other new file. */
    for (int attempt = 0; *fd < 0; attempt++) {
        unsigned serial = atomic_fetch_add(&st_temp_serial, 1u);
        /* "dir/.name.tmp.PID.N": the leading dot hides it from globs like *.safetensors. */
        snprintf(temp, temp_size, "%.*s.%s.tmp.%ld.%u", (int)(base - path), path, base,
                 (long)getpid(), serial);
        *fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd < 0 && (errno != EEXIST || attempt >= 100))
            return gan_st_fail(err, err_size, errno == ENOENT ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                               "%s: cannot create a temporary file in %s: %s", path, dir,
                               strerror(errno));
    }
    return GAN_OK;
}

/* Writes the length, the header and the tensors in layout order to fd, then syncs it. */
static gan_status st_write_contents(int fd, const struct st_buf *header, const gan_st_writer *w,
                                    const struct st_wtensor **order, const char *path,
                                    const char *temp, char *err, size_t err_size)
{
    unsigned char length[8];
    for (int i = 0; i < 8; i++)
        length[i] = (unsigned char)((uint64_t)header->len >> (8 * i));
    int ok = st_write_all(fd, length, sizeof length)
             && st_write_all(fd, header->bytes, header->len);
    for (size_t i = 0; ok && i < w->count; i++)
        ok = st_write_all(fd, order[i]->data, order[i]->nbytes);
    if (!ok)
        return gan_st_fail(err, err_size, GAN_ERR_IO, "%s: writing %s failed: %s", path, temp,
                           strerror(errno));
    if (fsync(fd) != 0)
        return gan_st_fail(err, err_size, GAN_ERR_IO, "%s: fsync of %s failed: %s", path, temp,
                           strerror(errno));
    return GAN_OK;
}

/* Syncs the folder `dir` after `path` was renamed into it. */
static gan_status st_sync_folder(const char *path, const char *dir, char *err, size_t err_size)
{
    gan_status status = GAN_OK;
    /* The rename is durable only once the folder's entry is on disk. A file system that
     * cannot sync folders says EINVAL; that is no reason to fail the checkpoint. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL)) {
        status = gan_st_fail(err, err_size, GAN_ERR_IO,
                             "%s: written, but syncing folder %s failed (%s): the new file may not "
                             "survive a crash", path, dir, strerror(errno));
    }
    if (dfd >= 0)
        close(dfd);
    return status;
}

gan_status gan_st_writer_write(gan_st_writer *w, const char *path, char *err, size_t err_size)
{
    gan_status status = GAN_OK;
    const struct st_wtensor **order = NULL;
    struct st_buf header = { 0 };
    char *dir = NULL, *temp = NULL;
    int fd = -1;

    if (!path || !path[0])
        return gan_st_fail(err, err_size, GAN_ERR_INVALID, "safetensors: no output path given");
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!base[0] || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return gan_st_fail(err, err_size, GAN_ERR_INVALID,
                           "%s: names a folder, not a file; add a file name", path);

    order = malloc((w->count ? w->count : 1) * sizeof *order);
    size_t dir_len = slash ? (size_t)(slash - path) : 1;
    dir = malloc(dir_len + 2);
    size_t temp_size = strlen(path) + 64;
    temp = malloc(temp_size);
    if (!order || !dir || !temp) {
        status = gan_st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else {
        memcpy(dir, path, dir_len);
        dir[dir_len] = '\0';
    }

    status = st_build_header(w, order, &header, err, err_size, path);
    if (status != GAN_OK)
        goto done;

    status = st_create_temp(path, base, dir, temp, temp_size, &fd, err, err_size);
    if (status != GAN_OK)
        goto done;

    status = st_write_contents(fd, &header, w, order, path, temp, err, err_size);
    if (status != GAN_OK)
        goto done;
    int closed = close(fd);
    fd = -1;
    if (closed != 0) {
        status = gan_st_fail(err, err_size, GAN_ERR_IO, "%s: closing %s failed: %s", path, temp,
                             strerror(errno));
        goto done;
    }
    if (rename(temp, path) != 0) {
        status = gan_st_fail(err, err_size, GAN_ERR_IO, "%s: cannot rename %s over it: %s", path,
                             temp, strerror(errno));
        goto done;
    }
    temp[0] = '\0'; /* renamed: nothing left to remove */

    status = st_sync_folder(path, dir, err, err_size);

done:
    if (fd >= 0)
        close(fd);
    if (temp && temp[0] && status != GAN_OK)
        unlink(temp);
    free(header.bytes);
    free(order);
    free(dir);
    free(temp);
    return status;
}
