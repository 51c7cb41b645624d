/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What libmpi's interposed libc functions (pageguard_alloc.c, pageguard_signal.c,
 * pageguard_syscalls.c) need besides the page guards' public header: how to be seen by the
 * program, and where the real definitions are (pageguard_libc.c). */

#ifndef PAGEGUARD_LIBC_H_INCLUDED
#define PAGEGUARD_LIBC_H_INCLUDED

/* libmpi is built with -fvisibility=hidden; the libc wrappers must be seen by the program */
#define MPII_PAGEGUARD_EXPORT __attribute__ ((visibility("default")))

/* The definition of libc function name that our interposed one forwards to, whatever the load
 * order; NULL only if libc has none. Not async-signal-safe. */
void *MPII_Pageguard_next_definition(const char *name);

#endif /* PAGEGUARD_LIBC_H_INCLUDED */
