/* SPDX-License-Identifier: MIT */
/* sort_doubles.h — ascending sort of doubles by radix, for the sliced W1 distances,
 * which sort one projection per direction per evaluation (256 sorts of 2,500 values
 * for a toy, in every evaluation and in the real-against-real floor). */
#ifndef GANCTL_CORE_SORT_DOUBLES_H
#define GANCTL_CORE_SORT_DOUBLES_H

#include <stddef.h>
#include <stdint.h>

/* Sorts v[0..n) ascending in the order of the values' bits read as IEEE 754: −NaN
 * first, then −inf, the negatives, −0 before +0, the positives, +inf and +NaN last.
 * For values that are not NaN that is the order of `<`, so the sorted array holds the
 * same bits a comparison sort gives, apart from the order of −0 and +0 (which compare
 * equal). `scratch` holds 2·n words. */
void gan_sort_doubles(double *v, size_t n, uint64_t *scratch);

#endif
