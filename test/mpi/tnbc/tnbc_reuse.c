/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What applications do right after a blocking collective, on buffers whose data may still be
 * on the way when T-NBC returned early:
 *  - send the received buffer on: next Alltoall's send buffer, and MPI_Sendrecv;
 *  - hand it to the kernel: write(2) to a pipe, read(2) into it, fwrite(3);
 *  - free it unread (large: unmapped; small: back to the heap) and allocate again;
 *  - unaligned buffers;
 *  - many collectives in flight on two communicators before any data is read. */

#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int value(int src, int dst, int i, int round)
{
    return src * 1000003 + dst * 7919 + i + round * 13;
}

static void fill(int *sbuf, int rank, int size, int count, int round)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            sbuf[(size_t) p * count + i] = value(rank, p, i, round);
}

static int verify(const int *rbuf, int rank, int size, int count, int round, const char *what)
{
    int errs = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            if (rbuf[(size_t) p * count + i] != value(p, rank, i, round)) {
                if (errs < 3)
                    fprintf(stderr, "rank %d %s: from %d [%d] got %d expected %d\n", rank, what,
                            p, i, rbuf[(size_t) p * count + i], value(p, rank, i, round));
                errs++;
            }
    return errs;
}

/* received data becomes the next send buffer: round 2 sends what round 1 delivered */
static int chain(MPI_Comm comm, int count)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n = (size_t) size * count;
    int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int)), *c = malloc(n * sizeof(int));
    fill(a, rank, size, count, 1);
    MPI_Alltoall(a, count, MPI_INT, b, count, MPI_INT, comm);
    MPI_Alltoall(b, count, MPI_INT, c, count, MPI_INT, comm);      /* b still in flight */
    /* c[p][i] = b_p[rank][i] = value(rank, p, i, 1) */
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            if (c[(size_t) p * count + i] != value(rank, p, i, 1))
                errs++;
    /* MPI_Sendrecv from a buffer another collective is still filling */
    MPI_Alltoall(a, count, MPI_INT, b, count, MPI_INT, comm);
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    MPI_Sendrecv(b, (int) n, MPI_INT, right, 5, c, (int) n, MPI_INT, left, 5, comm,
                 MPI_STATUS_IGNORE);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++)
            if (c[(size_t) p * count + i] != value(p, left, i, 1))
                errs++;
    if (errs)
        fprintf(stderr, "rank %d: chain count %d: %d errors\n", rank, count, errs);
    free(a);
    free(b);
    free(c);
    return errs;
}

static int syscalls(MPI_Comm comm, int count)
{
    int rank, size, errs = 0, fds[2];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n = (size_t) size * count, bytes = n * sizeof(int);
    int *s = malloc(bytes), *r = malloc(bytes), *back = malloc(bytes);
    FILE *tmp = tmpfile();

    fill(s, rank, size, count, 2);
    MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, comm);
    /* the kernel reads the pending buffer: must see the data, not EFAULT */
    size_t done = 0;
    while (done < bytes) {
        ssize_t w = write(fileno(tmp), (char *) r + done, bytes - done);
        if (w <= 0) {
            perror("write after collective");
            errs++;
            break;
        }
        done += w;
    }
    rewind(tmp);
    if (fread(back, 1, bytes, tmp) != bytes)
        errs++;
    errs += verify(back, rank, size, count, 2, "write(2)");

    /* the kernel writes into a pending buffer */
    MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, comm);
    if (pipe(fds) == 0) {
        int small[64];
        for (int i = 0; i < 64; i++)
            small[i] = i;
        if (write(fds[1], small, sizeof(small)) != (ssize_t) sizeof(small))
            errs++;
        if (read(fds[0], r, sizeof(small)) != (ssize_t) sizeof(small))
            errs++;
        for (int i = 0; i < 64 && i < (int) n; i++)
            errs += (r[i] != i);
        close(fds[0]);
        close(fds[1]);
    }
    /* stdio large write straight from a pending buffer */
    MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, comm);
    rewind(tmp);
    if (fwrite(r, 1, bytes, tmp) != bytes)
        errs++;
    fflush(tmp);
    rewind(tmp);
    memset(back, 0, bytes);
    if (fread(back, 1, bytes, tmp) != bytes)
        errs++;
    errs += verify(back, rank, size, count, 2, "fwrite(3)");
    fclose(tmp);
    free(s);
    free(r);
    free(back);
    return errs;
}

static int freed_unread(MPI_Comm comm, int count)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n = (size_t) size * count;
    int *s = malloc(n * sizeof(int));
    fill(s, rank, size, count, 3);
    for (int k = 0; k < 4; k++) {
        int *r = malloc(n * sizeof(int));
        MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, comm);
        free(r);        /* never read */
        /* the next user of the memory must see only its own bytes */
        int *x = malloc(n * sizeof(int));
        for (size_t i = 0; i < n; i++)
            x[i] = (int) i;
        for (size_t i = 0; i < n; i++)
            if (x[i] != (int) i) {
                errs++;
                break;
            }
        free(x);
    }
    free(s);
    return errs;
}

static int unaligned(MPI_Comm comm, int count)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n = (size_t) size * count;
    char *sraw = malloc(n * sizeof(int) + 64), *rraw = malloc(n * sizeof(int) + 64);
    int *s = (int *) (sraw + 12), *r = (int *) (rraw + 36);
    fill(s, rank, size, count, 4);
    MPI_Alltoall(s, count, MPI_INT, r, count, MPI_INT, comm);
    errs += verify(r, rank, size, count, 4, "unaligned");
    free(sraw);
    free(rraw);
    return errs;
}

static int many_in_flight(MPI_Comm a, MPI_Comm b, int count)
{
    enum { K = 6 };
    int rank, size, errs = 0;
    MPI_Comm_rank(a, &rank);
    MPI_Comm_size(a, &size);
    size_t n = (size_t) size * count;
    int *s[K], *r[K];
    for (int k = 0; k < K; k++) {
        s[k] = malloc(n * sizeof(int));
        r[k] = malloc(n * sizeof(int));
        fill(s[k], rank, size, count, 10 + k);
    }
    for (int k = 0; k < K; k++)
        MPI_Alltoall(s[k], count, MPI_INT, r[k], count, MPI_INT, k % 2 ? b : a);
    for (int k = K - 1; k >= 0; k--)
        errs += verify(r[k], rank, size, count, 10 + k, "in flight");
    for (int k = 0; k < K; k++) {
        free(s[k]);
        free(r[k]);
    }
    return errs;
}

int main(int argc, char *argv[])
{
    int errs = 0;
    const int counts[] = { 3000, 70000 };

    MTest_Init(&argc, &argv);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        errs += chain(MPI_COMM_WORLD, counts[c]);
        errs += syscalls(dup, counts[c]);
        errs += freed_unread(MPI_COMM_WORLD, counts[c]);
        errs += unaligned(dup, counts[c]);
        errs += many_in_flight(MPI_COMM_WORLD, dup, counts[c]);
    }
    MPI_Comm_free(&dup);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
