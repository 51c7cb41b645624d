/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The C library functions the page guards stand in for while T-NBC is on, and the
 * definitions their stand-ins (hooks) call. libmpi defines none of these names: the hooks are
 * ordinary hidden functions (pageguard_alloc.c, pageguard_signal.c, and pageguard_libc_hooks.c,
 * generated from pageguard_libc.def) that pageguard_hooks.c puts into the other objects' GOT
 * slots, and the definitions are looked up before that (pageguard_libc.c). LP64 only. */

#ifndef PAGEGUARD_LIBC_H_INCLUDED
#define PAGEGUARD_LIBC_H_INCLUDED

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* MPII_PAGEGUARD_LIBC_FUNCS(X), X(index, the name programs call, the hook's name, 1 when T-NBC
 * can do without it), sorted by name: generated from pageguard_libc.def */
#include "pageguard_libc_funcs.h"

typedef enum {
#define MPII_PAGEGUARD_LIBC_INDEX(id_, name_, hook_, optional_) MPII_LIBC_##id_,
    MPII_PAGEGUARD_LIBC_FUNCS(MPII_PAGEGUARD_LIBC_INDEX)
#undef MPII_PAGEGUARD_LIBC_INDEX
        MPII_LIBC_COUNT
} MPII_Pageguard_libc_id_t;

typedef struct {
    const char *name[MPII_LIBC_COUNT];
    int optional[MPII_LIBC_COUNT];      /* T-NBC can do without its hook */
    void *bound[MPII_LIBC_COUNT];       /* what the process's objects are bound to */
    void *callee[MPII_LIBC_COUNT];      /* the code a hook calls; NULL: libc has none */
    int program_defines[MPII_LIBC_COUNT];       /* the program's own: its calls bypass slots */
    size_t (*usable_size) (void *);     /* the allocator's, when it is free's; else NULL */
    size_t pagesize;
} MPII_Pageguard_libc_t;

/* Filled by MPII_Pageguard_libc_resolve before any hook is installed, never cleared: a thread
 * that read a slot before its removal still finds its callee. */
extern MPII_Pageguard_libc_t MPII_Pageguard_libc;

/* Look the definitions up (dlsym: not async-signal-safe, may allocate). */
void MPII_Pageguard_libc_resolve(void);

/* The callee of function id_, cast to type_ (hooks exist only for resolved functions). */
#define MPII_LIBC(id_, type_) ((type_) MPII_Pageguard_libc.callee[MPII_LIBC_##id_])

/* Calls into a hook from libmpi itself: there should be none (our own calls bind to the
 * library's definitions, never to the hooks). [self_lo, self_lo + self_size) is libmpi. */
extern uintptr_t MPII_Pageguard_self_lo, MPII_Pageguard_self_size;
extern atomic_ulong MPII_Pageguard_self_calls;
#define MPII_PAGEGUARD_HOOK_ENTRY()                                                      \
    do {                                                                                \
        if ((uintptr_t) __builtin_return_address(0) - MPII_Pageguard_self_lo <          \
            MPII_Pageguard_self_size)                                                   \
            atomic_fetch_add_explicit(&MPII_Pageguard_self_calls, 1, memory_order_relaxed); \
    } while (0)

/* The hooks, in list order (pageguard_libc_hooks.c, generated) */
extern void *const MPII_Pageguard_hooks[MPII_LIBC_COUNT];

/* The hooks written by hand, with the C library's signatures */
void MPII_Pageguard_hook_free(void *ptr);
void *MPII_Pageguard_hook_realloc(void *ptr, size_t size);
void *MPII_Pageguard_hook_reallocarray(void *ptr, size_t nmemb, size_t size);
int MPII_Pageguard_hook_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void (*MPII_Pageguard_hook_signal(int sig, void (*handler) (int))) (int);
int MPII_Pageguard_hook_sigprocmask(int how, const sigset_t * set, sigset_t * old);
int MPII_Pageguard_hook_pthread_sigmask(int how, const sigset_t * set, sigset_t * old);

/* What the generated hooks do before the call, while a region is registered
 * (pageguard_syscalls.c): touch the guarded pages of the memory the kernel is about to read
 * (into = 0) or write (into = 1), so that the fault handler waits for their data. */
void MPII_Pageguard_settle(const void *buf, size_t len, int into);
/* a NUL-terminated name (at most PATH_MAX bytes) */
void MPII_Pageguard_settle_path(const char *path);
/* a NULL-terminated array of strings (argv, envp) */
void MPII_Pageguard_settle_strv(char *const *strv);
/* the buffers of n iovecs (none when n <= 0) */
void MPII_Pageguard_settle_iov(const struct iovec *iov, long long n, int into);
/* the buffers, control data and (into = 1) address of a message */
void MPII_Pageguard_settle_msg(const struct msghdr *msg, int into);
struct mmsghdr;
void MPII_Pageguard_settle_mmsg(const struct mmsghdr *vec, long long n, int into);
/* the argument of an ioctl request / fcntl command, when it is a pointer */
void MPII_Pageguard_settle_ioctl(unsigned long request, const void *arg);
void MPII_Pageguard_settle_fcntl(int cmd, const void *arg);

/* Lengths: size * n bytes (to the end of the address space on overflow); *len or 0; the bytes
 * of an fd_set the kernel looks at for nfds; n items (0 when n <= 0) */
size_t MPII_Pageguard_stdio_span(const void *ptr, size_t size, size_t n);
size_t MPII_Pageguard_len_at(const socklen_t * len);
size_t MPII_Pageguard_fdset_bytes(int nfds);
size_t MPII_Pageguard_count_bytes(long long n, size_t each);
static inline size_t MPII_Pageguard_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

#endif /* PAGEGUARD_LIBC_H_INCLUDED */
