/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* T-NBC's settings written through MPI_T after MPI_Init (legal: MPI_T_cvar_write at any
 * time). MPIR_CVAR_TNBC_ENABLE set to 0 on every process while an Alltoall's data may still be
 * on the way (rank 1 enters late), then an Allreduce that reads that data as its input; and
 * settings every process must share (segment counts, statistics) changed on rank 0 only,
 * followed by Bcasts, Scans and MPI_Finalize. The data must be right and nothing may hang:
 * T-NBC keeps what MPI_Init found. */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define COUNT 4096              /* ints per pair */

static int rank, size, errs;

static void write_cvar(const char *name, int value)
{
    int index;
    MPI_T_cvar_handle handle;
    int n;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &n) != MPI_SUCCESS) {
        errs++;
        printf("rank %d: no control variable %s\n", rank, name);
        return;
    }
    if (MPI_T_cvar_write(handle, &value) != MPI_SUCCESS) {
        errs++;
        printf("rank %d: %s could not be written\n", rank, name);
    }
    MPI_T_cvar_handle_free(&handle);
}

static void alltoall_then_allreduce(int call)
{
    int *s = malloc((size_t) size * COUNT * sizeof(int));
    int *r = malloc((size_t) size * COUNT * sizeof(int));
    int *sum = malloc((size_t) size * COUNT * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < COUNT; i++)
            s[p * COUNT + i] = p * 7 + i + call;        /* block p goes to rank p */
    if (rank == 1)
        usleep(3000);
    MPI_Alltoall(s, COUNT, MPI_INT, r, COUNT, MPI_INT, MPI_COMM_WORLD);
    if (call == 0)
        write_cvar("MPIR_CVAR_TNBC_ENABLE", 0);
    /* r[p * COUNT + i] = q * 7 + i + call on process q */
    MPI_Allreduce(r, sum, size * COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < size * COUNT; i++) {
        int want = 7 * size * (size - 1) / 2 + size * (i % COUNT + call);
        if (sum[i] != want) {
            if (errs++ < 10)
                printf("rank %d call %d: sum[%d] = %d, want %d\n", rank, call, i, sum[i], want);
            break;
        }
    }
    free(s);
    free(r);
    free(sum);
}

static void bcast_and_scan(int call)
{
    int *b = malloc(COUNT * 8 * sizeof(int)), *x = malloc(COUNT * sizeof(int));
    int *y = malloc(COUNT * sizeof(int));
    for (int i = 0; i < COUNT * 8; i++)
        b[i] = rank == 0 ? i + call : -1;
    MPI_Bcast(b, COUNT * 8, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        x[i] = i + rank;
    MPI_Scan(x, y, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT * 8; i++)
        if (b[i] != i + call && errs++ < 10)
            printf("rank %d call %d: Bcast [%d] = %d\n", rank, call, i, b[i]);
    for (int i = 0; i < COUNT; i++)
        if (y[i] != (rank + 1) * i + rank * (rank + 1) / 2 && errs++ < 10)
            printf("rank %d call %d: Scan [%d] = %d\n", rank, call, i, y[i]);
    free(b);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    int provided;
    MTest_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    /* the warning T-NBC prints, and the statistics rank 0 asks for below, go to stderr */
    if (!freopen("/dev/null", "w", stderr))
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (int call = 0; call < 3; call++)
        alltoall_then_allreduce(call);
    if (rank == 0) {
        write_cvar("MPIR_CVAR_TNBC_BCAST_SEGMENTS", 7);
        write_cvar("MPIR_CVAR_TNBC_SCAN_SEGMENTS", 3);
        write_cvar("MPIR_CVAR_TNBC_STATS", 1);
    }
    for (int call = 0; call < 3; call++)
        bcast_and_scan(call);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
