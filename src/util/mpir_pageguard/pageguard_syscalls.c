/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* System calls on guarded buffers. The kernel does not fault on a protected page: read(2) into
 * or write(2) from a buffer whose data has not landed returns EFAULT. So libmpi defines the
 * common libc entry points that let the kernel read or write user memory -- read, write,
 * pread(64), pwrite(64), readv, writev, preadv(64), pwritev(64), recv, send, recvfrom, sendto,
 * recvmsg, sendmsg, getrandom, fread, fwrite, and the _FORTIFY_SOURCE variants __read_chk,
 * __pread(64)_chk, __recv_chk, __recvfrom_chk, __fread_chk -- and while any region is
 * registered they touch the guarded pages of the buffers first (the fault handler waits for
 * the data), then call the next definition (libc's), so they stay cancellation points. With no
 * region registered they cost one atomic load. Not covered: other system calls, and libraries
 * that issue raw system calls (README.tnbc). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* The next definitions (libc's, pageguard_libc.c), looked up before the program's threads start
 * (dlsym is not async-signal-safe, and read and write are), or at first use by an earlier
 * constructor. */
enum {
    NEXT_READ,
    NEXT_WRITE,
    NEXT_PREAD64,
    NEXT_PWRITE64,
    NEXT_READV,
    NEXT_WRITEV,
    NEXT_PREADV64,
    NEXT_PWRITEV64,
    NEXT_RECV,
    NEXT_SEND,
    NEXT_RECVFROM,
    NEXT_SENDTO,
    NEXT_RECVMSG,
    NEXT_SENDMSG,
    NEXT_GETRANDOM,
    NEXT_FREAD,
    NEXT_FWRITE,
    NEXT_READ_CHK,
    NEXT_PREAD_CHK,
    NEXT_PREAD64_CHK,
    NEXT_RECV_CHK,
    NEXT_RECVFROM_CHK,
    NEXT_FREAD_CHK,
    NEXT_COUNT
};

static const char *const next_name[NEXT_COUNT] = {
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv64",
    "pwritev64",
    "recv",
    "send",
    "recvfrom",
    "sendto",
    "recvmsg",
    "sendmsg",
    "getrandom",
    "fread",
    "fwrite",
    "__read_chk",
    "__pread_chk",
    "__pread64_chk",
    "__recv_chk",
    "__recvfrom_chk",
    "__fread_chk",
};

static void *libc_io[NEXT_COUNT];
static int libc_io_resolved;    /* a function libc lacks stays NULL, looked up once */

__attribute__ ((constructor))
static void resolve_libc_io(void)
{
    for (int i = 0; i < NEXT_COUNT; i++)
        libc_io[i] = MPII_Pageguard_next_definition(next_name[i]);
    libc_io_resolved = 1;
}

/* Libraries loaded before libmpi may call these from their own constructors, before ours. */
static inline void *next_of(int i)
{
    if (!libc_io_resolved)
        resolve_libc_io();
    return libc_io[i];
}

/* Return what the next definition of function i returns, or fail with ENOSYS where libc has
 * none (a return statement: the wrapper ends here). */
#define MPII_CALL_NEXT_OR(i_, type_, failed_, ...)                              \
    do {                                                                        \
        void *next_ = next_of(i_);                                              \
        if (!next_) {                                                           \
            errno = ENOSYS;                                                     \
            return failed_;                                                     \
        }                                                                       \
        return ((type_) next_)(__VA_ARGS__);                                    \
    } while (0)
#define MPII_CALL_NEXT(i_, type_, ...) MPII_CALL_NEXT_OR(i_, type_, -1, __VA_ARGS__)

/* The kernel will write (into=1) or read (into=0) [buf, buf + len). */
static inline void settle(const void *buf, size_t len, int into)
{
    if (MPIR_Pageguard_any_region() && buf && len)
        MPIR_Pageguard_guarded_pages(buf, len,
                                     into ? MPIR_PAGEGUARD_TOUCH_WRITE : MPIR_PAGEGUARD_TOUCH_READ);
}

static void settle_iov(const struct iovec *iov, int iovcnt, int into)
{
    if (!MPIR_Pageguard_any_region() || !iov)
        return;
    for (int i = 0; i < iovcnt; i++)
        settle(iov[i].iov_base, iov[i].iov_len, into);
}

static void settle_msg(const struct msghdr *msg, int into)
{
    if (!MPIR_Pageguard_any_region() || !msg)
        return;
    settle_iov(msg->msg_iov, (int) msg->msg_iovlen, into);
    settle(msg->msg_control, msg->msg_controllen, into);
    if (into)
        settle(msg->msg_name, msg->msg_namelen, into);
}

typedef ssize_t(*rw_fn) (int, void *, size_t);
typedef ssize_t(*prw_fn) (int, void *, size_t, off_t);
typedef ssize_t(*rwv_fn) (int, const struct iovec *, int);
typedef ssize_t(*prwv_fn) (int, const struct iovec *, int, off_t);
typedef ssize_t(*sr_fn) (int, void *, size_t, int);
typedef ssize_t(*srto_fn) (int, void *, size_t, int, void *, socklen_t *);
typedef ssize_t(*msg_fn) (int, void *, int);
typedef size_t(*stdio_fn) (void *, size_t, size_t, FILE *);

MPII_PAGEGUARD_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    settle(buf, count, 1);
    MPII_CALL_NEXT(NEXT_READ, rw_fn, fd, buf, count);
}

MPII_PAGEGUARD_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
    settle(buf, count, 0);
    MPII_CALL_NEXT(NEXT_WRITE, rw_fn, fd, (void *) buf, count);
}

MPII_PAGEGUARD_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    settle_iov(iov, iovcnt, 1);
    MPII_CALL_NEXT(NEXT_READV, rwv_fn, fd, iov, iovcnt);
}

MPII_PAGEGUARD_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    settle_iov(iov, iovcnt, 0);
    MPII_CALL_NEXT(NEXT_WRITEV, rwv_fn, fd, iov, iovcnt);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* LP64: pread and pread64 (and the others) are the same call (one off_t). Named through asm labels
 * because the headers may already map pread to pread64 (_FILE_OFFSET_BITS=64). */
ssize_t MPII_Pageguard_pread(int, void *, size_t, off_t) __asm__("pread");
ssize_t MPII_Pageguard_pread64(int, void *, size_t, off_t) __asm__("pread64");
ssize_t MPII_Pageguard_pwrite(int, const void *, size_t, off_t) __asm__("pwrite");
ssize_t MPII_Pageguard_pwrite64(int, const void *, size_t, off_t) __asm__("pwrite64");
ssize_t MPII_Pageguard_preadv(int, const struct iovec *, int, off_t) __asm__("preadv");
ssize_t MPII_Pageguard_preadv64(int, const struct iovec *, int, off_t) __asm__("preadv64");
ssize_t MPII_Pageguard_pwritev(int, const struct iovec *, int, off_t) __asm__("pwritev");
ssize_t MPII_Pageguard_pwritev64(int, const struct iovec *, int, off_t) __asm__("pwritev64");

MPII_PAGEGUARD_EXPORT ssize_t MPII_Pageguard_pread(int fd, void *buf, size_t count, off_t off)
{
    settle(buf, count, 1);
    MPII_CALL_NEXT(NEXT_PREAD64, prw_fn, fd, buf, count, off);
}

MPII_PAGEGUARD_EXPORT ssize_t MPII_Pageguard_pread64(int fd, void *buf, size_t count, off_t off)
{
    return MPII_Pageguard_pread(fd, buf, count, off);
}

MPII_PAGEGUARD_EXPORT
ssize_t MPII_Pageguard_pwrite(int fd, const void *buf, size_t count, off_t off)
{
    settle(buf, count, 0);
    MPII_CALL_NEXT(NEXT_PWRITE64, prw_fn, fd, (void *) buf, count, off);
}

MPII_PAGEGUARD_EXPORT
ssize_t MPII_Pageguard_pwrite64(int fd, const void *buf, size_t count, off_t off)
{
    return MPII_Pageguard_pwrite(fd, buf, count, off);
}

MPII_PAGEGUARD_EXPORT
ssize_t MPII_Pageguard_preadv(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    settle_iov(iov, iovcnt, 1);
    MPII_CALL_NEXT(NEXT_PREADV64, prwv_fn, fd, iov, iovcnt, off);
}

MPII_PAGEGUARD_EXPORT
ssize_t MPII_Pageguard_preadv64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    return MPII_Pageguard_preadv(fd, iov, iovcnt, off);
}

MPII_PAGEGUARD_EXPORT
ssize_t MPII_Pageguard_pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    settle_iov(iov, iovcnt, 0);
    MPII_CALL_NEXT(NEXT_PWRITEV64, prwv_fn, fd, iov, iovcnt, off);
}

MPII_PAGEGUARD_EXPORT
ssize_t MPII_Pageguard_pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    return MPII_Pageguard_pwritev(fd, iov, iovcnt, off);
}
#endif

MPII_PAGEGUARD_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    settle(buf, len, 1);
    MPII_CALL_NEXT(NEXT_RECV, sr_fn, fd, buf, len, flags);
}

MPII_PAGEGUARD_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    settle(buf, len, 0);
    MPII_CALL_NEXT(NEXT_SEND, sr_fn, fd, (void *) buf, len, flags);
}

MPII_PAGEGUARD_EXPORT
ssize_t recvfrom(int fd, void *buf, size_t len, int flags, __SOCKADDR_ARG src, socklen_t * alen)
{
    settle(buf, len, 1);
    MPII_CALL_NEXT(NEXT_RECVFROM, srto_fn, fd, buf, len, flags, (void *) src.__sockaddr__,
                   alen);
}

MPII_PAGEGUARD_EXPORT
ssize_t sendto(int fd, const void *buf, size_t len, int flags, __CONST_SOCKADDR_ARG dst,
               socklen_t alen)
{
    typedef ssize_t(*sendto_fn) (int, const void *, size_t, int, const void *, socklen_t);
    settle(buf, len, 0);
    MPII_CALL_NEXT(NEXT_SENDTO, sendto_fn, fd, buf, len, flags,
                   (const void *) dst.__sockaddr__, alen);
}

MPII_PAGEGUARD_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    settle_msg(msg, 1);
    MPII_CALL_NEXT(NEXT_RECVMSG, msg_fn, fd, msg, flags);
}

MPII_PAGEGUARD_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    settle_msg(msg, 0);
    MPII_CALL_NEXT(NEXT_SENDMSG, msg_fn, fd, (void *) msg, flags);
}

MPII_PAGEGUARD_EXPORT ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    typedef ssize_t(*getrandom_fn) (void *, size_t, unsigned int);
    settle(buf, len, 1);
    MPII_CALL_NEXT(NEXT_GETRANDOM, getrandom_fn, buf, len, flags);
}

/* stdio reads and writes large blocks straight between the kernel and the user buffer */
MPII_PAGEGUARD_EXPORT size_t fread(void *ptr, size_t size, size_t nmemb, FILE * stream)
{
    settle(ptr, size * nmemb, 1);
    MPII_CALL_NEXT_OR(NEXT_FREAD, stdio_fn, 0, ptr, size, nmemb, stream);
}

MPII_PAGEGUARD_EXPORT size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE * stream)
{
    settle(ptr, size * nmemb, 0);
    MPII_CALL_NEXT_OR(NEXT_FWRITE, stdio_fn, 0, (void *) ptr, size, nmemb, stream);
}

/* _FORTIFY_SOURCE builds call these instead (buflen: the object's size, checked by libc) */
MPII_PAGEGUARD_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
    typedef ssize_t(*fn) (int, void *, size_t, size_t);
    settle(buf, count < buflen ? count : buflen, 1);
    MPII_CALL_NEXT(NEXT_READ_CHK, fn, fd, buf, count, buflen);
}

MPII_PAGEGUARD_EXPORT
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen)
{
    typedef ssize_t(*fn) (int, void *, size_t, off_t, size_t);
    settle(buf, count < buflen ? count : buflen, 1);
    MPII_CALL_NEXT(NEXT_PREAD_CHK, fn, fd, buf, count, off, buflen);
}

MPII_PAGEGUARD_EXPORT
ssize_t __pread64_chk(int fd, void *buf, size_t count, off_t off, size_t buflen)
{
    typedef ssize_t(*fn) (int, void *, size_t, off_t, size_t);
    settle(buf, count < buflen ? count : buflen, 1);
    MPII_CALL_NEXT(NEXT_PREAD64_CHK, fn, fd, buf, count, off, buflen);
}

MPII_PAGEGUARD_EXPORT
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
    typedef ssize_t(*fn) (int, void *, size_t, size_t, int);
    settle(buf, len < buflen ? len : buflen, 1);
    MPII_CALL_NEXT(NEXT_RECV_CHK, fn, fd, buf, len, buflen, flags);
}

MPII_PAGEGUARD_EXPORT
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, void *src,
                       socklen_t * alen)
{
    typedef ssize_t(*fn) (int, void *, size_t, size_t, int, void *, socklen_t *);
    settle(buf, len < buflen ? len : buflen, 1);
    MPII_CALL_NEXT(NEXT_RECVFROM_CHK, fn, fd, buf, len, buflen, flags, src, alen);
}

MPII_PAGEGUARD_EXPORT
size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t nmemb, FILE * stream)
{
    typedef size_t(*fn) (void *, size_t, size_t, size_t, FILE *);
    settle(ptr, size * nmemb < ptrlen ? size * nmemb : ptrlen, 1);
    MPII_CALL_NEXT_OR(NEXT_FREAD_CHK, fn, 0, ptr, ptrlen, size, nmemb, stream);
}
