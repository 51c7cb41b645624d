/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* System calls on guarded buffers. The kernel does not fault on a protected page: read(2) into
 * or write(2) from a buffer whose data has not landed returns EFAULT. So the page guards stand
 * in for the common libc entry points that let the kernel read or write user memory -- read,
 * write, pread(64), pwrite(64), readv, writev, preadv(64), pwritev(64), recv, send, recvfrom,
 * sendto, recvmsg, sendmsg, getrandom, fread, fwrite, and the _FORTIFY_SOURCE variants
 * __read_chk, __pread(64)_chk, __recv_chk, __recvfrom_chk, __fread_chk -- and for mprotect,
 * and while any region is registered they touch the guarded pages of the buffers first (the
 * fault handler waits for the data), then call the process's definition (libc's), so they stay
 * cancellation points. Hooks installed by pageguard_hooks.c; with no region registered they
 * cost one atomic load. Not covered: other system calls, and libraries that issue raw system
 * calls (README.tnbc). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* The kernel will write (into=1) or read (into=0) [buf, buf + len). */
static inline void settle(const void *buf, size_t len, int into)
{
    if (MPIR_Pageguard_any_region() && buf && len)
        MPIR_Pageguard_guarded_pages(buf, len,
                                     into ? MPIR_PAGEGUARD_TOUCH_WRITE : MPIR_PAGEGUARD_TOUCH_READ);
}

/* size * nmemb bytes from ptr, at most to the end of the address space */
static size_t stdio_span(const void *ptr, size_t size, size_t nmemb)
{
    size_t len;
    return __builtin_mul_overflow(size, nmemb, &len) ? SIZE_MAX - (uintptr_t) ptr : len;
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
typedef ssize_t(*recvfrom_fn) (int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t(*sendto_fn) (int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t(*msg_fn) (int, void *, int);
typedef ssize_t(*getrandom_fn) (void *, size_t, unsigned int);
typedef int (*mprotect_fn) (void *, size_t, int);
typedef size_t(*stdio_fn) (void *, size_t, size_t, FILE *);
typedef ssize_t(*read_chk_fn) (int, void *, size_t, size_t);
typedef ssize_t(*pread_chk_fn) (int, void *, size_t, off_t, size_t);
typedef ssize_t(*recv_chk_fn) (int, void *, size_t, size_t, int);
typedef ssize_t(*recvfrom_chk_fn) (int, void *, size_t, size_t, int, struct sockaddr *,
                                   socklen_t *);
typedef size_t(*fread_chk_fn) (void *, size_t, size_t, size_t, FILE *);

ssize_t MPII_Pageguard_hook_read(int fd, void *buf, size_t count)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, count, 1);
    return MPII_LIBC(READ, rw_fn) (fd, buf, count);
}

ssize_t MPII_Pageguard_hook_write(int fd, const void *buf, size_t count)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, count, 0);
    return MPII_LIBC(WRITE, rw_fn) (fd, (void *) buf, count);
}

ssize_t MPII_Pageguard_hook_readv(int fd, const struct iovec *iov, int iovcnt)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle_iov(iov, iovcnt, 1);
    return MPII_LIBC(READV, rwv_fn) (fd, iov, iovcnt);
}

ssize_t MPII_Pageguard_hook_writev(int fd, const struct iovec *iov, int iovcnt)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle_iov(iov, iovcnt, 0);
    return MPII_LIBC(WRITEV, rwv_fn) (fd, iov, iovcnt);
}

/* LP64: pread and pread64 (and the others) are the same call, with one off_t */
ssize_t MPII_Pageguard_hook_pread64(int fd, void *buf, size_t count, off_t off)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, count, 1);
    return MPII_LIBC(PREAD64, prw_fn) (fd, buf, count, off);
}

ssize_t MPII_Pageguard_hook_pwrite64(int fd, const void *buf, size_t count, off_t off)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, count, 0);
    return MPII_LIBC(PWRITE64, prw_fn) (fd, (void *) buf, count, off);
}

ssize_t MPII_Pageguard_hook_preadv64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle_iov(iov, iovcnt, 1);
    return MPII_LIBC(PREADV64, prwv_fn) (fd, iov, iovcnt, off);
}

ssize_t MPII_Pageguard_hook_pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle_iov(iov, iovcnt, 0);
    return MPII_LIBC(PWRITEV64, prwv_fn) (fd, iov, iovcnt, off);
}

ssize_t MPII_Pageguard_hook_recv(int fd, void *buf, size_t len, int flags)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len, 1);
    return MPII_LIBC(RECV, sr_fn) (fd, buf, len, flags);
}

ssize_t MPII_Pageguard_hook_send(int fd, const void *buf, size_t len, int flags)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len, 0);
    return MPII_LIBC(SEND, sr_fn) (fd, (void *) buf, len, flags);
}

ssize_t MPII_Pageguard_hook_recvfrom(int fd, void *buf, size_t len, int flags,
                                     struct sockaddr *src, socklen_t * alen)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len, 1);
    return MPII_LIBC(RECVFROM, recvfrom_fn) (fd, buf, len, flags, src, alen);
}

ssize_t MPII_Pageguard_hook_sendto(int fd, const void *buf, size_t len, int flags,
                                   const struct sockaddr *dst, socklen_t alen)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len, 0);
    return MPII_LIBC(SENDTO, sendto_fn) (fd, buf, len, flags, dst, alen);
}

ssize_t MPII_Pageguard_hook_recvmsg(int fd, struct msghdr *msg, int flags)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle_msg(msg, 1);
    return MPII_LIBC(RECVMSG, msg_fn) (fd, msg, flags);
}

ssize_t MPII_Pageguard_hook_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle_msg(msg, 0);
    return MPII_LIBC(SENDMSG, msg_fn) (fd, (void *) msg, flags);
}

/* A program that changes the protection of a buffer still in flight: its data lands first,
 * so that the program reads what was sent, and its protection is the last word (a page the
 * guards released is never protected by them again). */
int MPII_Pageguard_hook_mprotect(void *addr, size_t len, int prot)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(addr, len, 1);
    return MPII_LIBC(MPROTECT, mprotect_fn) (addr, len, prot);
}

ssize_t MPII_Pageguard_hook_getrandom(void *buf, size_t len, unsigned int flags)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len, 1);
    return MPII_LIBC(GETRANDOM, getrandom_fn) (buf, len, flags);
}

/* stdio reads and writes large blocks straight between the kernel and the user buffer */
size_t MPII_Pageguard_hook_fread(void *ptr, size_t size, size_t nmemb, FILE * stream)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(ptr, stdio_span(ptr, size, nmemb), 1);
    return MPII_LIBC(FREAD, stdio_fn) (ptr, size, nmemb, stream);
}

size_t MPII_Pageguard_hook_fwrite(const void *ptr, size_t size, size_t nmemb, FILE * stream)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(ptr, stdio_span(ptr, size, nmemb), 0);
    return MPII_LIBC(FWRITE, stdio_fn) ((void *) ptr, size, nmemb, stream);
}

/* _FORTIFY_SOURCE builds call these instead (buflen: the object's size, checked by libc) */
ssize_t MPII_Pageguard_hook_read_chk(int fd, void *buf, size_t count, size_t buflen)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, count < buflen ? count : buflen, 1);
    return MPII_LIBC(READ_CHK, read_chk_fn) (fd, buf, count, buflen);
}

ssize_t MPII_Pageguard_hook_pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, count < buflen ? count : buflen, 1);
    return MPII_LIBC(PREAD64_CHK, pread_chk_fn) (fd, buf, count, off, buflen);
}

ssize_t MPII_Pageguard_hook_recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len < buflen ? len : buflen, 1);
    return MPII_LIBC(RECV_CHK, recv_chk_fn) (fd, buf, len, buflen, flags);
}

ssize_t MPII_Pageguard_hook_recvfrom_chk(int fd, void *buf, size_t len, size_t buflen,
                                         int flags, struct sockaddr *src, socklen_t * alen)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    settle(buf, len < buflen ? len : buflen, 1);
    return MPII_LIBC(RECVFROM_CHK, recvfrom_chk_fn) (fd, buf, len, buflen, flags, src, alen);
}

size_t MPII_Pageguard_hook_fread_chk(void *ptr, size_t ptrlen, size_t size, size_t nmemb,
                                     FILE * stream)
{
    MPII_PAGEGUARD_HOOK_ENTRY();
    size_t len = stdio_span(ptr, size, nmemb);
    settle(ptr, len < ptrlen ? len : ptrlen, 1);
    return MPII_LIBC(FREAD_CHK, fread_chk_fn) (ptr, ptrlen, size, nmemb, stream);
}
