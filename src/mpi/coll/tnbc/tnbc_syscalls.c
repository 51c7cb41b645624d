/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* System calls on guarded buffers, and buffers that go away.
 *
 * The kernel does not fault on a protected page: read(2) into or write(2) from a buffer whose
 * data has not landed returns EFAULT. libmpi therefore defines the common libc I/O entry points
 * (read, write, pread, pwrite, readv, writev, recv, send, recvfrom, sendto, fread, fwrite): when
 * a collective is in flight they touch the guarded pages of the buffer first -- the page-guard
 * handler waits for the data -- then make the real call. With nothing in flight they go
 * straight to the system call. Not covered (README.tnbc): other system calls (e.g. sendmsg,
 * io_uring, aio) and libraries that issue raw syscalls on their own.
 *
 * A buffer freed before its data arrived must not receive that data after its pages were
 * unmapped and perhaps mapped again for someone else: UCX's memory events (libucm, already
 * loaded with UCX; src/mpid/ch4/netmod/ucx/ucx_tnbc.c) tell the engine before memory is
 * unmapped. Receive pages in the range are forgotten (their data is dropped), which neither
 * waits nor allocates: the event may come from inside malloc with its lock held (a heap trim),
 * where waiting for the progress engine -- which allocates -- would deadlock. A send buffer's
 * pages must be read until its data has left, so the event waits for them; that is safe only where
 * no allocator lock is held, so T-NBC fixes glibc's mmap threshold (send-guarded buffers are
 * larger: free() unmaps them outside the allocator's lock) and, when send guards may be smaller
 * than it, turns off heap trimming (README.tnbc). Memory that free() keeps in the heap stays
 * guarded; its next user waits for the data like any reader, so nothing lands in memory someone
 * else has already written. */

#include "mpiimpl.h"
#include "tnbc_impl.h"

#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* libmpi is built with -fvisibility=hidden; these must be seen by the application */
#define MPII_TNBC_EXPORT __attribute__ ((visibility("default")))

static inline int in_flight(void)
{
    return __atomic_load_n(&MPIR_Tnbc_ops_in_flight, __ATOMIC_RELAXED) != 0;
}

/* The kernel will write (into=1) or read (into=0) [buf, buf + len). */
static inline void settle_io(const void *buf, size_t len, int into)
{
    if (in_flight() && buf && len)
        MPIR_Pageguard_guarded_pages(buf, len,
                                     into ? MPIR_PAGEGUARD_TOUCH_WRITE : MPIR_PAGEGUARD_TOUCH_READ);
}

static void settle_iov(const struct iovec *iov, int iovcnt, int into)
{
    if (!in_flight() || !iov)
        return;
    for (int i = 0; i < iovcnt; i++)
        settle_io(iov[i].iov_base, iov[i].iov_len, into);
}

MPII_TNBC_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    settle_io(buf, count, 1);
    return syscall(SYS_read, fd, buf, count);
}

MPII_TNBC_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
    settle_io(buf, count, 0);
    return syscall(SYS_write, fd, buf, count);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* 64-bit: pread and pread64 are the same call. Named through asm labels because the headers
 * may already map pread to pread64 (_FILE_OFFSET_BITS=64). */
ssize_t MPII_Tnbc_pread(int fd, void *buf, size_t count, int64_t offset) __asm__("pread");
ssize_t MPII_Tnbc_pread64(int fd, void *buf, size_t count, int64_t offset) __asm__("pread64");
ssize_t MPII_Tnbc_pwrite(int fd, const void *buf, size_t count, int64_t offset)
    __asm__("pwrite");
ssize_t MPII_Tnbc_pwrite64(int fd, const void *buf, size_t count, int64_t offset)
    __asm__("pwrite64");

MPII_TNBC_EXPORT ssize_t MPII_Tnbc_pread(int fd, void *buf, size_t count, int64_t offset)
{
    settle_io(buf, count, 1);
    return syscall(SYS_pread64, fd, buf, count, offset);
}

MPII_TNBC_EXPORT ssize_t MPII_Tnbc_pread64(int fd, void *buf, size_t count, int64_t offset)
{
    return MPII_Tnbc_pread(fd, buf, count, offset);
}

MPII_TNBC_EXPORT ssize_t MPII_Tnbc_pwrite(int fd, const void *buf, size_t count, int64_t offset)
{
    settle_io(buf, count, 0);
    return syscall(SYS_pwrite64, fd, buf, count, offset);
}

MPII_TNBC_EXPORT
ssize_t MPII_Tnbc_pwrite64(int fd, const void *buf, size_t count, int64_t offset)
{
    return MPII_Tnbc_pwrite(fd, buf, count, offset);
}
#endif

MPII_TNBC_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    settle_iov(iov, iovcnt, 1);
    return syscall(SYS_readv, fd, iov, iovcnt);
}

MPII_TNBC_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    settle_iov(iov, iovcnt, 0);
    return syscall(SYS_writev, fd, iov, iovcnt);
}

MPII_TNBC_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    settle_io(buf, len, 1);
    return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

MPII_TNBC_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    settle_io(buf, len, 0);
    return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

MPII_TNBC_EXPORT
ssize_t recvfrom(int fd, void *buf, size_t len, int flags, __SOCKADDR_ARG src, socklen_t * alen)
{
    settle_io(buf, len, 1);
    return syscall(SYS_recvfrom, fd, buf, len, flags, src, alen);
}

MPII_TNBC_EXPORT
ssize_t sendto(int fd, const void *buf, size_t len, int flags, __CONST_SOCKADDR_ARG dst,
               socklen_t alen)
{
    settle_io(buf, len, 0);
    return syscall(SYS_sendto, fd, buf, len, flags, dst, alen);
}

/* stdio reads and writes large blocks straight between the kernel and the user buffer */
MPII_TNBC_EXPORT size_t fread(void *ptr, size_t size, size_t nmemb, FILE * stream)
{
    static size_t(*real) (void *, size_t, size_t, FILE *);
    if (!real)
        real = (size_t(*)(void *, size_t, size_t, FILE *)) dlsym(RTLD_NEXT, "fread");
    settle_io(ptr, size * nmemb, 1);
    return real(ptr, size, nmemb, stream);
}

MPII_TNBC_EXPORT size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE * stream)
{
    static size_t(*real) (const void *, size_t, size_t, FILE *);
    if (!real)
        real = (size_t(*)(const void *, size_t, size_t, FILE *)) dlsym(RTLD_NEXT, "fwrite");
    settle_io(ptr, size * nmemb, 0);
    return real(ptr, size, nmemb, stream);
}

/* glibc's default mmap threshold of free()d chunks */
#define MPII_TNBC_MMAP_THRESHOLD (128 * 1024)

void MPII_Tnbc_tune_malloc(void)
{
#ifdef M_MMAP_THRESHOLD
    /* Send-guarded buffers (> MPIR_CVAR_TNBC_SEND_COPY_MAX) must be unmapped by free() outside
     * the allocator's lock: keep them mmap'd chunks (a fixed threshold; glibc's dynamic one
     * would move them into the heap), and never trim the heap if guards can be smaller. */
    mallopt(M_MMAP_THRESHOLD, MPII_TNBC_MMAP_THRESHOLD);
    if (MPIR_CVAR_TNBC_SEND_COPY_MAX < MPII_TNBC_MMAP_THRESHOLD)
        mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}
