/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Buffers whose protection the program chose: a send buffer mapped read-only from a file, a
 * send buffer the program made read-only with mprotect, and a receive buffer that is also
 * executable. Rank 1 enters late, so the others return early with their pages guarded. The
 * data must arrive and every mapping must end with the protection it had. */

#define _GNU_SOURCE
#include <mpi.h>
#include "mpitest.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT 65536             /* ints per pair: 64 pages, over the send-copy threshold */
#define LATE 1

static int value(int from, int to, int i, int round)
{
    return from * 1000003 + to * 101 + i + round * 7;
}

/* The "rwxp" field of the mapping holding addr, or "?" */
static void prot_of(const void *addr, char out[5])
{
    char line[512];
    uintptr_t a = (uintptr_t) addr;
    FILE *f = fopen("/proc/self/maps", "r");
    strcpy(out, "?");
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
            strcpy(out, perms);
            break;
        }
    }
    if (f)
        fclose(f);
}

static int check_prot(int rank, const char *what, const void *buf, size_t len, const char *want)
{
    char got[5];
    int errs = 0;
    /* first, middle and last page: a partly restored mapping is split */
    const char *at[3] = { buf, (const char *) buf + len / 2, (const char *) buf + len - 1 };
    for (int i = 0; i < 3; i++) {
        prot_of(at[i], got);
        if (strcmp(got, want) != 0) {
            errs++;
            printf("rank %d %s: mapping is %s, was %s\n", rank, what, got, want);
            break;
        }
    }
    return errs;
}

static int check_data(int rank, int size, const char *what, const int *rbuf, int round)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            if (rbuf[(size_t) p * COUNT + i] != value(p, rank, i, round)) {
                printf("rank %d %s: from %d int %d is %d\n", rank, what, p, i,
                       rbuf[(size_t) p * COUNT + i]);
                return 1;
            }
    return 0;
}

static void fill(int *sbuf, int rank, int size, int round)
{
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            sbuf[(size_t) p * COUNT + i] = value(rank, p, i, round);
}

static int alltoall(int rank, const void *sbuf, void *rbuf)
{
    if (rank == LATE)
        usleep(200 * 1000);
    return MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
}

/* sending from a file mapped read-only and shared: it can never be made writable */
static int send_from_file(int rank, int size, int *rbuf)
{
    size_t len = (size_t) size * COUNT * sizeof(int);
    int errs = 0;
    char name[] = "/tmp/tnbc_protections.XXXXXX";
    int fd = mkstemp(name);
    int *data = malloc(len);
    if (fd < 0 || !data) {
        printf("rank %d: cannot create %s\n", rank, name);
        return 1;
    }
    fill(data, rank, size, 1);
    if (write(fd, data, len) != (ssize_t) len) {
        printf("rank %d: cannot write %s\n", rank, name);
        return 1;
    }
    free(data);
    close(fd);
    fd = open(name, O_RDONLY);  /* the mapping cannot be made writable: mprotect says EACCES */
    unlink(name);
    void *sbuf = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (sbuf == MAP_FAILED) {
        printf("rank %d: cannot map %s\n", rank, name);
        return 1;
    }
    int rc = alltoall(rank, sbuf, rbuf);
    if (rc != MPI_SUCCESS) {
        printf("rank %d file: MPI_Alltoall returned %d\n", rank, rc);
        errs++;
    }
    errs += check_data(rank, size, "file", rbuf, 1);
    MPI_Barrier(MPI_COMM_WORLD);        /* every collective done: all guards gone */
    errs += check_prot(rank, "file", sbuf, len, "r--s");
    munmap(sbuf, len);
    return errs;
}

/* sending from memory the program made read-only */
static int send_read_only(int rank, int size, int *rbuf)
{
    size_t len = (size_t) size * COUNT * sizeof(int);
    int errs = 0;
    int *sbuf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sbuf == MAP_FAILED)
        return 1;
    fill(sbuf, rank, size, 2);
    mprotect(sbuf, len, PROT_READ);
    errs += alltoall(rank, sbuf, rbuf) != MPI_SUCCESS;
    errs += check_data(rank, size, "read-only", rbuf, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_prot(rank, "read-only", sbuf, len, "r--p");
    munmap(sbuf, len);
    return errs;
}

/* Linux 6.11's PROCMAP_QUERY on /proc/self/maps: where it is missing, T-NBC cannot see that a
 * receive buffer is executable, and the pages come back without PROT_EXEC (README.tnbc). */
static int kernel_tells_exec(void)
{
    uint64_t query[13] = { sizeof(query), 0, (uintptr_t) & query };
    int fd = open("/proc/self/maps", O_RDONLY);
    int ok = fd >= 0 && ioctl(fd, _IOWR('f', 17, uint64_t[13]), query) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* receiving into memory that is also executable (a JIT's buffer); skipped where the system
 * refuses writable and executable mappings */
static int recv_executable(int rank, int size, int *sbuf)
{
    size_t len = (size_t) size * COUNT * sizeof(int);
    int errs = 0;
    int *rbuf = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int have = (rbuf != MAP_FAILED), all;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (have)
            munmap(rbuf, len);
        return 0;
    }
    fill(sbuf, rank, size, 3);
    errs += alltoall(rank, sbuf, rbuf) != MPI_SUCCESS;
    errs += check_data(rank, size, "executable", rbuf, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_prot(rank, "executable", rbuf, len, kernel_tells_exec() ? "rwxp" : "rw-p");
    munmap(rbuf, len);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *buf = malloc((size_t) size * COUNT * sizeof(int));

    errs += send_from_file(rank, size, buf);
    errs += send_read_only(rank, size, buf);
    errs += recv_executable(rank, size, buf);

    free(buf);
    MTest_Finalize(errs);
    return 0;
}
