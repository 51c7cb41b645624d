/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Out of memory on one process while it builds the schedule of a call every process accepted
 * (MPIR_CVAR_TNBC_FAULT_INJECT=2 on rank 1, through MPI_T): without the schedule it cannot
 * know which messages its peers expect, so it cannot make their calls fail with it. The job
 * must end with T-NBC's message, never leave rank 0 waiting. Run by maint/run-tests.
 * Expects: failed on this process before its schedule existed
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 16384             /* ints: 64 KiB */

int main(int argc, char **argv)
{
    int rank, provided, index, count, stage = 2;
    MPI_T_cvar_handle handle;
    static int buf[COUNT];

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 1) {
        if (MPI_T_cvar_get_index("MPIR_CVAR_TNBC_FAULT_INJECT", &index) != MPI_SUCCESS)
            return 0;           /* no abort, no message: run-tests reports the failure */
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
        MPI_T_cvar_write(handle, &stage);
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_Bcast(buf, COUNT, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(buf, COUNT, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
