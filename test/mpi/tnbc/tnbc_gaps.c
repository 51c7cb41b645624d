/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Receive blocks that are separate objects: Gatherv and Alltoallv whose displacements point
 * into blocks placed apart, each sharing its first and last page with another object (as
 * ROMIO's tests gather processor names into separately allocated strings). The bytes between
 * the blocks are not the collective's: writing them right after the call must not wait for
 * any data (no fault on a T-NBC page), and landing the data must leave them alone. Before the
 * guards covered only pages that the sub-messages fill entirely, such pages were protected, and
 * when the library's own next allocation landed there the process died. */

#include "mpitest.h"
#include "tnbc_test_pvar.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 20
#define NEIGHBOUR 0x5a

static MPI_T_pvar_session session;

/* Block p of a receive arena: starts 64 bytes into page 4p + 1, spans 2 pages + 128 bytes, so
 * that it fills 2 whole pages and shares 2 partial ones with the bytes around it. */
static size_t block_off(size_t ps, int p)
{
    return (size_t) (4 * p + 1) * ps + 64;
}

static size_t block_len(size_t ps)
{
    return 2 * ps + 128;
}

static char value(int src, int dst, size_t i, int round)
{
    return (char) (src * 31 + dst * 7 + i % 251 + round);
}

/* Write every byte outside the blocks, as other objects would be written; no fault allowed. */
static int touch_neighbours(char *arena, size_t arena_len, size_t ps, int nblocks, int rank,
                            const char *what)
{
    unsigned long long before = tnbc_read_pvar(session, "tnbc_faults");
    size_t at = 0;
    for (int p = 0; p < nblocks; p++) {
        memset(arena + at, NEIGHBOUR, block_off(ps, p) - at);
        at = block_off(ps, p) + block_len(ps);
    }
    memset(arena + at, NEIGHBOUR, arena_len - at);
    unsigned long long after = tnbc_read_pvar(session, "tnbc_faults");
    if (before != TNBC_PVAR_MISSING && after != before) {
        printf("rank %d %s: writing other objects waited on %llu guarded pages\n", rank, what,
               after - before);
        return 1;
    }
    return 0;
}

static int check_arena(const char *arena, size_t arena_len, size_t ps, int nblocks, int rank,
                       int round, int gather, const char *what)
{
    int errs = 0;
    size_t at = 0;
    for (int p = 0; p < nblocks; p++) {
        for (; at < block_off(ps, p); at++)
            if (arena[at] != NEIGHBOUR && errs++ < 3)
                printf("rank %d %s: other object's byte %zu overwritten\n", rank, what, at);
        for (size_t i = 0; i < block_len(ps); i++, at++)
            if (arena[at] != value(p, gather ? 0 : rank, i, round) && errs++ < 3)
                printf("rank %d %s: block %d byte %zu wrong\n", rank, what, p, i);
    }
    for (; at < arena_len; at++)
        if (arena[at] != NEIGHBOUR && errs++ < 3)
            printf("rank %d %s: other object's byte %zu overwritten\n", rank, what, at);
    return errs;
}

int main(int argc, char *argv[])
{
    int rank, size, errs = 0, provided;
    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    size_t ps = (size_t) sysconf(_SC_PAGESIZE), blen = block_len(ps);
    size_t arena_len = (size_t) (4 * size + 1) * ps;
    char *arena = mmap(NULL, arena_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                       0);
    char *sbuf = malloc(blen * size);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    int *scounts = malloc(size * sizeof(int)), *sdispls = malloc(size * sizeof(int));
    if (arena == MAP_FAILED || !sbuf || !counts || !displs || !scounts || !sdispls)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int p = 0; p < size; p++) {
        counts[p] = scounts[p] = (int) blen;
        displs[p] = (int) (block_off(ps, p) - block_off(ps, 0));
        sdispls[p] = (int) (p * blen);
    }
    char *recvbuf = arena + block_off(ps, 0);

    for (int round = 0; round < ROUNDS && errs == 0; round++) {
        /* Gatherv to rank 0: this rank's block for the root */
        for (size_t i = 0; i < blen; i++)
            sbuf[i] = value(rank, 0, i, round);
        memset(arena, 0, arena_len);
        MPI_Gatherv(sbuf, (int) blen, MPI_CHAR, recvbuf, counts, displs, MPI_CHAR, 0,
                    MPI_COMM_WORLD);
        if (rank == 0) {
            errs += touch_neighbours(arena, arena_len, ps, size, rank, "gatherv");
            errs += check_arena(arena, arena_len, ps, size, rank, round, 1, "gatherv");
        }

        /* Alltoallv: block p of every rank's arena comes from rank p */
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < blen; i++)
                sbuf[p * blen + i] = value(rank, p, i, round);
        memset(arena, 0, arena_len);
        MPI_Alltoallv(sbuf, scounts, sdispls, MPI_CHAR, recvbuf, counts, displs, MPI_CHAR,
                      MPI_COMM_WORLD);
        errs += touch_neighbours(arena, arena_len, ps, size, rank, "alltoallv");
        errs += check_arena(arena, arena_len, ps, size, rank, round, 0, "alltoallv");
        MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }

    munmap(arena, arena_len);
    free(sbuf);
    free(counts);
    free(displs);
    free(scounts);
    free(sdispls);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
