/* SPDX-License-Identifier: MIT */
/* curves_table.c — metrics.csv read back as a table for curves.c: the header's names,
 * each cell as a number and as written. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/plot/curves_table.h"
#include "io/text_file.h"

void gan_curves_table_free(struct gan_curves_table *t)
{
    free(t->values);
    free(t->text);
    free(t->buffer);
    memset(t, 0, sizeof *t);
}

/* Splits `line` at commas in place into at most `most` cells. */
static size_t split(char *line, char **cells, size_t most)
{
    size_t n = 0;
    for (char *p = line; n < most;) {
        cells[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

static double cell_number(const char *s)
{
    if (!*s)
        return NAN;
    char *end;
    double v = strtod(s, &end);   /* reads "inf", "nan" as the trainer writes them */
    return *end ? NAN : v;
}

gan_status gan_curves_table_read(const char *path, struct gan_curves_table *t,
                                 struct gan_error *err)
{
    memset(t, 0, sizeof *t);
    gan_status st = gan_file_read_text(path, &t->buffer, err);
    if (st == GAN_ERR_NOT_FOUND)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: no such file; a run folder holds metrics.csv from its first logged iteration on",
                             path);
    if (st != GAN_OK)
        return st;
    size_t lines = 0;
    for (const char *p = t->buffer; *p; p++)
        lines += *p == '\n';
    char *save = NULL;
    char *line = strtok_r(t->buffer, "\n", &save);
    if (!line || strncmp(line, "iteration", 9) != 0)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: not a metrics table: its first line should start with \"iteration\"",
                             path);
    t->cols = split(line, t->names, GAN_CURVES_MAX_COLUMNS);
    t->values = malloc((lines + 1) * t->cols * sizeof *t->values);
    t->text = calloc((lines + 1) * t->cols, sizeof *t->text);
    if (!t->values || !t->text)
        return gan_error_nomem(err, path);
    char *cells[GAN_CURVES_MAX_COLUMNS];
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        size_t n = split(line, cells, GAN_CURVES_MAX_COLUMNS);
        if (n != t->cols)
            continue;   /* a row cut short by a stop mid-write */
        for (size_t c = 0; c < t->cols; c++) {
            t->values[t->rows * t->cols + c] = cell_number(cells[c]);
            t->text[t->rows * t->cols + c] = cells[c];
        }
        t->rows++;
    }
    return GAN_OK;
}

int gan_curves_column(const struct gan_curves_table *t, const char *name)
{
    for (size_t c = 0; c < t->cols; c++)
        if (strcmp(t->names[c], name) == 0)
            return (int)c;
    return -1;
}
