/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The C library functions the page guards stand in for while T-NBC is on, and the
 * definitions their stand-ins (hooks) call. libmpi defines none of these names: the hooks are
 * ordinary hidden functions (pageguard_alloc.c, pageguard_signal.c, pageguard_syscalls.c) that
 * pageguard_hooks.c puts into the other objects' GOT slots, and the definitions are looked up
 * before that (pageguard_libc.c). LP64 only (pread and pread64 are one call there). */

#ifndef PAGEGUARD_LIBC_H_INCLUDED
#define PAGEGUARD_LIBC_H_INCLUDED

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* X(index, the name programs call, the hook's name) */
#define MPII_PAGEGUARD_LIBC_FUNCS(X)                                    \
    X(FREE, free, free)                                                 \
    X(REALLOC, realloc, realloc)                                        \
    X(REALLOCARRAY, reallocarray, reallocarray)                         \
    X(SIGACTION, sigaction, sigaction)                                  \
    X(SIGNAL, signal, signal)                                           \
    X(SIGPROCMASK, sigprocmask, sigprocmask)                            \
    X(PTHREAD_SIGMASK, pthread_sigmask, pthread_sigmask)                \
    X(READ, read, read)                                                 \
    X(WRITE, write, write)                                              \
    X(PREAD, pread, pread64)                                            \
    X(PREAD64, pread64, pread64)                                        \
    X(PWRITE, pwrite, pwrite64)                                         \
    X(PWRITE64, pwrite64, pwrite64)                                     \
    X(READV, readv, readv)                                              \
    X(WRITEV, writev, writev)                                           \
    X(PREADV, preadv, preadv64)                                         \
    X(PREADV64, preadv64, preadv64)                                     \
    X(PWRITEV, pwritev, pwritev64)                                      \
    X(PWRITEV64, pwritev64, pwritev64)                                  \
    X(RECV, recv, recv)                                                 \
    X(SEND, send, send)                                                 \
    X(RECVFROM, recvfrom, recvfrom)                                     \
    X(SENDTO, sendto, sendto)                                           \
    X(RECVMSG, recvmsg, recvmsg)                                        \
    X(SENDMSG, sendmsg, sendmsg)                                        \
    X(GETRANDOM, getrandom, getrandom)                                  \
    X(MPROTECT, mprotect, mprotect)                                     \
    X(FREAD, fread, fread)                                              \
    X(FWRITE, fwrite, fwrite)                                           \
    X(READ_CHK, __read_chk, read_chk)                                   \
    X(PREAD_CHK, __pread_chk, pread_chk)                                \
    X(PREAD64_CHK, __pread64_chk, pread_chk)                            \
    X(RECV_CHK, __recv_chk, recv_chk)                                   \
    X(RECVFROM_CHK, __recvfrom_chk, recvfrom_chk)                       \
    X(FREAD_CHK, __fread_chk, fread_chk)

typedef enum {
#define MPII_PAGEGUARD_LIBC_INDEX(id_, name_, hook_) MPII_LIBC_##id_,
    MPII_PAGEGUARD_LIBC_FUNCS(MPII_PAGEGUARD_LIBC_INDEX)
#undef MPII_PAGEGUARD_LIBC_INDEX
        MPII_LIBC_COUNT
} MPII_Pageguard_libc_id_t;

typedef struct {
    const char *name[MPII_LIBC_COUNT];
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

/* The hooks, with the C library's signatures (pread, pwrite, preadv and pwritev share the
 * 64-bit ones; __pread_chk and __pread64_chk share one) */
void MPII_Pageguard_hook_free(void *ptr);
void *MPII_Pageguard_hook_realloc(void *ptr, size_t size);
void *MPII_Pageguard_hook_reallocarray(void *ptr, size_t nmemb, size_t size);
int MPII_Pageguard_hook_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void (*MPII_Pageguard_hook_signal(int sig, void (*handler) (int))) (int);
int MPII_Pageguard_hook_sigprocmask(int how, const sigset_t * set, sigset_t * old);
int MPII_Pageguard_hook_pthread_sigmask(int how, const sigset_t * set, sigset_t * old);
ssize_t MPII_Pageguard_hook_read(int fd, void *buf, size_t count);
ssize_t MPII_Pageguard_hook_write(int fd, const void *buf, size_t count);
ssize_t MPII_Pageguard_hook_pread64(int fd, void *buf, size_t count, off_t off);
ssize_t MPII_Pageguard_hook_pwrite64(int fd, const void *buf, size_t count, off_t off);
ssize_t MPII_Pageguard_hook_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t MPII_Pageguard_hook_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t MPII_Pageguard_hook_preadv64(int fd, const struct iovec *iov, int iovcnt, off_t off);
ssize_t MPII_Pageguard_hook_pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t off);
ssize_t MPII_Pageguard_hook_recv(int fd, void *buf, size_t len, int flags);
ssize_t MPII_Pageguard_hook_send(int fd, const void *buf, size_t len, int flags);
ssize_t MPII_Pageguard_hook_recvfrom(int fd, void *buf, size_t len, int flags,
                                     struct sockaddr *src, socklen_t * alen);
ssize_t MPII_Pageguard_hook_sendto(int fd, const void *buf, size_t len, int flags,
                                   const struct sockaddr *dst, socklen_t alen);
ssize_t MPII_Pageguard_hook_recvmsg(int fd, struct msghdr *msg, int flags);
ssize_t MPII_Pageguard_hook_sendmsg(int fd, const struct msghdr *msg, int flags);
ssize_t MPII_Pageguard_hook_getrandom(void *buf, size_t len, unsigned int flags);
int MPII_Pageguard_hook_mprotect(void *addr, size_t len, int prot);
size_t MPII_Pageguard_hook_fread(void *ptr, size_t size, size_t nmemb, FILE * stream);
size_t MPII_Pageguard_hook_fwrite(const void *ptr, size_t size, size_t nmemb, FILE * stream);
ssize_t MPII_Pageguard_hook_read_chk(int fd, void *buf, size_t count, size_t buflen);
ssize_t MPII_Pageguard_hook_pread_chk(int fd, void *buf, size_t count, off_t off,
                                      size_t buflen);
ssize_t MPII_Pageguard_hook_recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t MPII_Pageguard_hook_recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
                                         int flags, struct sockaddr *src, socklen_t * alen);
size_t MPII_Pageguard_hook_fread_chk(void *ptr, size_t ptrlen, size_t size, size_t nmemb,
                                     FILE * stream);

#endif /* PAGEGUARD_LIBC_H_INCLUDED */
