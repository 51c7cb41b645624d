/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Unit tests of the hooks generated from src/util/mpir_pageguard/pageguard_libc.def: one test
 * per kind of user memory a C library function hands to the kernel. Each puts its argument in
 * guarded pages whose data lands 30 ms later, first shows that the system call itself fails
 * there (EFAULT), then makes the program's call, which must wait for the data and do what it
 * does on ordinary memory. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpir_pageguard.h"
#include "pageguard_libc.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAND_MS 30

static size_t ps;
static char scratch[64];        /* a file of this test's own: "/tmp/pg_libc.XXXXXX" */

/* npages guarded receive pages holding content (at offset at) once their data lands */
typedef struct {
    char *mem;
    size_t len;
    MPIR_Pageguard_region_t *r;
    pthread_t lander;
} pending_t;

static void *land_later(void *arg)
{
    pending_t *p = arg;
    struct timespec ts = { 0, LAND_MS * 1000000L };
    nanosleep(&ts, NULL);
    ck_assert_int_eq(MPIR_Pageguard_complete(p->r, 0), MPIR_PAGEGUARD_OK);
    return NULL;
}

static void *pending(pending_t * p, size_t npages, size_t at, const void *content, size_t n)
{
    p->len = npages * ps;
    p->mem = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p->mem, MAP_FAILED);
    memset(p->mem, 0x5a, p->len);
    size_t off = 0, len = p->len;
    ck_assert_int_eq(MPIR_Pageguard_register(p->mem, p->len, 1, &off, &len, MPIR_PAGEGUARD_RECV,
                                             0, &p->r), MPIR_PAGEGUARD_OK);
    char *staging = MPIR_Pageguard_staging(p->r);
    memset(staging, 0, p->len);
    memcpy(staging + at, content, n);
    return p->mem + at;
}

/* start the data on its way (after the test showed the kernel refuses the pages) */
static void send_data(pending_t * p)
{
    ck_assert_int_eq(pthread_create(&p->lander, NULL, land_later, p), 0);
}

static void done(pending_t * p)
{
    pthread_join(p->lander, NULL);
    MPIR_Pageguard_unregister(p->r);
    munmap(p->mem, p->len);
}

static void refused(long rc)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(errno, EFAULT);
}

static void setup(void)
{
    ps = (size_t) sysconf(_SC_PAGESIZE);
    ck_assert_int_eq(MPIR_Pageguard_init(NULL), MPIR_PAGEGUARD_OK);
    strcpy(scratch, "/tmp/pg_libc.XXXXXX");
    int fd = mkstemp(scratch);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "0123456789", 10), 10);
    close(fd);
}

static void teardown(void)
{
    unlink(scratch);
    MPIR_Pageguard_finalize();
}

START_TEST(list_matches_the_c_library)
{
    for (int i = 0; i < MPII_LIBC_COUNT; i++) {
        const char *name = MPII_Pageguard_libc.name[i];
        ck_assert_msg(MPIR_Pageguard_hook(name) != NULL, "%s has no hook", name);
        ck_assert_msg(MPII_Pageguard_hooks[i] != NULL, "%s", name);
        if (i > 0)
            ck_assert_msg(strcmp(MPII_Pageguard_libc.name[i - 1], name) < 0, "%s out of order",
                          name);
    }
}
END_TEST

__attribute__ ((noipa))
static void *program_open(void)
{
    return (void *) open;
}

__attribute__ ((noipa))
static void *program_stat(void)
{
    return (void *) stat;
}

START_TEST(program_calls_reach_the_hooks)
{
    ck_assert_ptr_eq(program_open(), MPIR_Pageguard_hook("open"));
    ck_assert_ptr_eq(program_stat(), MPIR_Pageguard_hook("stat"));
    MPIR_Pageguard_hooks_stats_t st;
    MPIR_Pageguard_hooks_get_stats(&st);
    ck_assert_uint_eq(st.foreign, 0);
}
END_TEST

/* A file name received into a buffer, then opened, looked at, renamed and removed; one name
 * runs over a page boundary. */
START_TEST(path)
{
    pending_t p;
    char *name = pending(&p, 2, 0, scratch, strlen(scratch) + 1);
    refused(syscall(SYS_openat, AT_FDCWD, name, O_RDONLY));
    send_data(&p);
    int fd = open(name, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    close(fd);
    done(&p);

    name = pending(&p, 2, ps - 5, scratch, strlen(scratch) + 1);
    refused(syscall(SYS_faccessat, AT_FDCWD, name, F_OK));
    send_data(&p);
    ck_assert_int_eq(access(name, R_OK), 0);
    done(&p);

    FILE *f;
    name = pending(&p, 1, 0, scratch, strlen(scratch) + 1);
    send_data(&p);
    ck_assert_ptr_ne(f = fopen(name, "r"), NULL);
    fclose(f);
    done(&p);

    char dir[80];
    snprintf(dir, sizeof(dir), "%s.d", scratch);
    name = pending(&p, 1, 100, dir, strlen(dir) + 1);
    send_data(&p);
    ck_assert_int_eq(mkdir(name, 0700), 0);
    ck_assert_int_eq(rmdir(name), 0);
    done(&p);

    char both[160];             /* two names in one buffer */
    snprintf(both, sizeof(both), "%s%c%s.new", scratch, 0, scratch);
    size_t first = strlen(scratch) + 1;
    name = pending(&p, 1, 0, both, first + strlen(scratch) + 5);
    send_data(&p);
    ck_assert_int_eq(rename(name, name + first), 0);
    ck_assert_int_eq(unlink(name + first), 0);
    done(&p);
}
END_TEST

/* A structure the kernel fills, in a buffer whose data has not landed: the data lands first,
 * then the kernel's answer is written over it. */
START_TEST(structure_filled)
{
    pending_t p;
    char text[] = "landed";
    struct stat *st = (struct stat *) pending(&p, 1, 256, text, sizeof(text));
    refused(syscall(SYS_newfstatat, AT_FDCWD, scratch, st, 0));
    send_data(&p);
    ck_assert_int_eq(stat(scratch, st), 0);
    ck_assert_int_eq(st->st_size, 10);
    ck_assert_int_eq(p.mem[0], 0);      /* landed data around it */
    done(&p);

    struct utsname *u = (struct utsname *) pending(&p, 1, 0, text, sizeof(text));
    send_data(&p);
    ck_assert_int_eq(uname(u), 0);
    ck_assert_str_eq(u->sysname, "Linux");
    done(&p);

    int *fds = (int *) pending(&p, 1, 0, text, sizeof(text));
    send_data(&p);
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], "x", 1), 1);
    close(fds[0]);
    close(fds[1]);
    done(&p);
}
END_TEST

/* A structure the kernel reads (and writes back): poll's array, fcntl's lock */
START_TEST(structure_read)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], "x", 1), 1);
    pending_t p;
    struct pollfd want = {.fd = fds[0],.events = POLLIN };
    struct pollfd *pfd = pending(&p, 1, 0, &want, sizeof(want));
    refused(syscall(SYS_poll, pfd, 1, 0));
    send_data(&p);
    ck_assert_int_eq(poll(pfd, 1, 0), 1);
    ck_assert(pfd->revents & POLLIN);
    done(&p);
    close(fds[0]);
    close(fds[1]);

    int fd = open(scratch, O_RDWR);
    struct flock lock = {.l_type = F_WRLCK,.l_whence = SEEK_SET };
    struct flock *lk = pending(&p, 1, 8, &lock, sizeof(lock));
    refused(syscall(SYS_fcntl, fd, F_GETLK, lk));
    send_data(&p);
    ck_assert_int_eq(fcntl(fd, F_GETLK, lk), 0);
    ck_assert_int_eq(lk->l_type, F_UNLCK);      /* nobody else holds it */
    done(&p);

    int *count = pending(&p, 1, 0, &lock, 4);
    refused(syscall(SYS_ioctl, fd, FIONREAD, count));
    send_data(&p);
    ck_assert_int_eq(ioctl(fd, FIONREAD, count), 0);
    ck_assert_int_eq(*count, 10);
    done(&p);
    close(fd);
}
END_TEST

/* The *v2 and _unlocked forms: a received block written to a file and read back into another
 * pending block */
START_TEST(iovec_and_stdio_forms)
{
    char block[4096];
    for (size_t i = 0; i < sizeof(block); i++)
        block[i] = (char) (i * 13 + 1);
    int fd = open(scratch, O_RDWR | O_TRUNC);
    pending_t p;
    char *data = pending(&p, 2, 100, block, sizeof(block));
    struct iovec iov = { data, sizeof(block) };
    refused(syscall(SYS_pwritev2, fd, &iov, 1, 0, 0, 0));
    send_data(&p);
    ck_assert_int_eq(pwritev2(fd, &iov, 1, 0, 0), (ssize_t) sizeof(block));
    done(&p);

    char zero[16] = { 0 };
    data = pending(&p, 2, 50, zero, sizeof(zero));
    iov.iov_base = data;
    refused(syscall(SYS_preadv2, fd, &iov, 1, 0, 0, 0));
    send_data(&p);
    ck_assert_int_eq(preadv2(fd, &iov, 1, 0, 0), (ssize_t) sizeof(block));
    ck_assert_int_eq(memcmp(data, block, sizeof(block)), 0);
    done(&p);
    close(fd);

    /* 2 pages: stdio hands a request of a buffer or more straight to the kernel */
    FILE *f = fopen(scratch, "w+");
    setvbuf(f, NULL, _IOFBF, 512);
    data = pending(&p, 3, 0, block, sizeof(block));
    send_data(&p);
    ck_assert_uint_eq(fwrite_unlocked(data, 1, 2 * ps, f), 2 * ps);
    done(&p);
    rewind(f);
    data = pending(&p, 3, 0, zero, sizeof(zero));
    send_data(&p);
    ck_assert_uint_eq(fread_unlocked(data, 1, 2 * ps, f), 2 * ps);
    ck_assert_int_eq(memcmp(data, block, sizeof(block)), 0);
    done(&p);
    fclose(f);
}
END_TEST

/* Pages handed to a pipe, to another process's view of this one, or a file offset read from a
 * buffer: vmsplice, process_vm_readv, sendfile */
START_TEST(pipes_and_processes)
{
    char block[256];
    for (size_t i = 0; i < sizeof(block); i++)
        block[i] = (char) (i + 7);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pending_t p;
    char *data = pending(&p, 1, 0, block, sizeof(block));
    struct iovec iov = { data, sizeof(block) };
    refused(syscall(SYS_vmsplice, fds[1], &iov, 1, 0));
    send_data(&p);
    ck_assert_int_eq(vmsplice(fds[1], &iov, 1, 0), (ssize_t) sizeof(block));
    char back[256];
    ck_assert_int_eq(read(fds[0], back, sizeof(back)), (ssize_t) sizeof(back));
    ck_assert_int_eq(memcmp(back, block, sizeof(block)), 0);
    done(&p);

    char copy[256];
    data = pending(&p, 1, 0, block, sizeof(block));
    struct iovec local = { copy, sizeof(copy) }, remote = { data, sizeof(block) };
    ck_assert_int_eq(syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0), -1);
    send_data(&p);
    ck_assert_int_eq(process_vm_readv(getpid(), &local, 1, &remote, 1, 0),
                     (ssize_t) sizeof(block));
    ck_assert_int_eq(memcmp(copy, block, sizeof(block)), 0);
    done(&p);

    off_t start = 4;
    int in = open(scratch, O_RDONLY);
    off_t *offset = pending(&p, 1, 0, &start, sizeof(start));
    refused(syscall(SYS_sendfile, fds[1], in, offset, 3));
    send_data(&p);
    ck_assert_int_eq(sendfile(fds[1], in, offset, 3), 3);
    ck_assert_int_eq(*offset, 7);
    ck_assert_int_eq(read(fds[0], back, 3), 3);
    ck_assert_int_eq(memcmp(back, "456", 3), 0);
    done(&p);
    close(in);
    close(fds[0]);
    close(fds[1]);
}
END_TEST

/* A program run with its name and arguments from a received buffer */
START_TEST(program_arguments)
{
    static const char args[] = "/bin/sh\0-c\0exit 7";
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        pending_t p;
        char *a = pending(&p, 2, ps - 4, args, sizeof(args));
        char *argv[] = { a, a + 8, a + 11, NULL };
        if (syscall(SYS_execve, a, argv, environ) != -1 || errno != EFAULT)
            _exit(98);
        send_data(&p);
        execv(a, argv);
        _exit(99);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 7);
}
END_TEST

/* A structure argument that points nowhere (an iovec array, a msghdr, argv, a length) is the
 * kernel's to refuse with EFAULT, as without the guards, not a crash in the hook that reads
 * it; one that lies in pages still coming is waited for. */
START_TEST(bad_structures_are_refused_by_the_kernel)
{
    int fd = open(scratch, O_RDWR | O_TRUNC), sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    char block[64];
    memset(block, 7, sizeof(block));
    struct iovec iov = { block, sizeof(block) };
    pending_t p;
    /* the iovec array itself straddles two pages still coming; the hooks are on */
    struct iovec *later = pending(&p, 2, ps - 8, &iov, sizeof(iov));
    void *volatile unmapped = (void *) 8;      /* opaque to the compiler's own checks */
    const void *nowhere = unmapped;

    refused(readv(fd, nowhere, 2));
    refused(writev(fd, nowhere, 2));
    refused(sendmsg(sv[0], nowhere, 0));
    refused(recvmsg(sv[1], (struct msghdr *) nowhere, MSG_DONTWAIT));
    struct sockaddr_un addr;
    refused(getsockname(sv[0], (struct sockaddr *) &addr, (socklen_t *) nowhere));
    refused(execv("/bin/sh", (char *const *) nowhere));
    send_data(&p);
    ck_assert_int_eq(writev(fd, later, 1), (ssize_t) sizeof(block));
    done(&p);
    close(sv[0]);
    close(sv[1]);
    close(fd);
}
END_TEST

static Suite *libc_suite(void)
{
    Suite *s = suite_create("pageguard_libc");
    TCase *tc = tcase_create("hooks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, list_matches_the_c_library);
    tcase_add_test(tc, program_calls_reach_the_hooks);
    tcase_add_test(tc, path);
    tcase_add_test(tc, structure_filled);
    tcase_add_test(tc, structure_read);
    tcase_add_test(tc, iovec_and_stdio_forms);
    tcase_add_test(tc, pipes_and_processes);
    tcase_add_test(tc, program_arguments);
    tcase_add_test(tc, bad_structures_are_refused_by_the_kernel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *why = NULL;
    if (MPIR_Pageguard_hooks_install(NULL, &why) != 0) {
        fprintf(stderr, "check_pageguard_libc: hooks not installed: %s\n", why);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(libc_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
