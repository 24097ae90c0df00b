/* SPDX-License-Identifier: MIT */
/* curves_table.h — metrics.csv read back for curves.c: its columns by name, each cell as
 * a number (NaN when empty or text) and as written. */
#ifndef GANCTL_CORE_CURVES_TABLE_H
#define GANCTL_CORE_CURVES_TABLE_H

#include <stddef.h>

#include <ganctl/status.h>

#include "base/error.h"

#define GAN_CURVES_MAX_COLUMNS 128

struct gan_curves_table {
    size_t cols, rows;
    char *names[GAN_CURVES_MAX_COLUMNS];
    double *values;               /* rows × cols; NaN for empty or text cells */
    char **text;                  /* rows × cols: the cell as written, for text columns */
    char *buffer;                 /* the file, cut into cells in place */
};

/* Reads the table at `path` into `t` (free it with gan_curves_table_free, also after a
 * failure). Rows with another number of cells than the header (a row cut short by a stop
 * mid-write) are left out. Errors name the file. */
gan_status gan_curves_table_read(const char *path, struct gan_curves_table *t,
                                 struct gan_error *err);

void gan_curves_table_free(struct gan_curves_table *t);

/* The index of the column `name`, or -1. */
int gan_curves_column(const struct gan_curves_table *t, const char *name);

static inline double gan_curves_at(const struct gan_curves_table *t, size_t row, int col)
{
    return t->values[row * t->cols + (size_t)col];
}

#endif
