/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* System calls on guarded buffers. The kernel does not fault on a protected page: read(2) into
 * or write(2) from a buffer whose data has not landed returns EFAULT, open(2) of a name in such
 * a buffer too. So the hooks of the C library functions that hand user memory to the kernel
 * (pageguard_libc.def lists them; maint/gen_pageguard_hooks.py writes their hooks) first touch
 * the guarded pages of that memory with the helpers below -- the fault handler waits for the
 * data -- and then call the process's definition, so they stay cancellation points. With no
 * region registered a hook costs one atomic load. Not covered: functions missing from the list
 * and code that issues raw system calls (README.tnbc). */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* the longest argument string the kernel takes (MAX_ARG_STRLEN) */
#define ARG_STRLEN_MAX (32 * 4096)

void MPII_Pageguard_settle(const void *buf, size_t len, int into)
{
    size_t room = UINTPTR_MAX - (uintptr_t) buf;
    if (buf && len)
        MPIR_Pageguard_guarded_pages(buf, len < room ? len : room,
                                     into ? MPIR_PAGEGUARD_TOUCH_WRITE : MPIR_PAGEGUARD_TOUCH_READ);
}

/* A string the kernel reads up to its NUL or limit bytes. Only a guarded page is known to be
 * readable here (once touched), so the string is followed through guarded pages; from the first
 * other page on, every guarded page up to the limit is waited for, needed or not. */
static void settle_string(const char *s, size_t limit)
{
    uintptr_t at = (uintptr_t) s, end = at + limit < at ? UINTPTR_MAX : at + limit;
    size_t ps = MPII_Pageguard_libc.pagesize;
    if (!s)
        return;
    while (at < end) {
        uintptr_t page_end = (at | (ps - 1)) + 1;
        size_t n = (page_end < end ? page_end : end) - at;
        if (MPIR_Pageguard_guarded_pages((const void *) at, n, MPIR_PAGEGUARD_TOUCH_READ) == 0) {
            MPII_Pageguard_settle((const void *) at, end - at, 0);
            return;
        }
        if (memchr((const void *) at, 0, n))
            return;
        at += n;
    }
}

void MPII_Pageguard_settle_path(const char *path)
{
    settle_string(path, PATH_MAX);
}

/* Copy len bytes of a structure the program handed to the function (an iovec array, a
 * msghdr, argv): a bad argument may point anywhere, and the kernel answers EFAULT for it where
 * a read here would crash the program. Its guarded pages are waited for first. 0, or -1 when
 * it cannot be read (the function itself then says EFAULT). */
static int copy_in(void *dst, const void *src, size_t len)
{
    int saved_errno = errno, rc = 0;
    struct iovec local = { dst, len }, remote = { (void *) src, len };

    MPII_Pageguard_settle(src, len, 0);
    ssize_t got = syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
    if (got < 0 && (errno == ENOSYS || errno == EPERM))
        memcpy(dst, src, len);  /* a sandbox without the call: read it here, as before */
    else if (got != (ssize_t) len)
        rc = -1;
    errno = saved_errno;
    return rc;
}

void MPII_Pageguard_settle_strv(char *const *strv)
{
    char *arg;
    for (; strv && copy_in(&arg, strv, sizeof(arg)) == 0 && arg; strv++)
        settle_string(arg, ARG_STRLEN_MAX);
}

void MPII_Pageguard_settle_iov(const struct iovec *iov, long long n, int into)
{
    struct iovec part[64];
    long long total = n < IOV_MAX ? n : IOV_MAX;        /* the kernel refuses more */
    for (long long i = 0; iov && i < total; i += 64) {
        long long k = total - i < 64 ? total - i : 64;
        if (copy_in(part, iov + i, (size_t) k * sizeof(*part)) != 0)
            return;
        for (long long j = 0; j < k; j++)
            MPII_Pageguard_settle(part[j].iov_base, part[j].iov_len, into);
    }
}

void MPII_Pageguard_settle_msg(const struct msghdr *msg, int into)
{
    struct msghdr m;
    if (!msg || copy_in(&m, msg, sizeof(m)) != 0)
        return;
    MPII_Pageguard_settle_iov(m.msg_iov, (long long) m.msg_iovlen, into);
    MPII_Pageguard_settle(m.msg_control, m.msg_controllen, into);
    MPII_Pageguard_settle(m.msg_name, m.msg_namelen, into);
}

void MPII_Pageguard_settle_mmsg(const struct mmsghdr *vec, long long n, int into)
{
    for (long long i = 0; vec && i < n && i < UIO_MAXIOV; i++)
        MPII_Pageguard_settle_msg(&vec[i].msg_hdr, into);
}

/* A request encodes the size and direction of its argument, except the old ones (terminal and
 * socket requests such as TCGETS, FIONREAD): for those, a page from the argument on (a small
 * integer argument is never inside a region). */
void MPII_Pageguard_settle_ioctl(unsigned long request, const void *arg)
{
    unsigned dir = _IOC_DIR(request);
    size_t size = _IOC_SIZE(request);
    if (dir == _IOC_NONE)
        MPII_Pageguard_settle(arg, MPII_Pageguard_libc.pagesize, 1);
    else if (size)
        MPII_Pageguard_settle(arg, size, (dir & _IOC_READ) != 0);
}

void MPII_Pageguard_settle_fcntl(int cmd, const void *arg)
{
    switch (cmd) {
        case F_GETLK:
        case F_OFD_GETLK:
            MPII_Pageguard_settle(arg, sizeof(struct flock), 1);
            break;
        case F_SETLK:
        case F_SETLKW:
        case F_OFD_SETLK:
        case F_OFD_SETLKW:
            MPII_Pageguard_settle(arg, sizeof(struct flock), 0);
            break;
        case F_GETOWN_EX:
            MPII_Pageguard_settle(arg, sizeof(struct f_owner_ex), 1);
            break;
        case F_SETOWN_EX:
            MPII_Pageguard_settle(arg, sizeof(struct f_owner_ex), 0);
            break;
        case F_GET_RW_HINT:
        case F_GET_FILE_RW_HINT:
            MPII_Pageguard_settle(arg, sizeof(uint64_t), 1);
            break;
        case F_SET_RW_HINT:
        case F_SET_FILE_RW_HINT:
            MPII_Pageguard_settle(arg, sizeof(uint64_t), 0);
            break;
        default:       /* an integer argument, or none */
            break;
    }
}

size_t MPII_Pageguard_stdio_span(const void *ptr, size_t size, size_t n)
{
    size_t len;
    return __builtin_mul_overflow(size, n, &len) ? SIZE_MAX - (uintptr_t) ptr : len;
}

size_t MPII_Pageguard_len_at(const socklen_t * len)
{
    socklen_t n;
    return len && copy_in(&n, len, sizeof(n)) == 0 ? n : 0;
}

size_t MPII_Pageguard_fdset_bytes(int nfds)
{
    /* the kernel reads whole longs */
    size_t bits = sizeof(long) * CHAR_BIT;
    return nfds > 0 ? ((size_t) nfds + bits - 1) / bits * sizeof(long) : 0;
}

size_t MPII_Pageguard_count_bytes(long long n, size_t each)
{
    size_t len;
    return n <= 0 ? 0 : __builtin_mul_overflow((size_t) n, each, &len) ? SIZE_MAX : len;
}
