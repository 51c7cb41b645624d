/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A program that makes its receive buffer read-only right after the collective (to catch
 * stray writes), while blocks may still be on the way (rank 1 enters every call late): it
 * must read what was sent, not what the pages held before, and the pages must stay read-only
 * afterwards (T-NBC must not open them again when the data lands). Then it makes them writable
 * again for the next call. */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT 8192              /* ints per pair: 8 pages */
#define CALLS 20

static int rank, size, errs;

static int value(int from, int to, int i, int call)
{
    return from * 1000003 + to * 101 + i + call;
}

/* the protection /proc/self/maps shows for addr: "r--p" and the like */
static void prot_of(const void *addr, char prot[5])
{
    strcpy(prot, "????");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char p[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 &&
            (unsigned long) addr >= lo && (unsigned long) addr < hi) {
            strcpy(prot, p);
            break;
        }
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t len = (size_t) size * COUNT * sizeof(int);
    int *sbuf = malloc(len);
    int *rbuf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (rbuf == MAP_FAILED)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (int call = 0; call < CALLS; call++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < COUNT; i++)
                sbuf[p * COUNT + i] = value(rank, p, i, call);
        memset(rbuf, 0xee, len);
        if (rank == 1)
            usleep(3000);
        MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, MPI_COMM_WORLD);
        if (mprotect(rbuf, len, PROT_READ) != 0) {
            errs++;
            perror("mprotect");
        }
        for (int p = size - 1; p >= 0; p--)
            for (int i = 0; i < COUNT; i++)
                if (rbuf[p * COUNT + i] != value(p, rank, i, call) && errs++ < 10)
                    printf("rank %d call %d: [%d] from %d is %x\n", rank, call, i, p,
                           rbuf[p * COUNT + i]);
        /* another collective: whatever T-NBC still had of the first is done by now */
        MPI_Barrier(MPI_COMM_WORLD);
        for (int p = 0; p < size; p++) {
            char prot[5];
            prot_of((char *) rbuf + p * COUNT * sizeof(int) + 4096, prot);
            if (strcmp(prot, "r--p") != 0 && errs++ < 10)
                printf("rank %d call %d: block %d is %s after mprotect(PROT_READ)\n", rank, call,
                       p, prot);
        }
        mprotect(rbuf, len, PROT_READ | PROT_WRITE);
    }
    munmap(rbuf, len);
    free(sbuf);
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
