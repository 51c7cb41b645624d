/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Where libmpi's interposed libc functions (pageguard_alloc.c, pageguard_signal.c,
 * pageguard_syscalls.c) find the real ones, and whether the program calls ours at all.
 *
 * The load order decides both. A program linked with mpicc has libmpi before libc in its
 * needed list: the program's calls bind to our definitions and dlsym(RTLD_NEXT) from libmpi
 * finds libc's. When libmpi comes after libc (a dependency of libmpifort or of another shared
 * library, a dlopen'ed libmpi), RTLD_NEXT finds nothing, and the program's calls go to libc's
 * definitions directly. So the real definition is looked up in three places, first hit wins:
 * the objects after libmpi, the one the process uses (a replacement allocator or libc placed
 * before libmpi), and libc itself. And MPIR_Pageguard_interposed tells the caller whether the
 * process's definitions are ours; where they are not, a system call would meet guarded pages
 * with EFAULT and a SIGSEGV handler installed by the program would replace ours, so T-NBC
 * must not guard pages there. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pageguard_internal.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <stddef.h>

/* The entry points whose bypass is unsafe: a handler or mask that ignores ours, a system call
 * that reads or writes a guarded page. free and realloc are not listed: without them T-NBC
 * keeps its guarded send buffers out of the allocator's heap (tnbc_init.c). */
static const char *const must_be_ours[] = {
    "sigaction", "signal", "sigprocmask", "pthread_sigmask",
    "read", "write", "readv", "writev",
#if defined(__x86_64__) || defined(__aarch64__)
    "pread64", "pwrite64", "preadv64", "pwritev64",     /* wrapped on LP64 only */
#endif
    "recv", "send", "recvfrom", "sendto", "recvmsg", "sendmsg", "fread", "fwrite",
};

static int in_this_object(const void *addr)
{
    Dl_info mine, theirs;
    return addr && dladdr((void *) MPII_Pageguard_next_definition, &mine) &&
        dladdr(addr, &theirs) && mine.dli_fbase == theirs.dli_fbase;
}

/* The first function no definition was found for (its wrapper fails with ENOSYS). */
static const char *_Atomic missing;

void *MPII_Pageguard_next_definition(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (fn)
        return fn;
    fn = dlsym(RTLD_DEFAULT, name);
    if (fn && !in_this_object(fn))
        return fn;
    /* libc is loaded in every process libmpi is in: this only finds it, and it stays */
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    fn = libc ? dlsym(libc, name) : NULL;
    if (libc)
        dlclose(libc);
    if (!fn) {
        const char *none = NULL;
        atomic_compare_exchange_strong(&missing, &none, name);
    }
    return fn;
}

const char *MPIR_Pageguard_libc_missing(void)
{
    return atomic_load(&missing);
}

int MPIR_Pageguard_interposed(const char **bypassed)
{
    for (size_t i = 0; i < sizeof(must_be_ours) / sizeof(must_be_ours[0]); i++) {
        if (!in_this_object(dlsym(RTLD_DEFAULT, must_be_ours[i]))) {
            if (bypassed)
                *bypassed = must_be_ours[i];
            return 0;
        }
    }
    return 1;
}
