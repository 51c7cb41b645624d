/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* System calls on a receive buffer whose data is still coming (the last rank enters late):
 * preadv, preadv2, recvmsg and getrandom write into it; pwritev2, fwrite_unlocked and vmsplice
 * read from it; open takes a file name from it ("broadcast the input deck, then open the files
 * it names"). They must do what they do on a finished buffer -- full counts, the bytes in
 * place, no EFAULT -- and the rest of the buffer must hold the collective's result. */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include "tnbc_test_late.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair: 4 pages */

static int rank, size, errs;

static void alltoall_late(int *sbuf, int *rbuf)
{
    tnbc_fill(sbuf, COUNT, rank, size);
    tnbc_alltoall_late(sbuf, rbuf, COUNT, rank, size);
}

/* every block but the one overwritten holds the result */
static void check_others(const char *what, const int *rbuf, int overwritten)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; p != overwritten && i < COUNT; i++)
            if (rbuf[p * COUNT + i] != tnbc_value(p, rank, i)) {
                if (errs++ < 5)
                    printf("rank %d %s: from %d int %d is %d\n", rank, what, p, i,
                           rbuf[p * COUNT + i]);
                break;
            }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int late = size - 1;
    size_t block = COUNT * sizeof(int);
    int *sbuf = malloc(size * block), *rbuf = tnbc_page_aligned(size * block);
    char *pattern = malloc(block);
    for (size_t i = 0; i < block; i++)
        pattern[i] = (char) (i * 7 + rank);

    /* preadv: the late block read back from a file, in two pieces */
    char name[] = "/tmp/tnbc_syscalls.XXXXXX";
    int fd = mkstemp(name);
    unlink(name);
    if (fd < 0 || write(fd, pattern, block) != (ssize_t) block) {
        printf("rank %d: no scratch file\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    alltoall_late(sbuf, rbuf);
    char *dst = (char *) (rbuf + late * COUNT);
    struct iovec iov[2] = { {dst, block / 2}, {dst + block / 2, block / 2} };
    ssize_t n = preadv(fd, iov, 2, 0);
    if (n != (ssize_t) block || memcmp(dst, pattern, block) != 0) {
        errs++;
        printf("rank %d preadv: returned %zd\n", rank, n);
    }
    check_others("preadv", rbuf, late);
    close(fd);

    /* recvmsg: the late block from a socket pair */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    alltoall_late(sbuf, rbuf);
    size_t got = 0;
    size_t chunk = 1024;
    for (size_t off = 0; off < block; off += chunk)
        if (write(sv[0], pattern + off, chunk) != (ssize_t) chunk)
            MPI_Abort(MPI_COMM_WORLD, 1);
    while (got < block) {
        struct iovec one = { dst + got, block - got };
        struct msghdr msg;
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = &one;
        msg.msg_iovlen = 1;
        n = recvmsg(sv[1], &msg, 0);
        if (n <= 0)
            break;
        got += (size_t) n;
    }
    if (got != block || memcmp(dst, pattern, block) != 0) {
        errs++;
        printf("rank %d recvmsg: got %zu of %zu\n", rank, got, block);
    }
    check_others("recvmsg", rbuf, late);
    close(sv[0]);
    close(sv[1]);

    /* getrandom: the late block overwritten with random bytes */
    alltoall_late(sbuf, rbuf);
    n = getrandom(dst, block, 0);
    if (n != (ssize_t) block) {
        errs++;
        printf("rank %d getrandom: returned %zd\n", rank, n);
    }
    check_others("getrandom", rbuf, late);

    /* preadv2 of the late block from a file, pwritev2 of it back at another offset */
    fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, pattern, block) != (ssize_t) block)
        MPI_Abort(MPI_COMM_WORLD, 1);
    unlink(name);
    alltoall_late(sbuf, rbuf);
    struct iovec whole = { dst, block };
    n = preadv2(fd, &whole, 1, 0, 0);
    if (n != (ssize_t) block || memcmp(dst, pattern, block) != 0) {
        errs++;
        printf("rank %d preadv2: returned %zd\n", rank, n);
    }
    check_others("preadv2", rbuf, late);
    alltoall_late(sbuf, rbuf);
    n = pwritev2(fd, &whole, 1, block, 0);
    int *back = malloc(block);
    if (n != (ssize_t) block || pread(fd, back, block, block) != (ssize_t) block ||
        memcmp(back, dst, block) != 0) {
        errs++;
        printf("rank %d pwritev2: returned %zd\n", rank, n);
    }
    check_others("pwritev2", rbuf, -1);
    close(fd);

    /* fwrite_unlocked of the whole receive buffer: stdio hands it to the kernel directly */
    alltoall_late(sbuf, rbuf);
    FILE *f = tmpfile();
    size_t put = f ? fwrite_unlocked(rbuf, 1, size * block, f) : 0;
    int *file_copy = malloc(size * block);
    rewind(f);
    if (put != size * block || fread(file_copy, 1, size * block, f) != size * block) {
        errs++;
        printf("rank %d fwrite_unlocked: wrote %zu of %zu\n", rank, put, size * block);
    } else {
        check_others("fwrite_unlocked", file_copy, -1);
    }
    fclose(f);

    /* vmsplice of the late block into a pipe */
    int pfd[2];
    if (pipe(pfd) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    alltoall_late(sbuf, rbuf);
    struct iovec late_block = { dst, block };
    n = vmsplice(pfd[1], &late_block, 1, 0);
    if (n != (ssize_t) block || read(pfd[0], back, block) != (ssize_t) block ||
        memcmp(back, dst, block) != 0) {
        errs++;
        printf("rank %d vmsplice: returned %zd\n", rank, n);
    }
    check_others("vmsplice", rbuf, -1);
    close(pfd[0]);
    close(pfd[1]);

    /* open of a file named in a broadcast (the root, the late rank, made the file) */
    char *deck = (char *) tnbc_page_aligned(2 * 4096);
    memset(deck, 0, 2 * 4096);
    if (rank == late) {
        snprintf(deck, 4096, "/tmp/tnbc_syscalls_deck.%d", (int) getpid());
        FILE *mine = fopen(deck, "w");
        if (!mine || fputs("deck", mine) < 0 || fclose(mine) != 0)
            MPI_Abort(MPI_COMM_WORLD, 1);
        usleep(200 * 1000);
    }
    MPI_Bcast(deck, 2 * 4096, MPI_CHAR, late, MPI_COMM_WORLD);
    fd = open(deck, O_RDONLY);
    char word[4] = { 0 };
    if (fd < 0 || read(fd, word, 4) != 4 || memcmp(word, "deck", 4) != 0) {
        errs++;
        printf("rank %d open of a broadcast name: fd %d, errno %d\n", rank, fd, errno);
    }
    if (fd >= 0)
        close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == late)
        unlink(deck);

    free(deck);
    free(back);
    free(file_copy);
    free(sbuf);
    free(rbuf);
    free(pattern);
    MTest_Finalize(errs);
    return 0;
}
