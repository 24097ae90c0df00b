/* SPDX-License-Identifier: MIT */
/* api.h — GAN_API, the mark on every function declaration of these headers that
 * libganctl implements (what the library exports is exactly what is marked), and
 * GAN_PRINTF_LIKE, the format check of the printf-like ones. */
#ifndef GANCTL_API_H
#define GANCTL_API_H

/* libganctl is compiled with -fvisibility=hidden (core/core.am), so a function of the
 * core is exported only when its declaration carries GAN_API: the core's own helpers
 * stay inside the library however they are named, and a plugin can link against
 * nothing but this interface. tests/exports.sh holds the built library to the
 * declarations. In a plugin the mark changes nothing (its references stay ordinary
 * undefined symbols, whatever -fvisibility it is compiled with). */
#if defined(__GNUC__) || defined(__clang__)
#define GAN_API __attribute__((visibility("default")))
#else
#define GAN_API
#endif

/* Marks a printf-like function of these headers so that GCC and Clang check the
 * format strings a module passes it; other compilers, which know no __attribute__,
 * see nothing. The headers stay plain C99 for them. */
#if defined(__GNUC__) || defined(__clang__)
#define GAN_PRINTF_LIKE(format_index, first_arg) \
    __attribute__((format(printf, format_index, first_arg)))
#else
#define GAN_PRINTF_LIKE(format_index, first_arg)
#endif

#endif
