/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Out of memory on one process after every process accepted the call. The last rank makes
 * the next call T-NBC accepts fail before its first message (MPIR_CVAR_TNBC_FAULT_INJECT=1,
 * written through MPI_T on that rank only): with MPI_ERRORS_RETURN, every process must see an
 * error, from the call or from the next collective on the communicator; none may wait for
 * messages that never come; and the collectives after it (same communicator, tags in step)
 * must move the right data. With T-NBC off the variable does nothing and every call succeeds.
 * Alltoall, Bcast (a tree: errors travel down it) and Allreduce. */

#include <mpi.h>
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 16384             /* ints per pair, per Bcast and per Allreduce: 64 KiB */
#define TRIES 100

typedef enum { ALLTOALL, BCAST, ALLREDUCE, NCOLL } coll_t;
static const char *names[NCOLL] = { "Alltoall", "Bcast", "Allreduce" };

static int rank, size;
static int *sbuf, *rbuf;

static int run(coll_t c, MPI_Comm comm, int round)
{
    for (int i = 0; i < size * COUNT; i++)
        sbuf[i] = round * 1000003 + rank * 7919 + i;
    memset(rbuf, 0xff, (size_t) size * COUNT * sizeof(int));
    switch (c) {
        case ALLTOALL:
            return MPI_Alltoall(sbuf, COUNT, MPI_INT, rbuf, COUNT, MPI_INT, comm);
        case BCAST:
            if (rank == 0)
                memcpy(rbuf, sbuf, COUNT * sizeof(int));
            return MPI_Bcast(rbuf, COUNT, MPI_INT, 0, comm);
        default:
            return MPI_Allreduce(sbuf, rbuf, COUNT, MPI_INT, MPI_SUM, comm);
    }
}

static int check(coll_t c, int round)
{
    for (int i = 0; i < COUNT; i++) {
        for (int p = 0; p < (c == ALLTOALL ? size : 1); p++) {
            int want = 0, got = rbuf[p * COUNT + i];
            if (c == ALLTOALL)
                want = round * 1000003 + p * 7919 + rank * COUNT + i;
            else if (c == BCAST)
                want = round * 1000003 + i;
            else
                for (int q = 0; q < size; q++)
                    want += round * 1000003 + q * 7919 + i;
            if (got != want) {
                printf("rank %d: %s round %d: [%d][%d] = %d, not %d\n", rank, names[c],
                        round, p, i, got, want);
                return 1;
            }
        }
    }
    return 0;
}

static void inject(void)
{
    int index, count;
    MPI_T_cvar_handle handle;
    int stage = 1;

    if (MPI_T_cvar_get_index("MPIR_CVAR_TNBC_FAULT_INJECT", &index) != MPI_SUCCESS) {
        printf("MPIR_CVAR_TNBC_FAULT_INJECT not found\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
    MPI_T_cvar_write(handle, &stage);
    MPI_T_cvar_handle_free(&handle);
}

int main(int argc, char **argv)
{
    int errs = 0, provided, tnbc_on;
    const char *on = getenv("MPIR_CVAR_TNBC_ENABLE");

    MTest_Init(&argc, &argv);
    /* T-NBC also reports the peers' late errors on stderr, which runtests would count */
    if (!freopen("/dev/null", "w", stderr))
        return 1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    tnbc_on = on && atoi(on) != 0;
    sbuf = malloc((size_t) size * COUNT * sizeof(int));
    rbuf = malloc((size_t) size * COUNT * sizeof(int));

    for (coll_t c = 0; c < NCOLL; c++) {
        MPI_Comm comm;
        int total = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

        errs += run(c, comm, 1) != MPI_SUCCESS || check(c, 1);
        if (rank == size - 1)
            inject();
        int err = run(c, comm, 2);
        if (rank == size - 1 && tnbc_on) {
            char text[MPI_MAX_ERROR_STRING];
            int len;
            MPI_Error_string(err, text, &len);
            if (err == MPI_SUCCESS || !strstr(text, "Out of memory")) {
                printf("%s: the failing process got \"%s\", not out of memory\n", names[c],
                       err == MPI_SUCCESS ? "success" : text);
                errs++;
            }
        }
        /* every process of an exchange hears of it; in a tree, the failing process's
         * parent and what lies below it in the messages' order (as with MPICH's algorithms).
         * A call that returned early hears of it from a later collective on the
         * communicator, once its operation is over: the processes agree when to stop. */
        int must_fail = tnbc_on && (c != BCAST || rank == size - 1);
        int failed = (err != MPI_SUCCESS), mine = 0;
        for (int t = 0; t < TRIES; t++) {
            int waiting = must_fail && !failed, any;
            MPI_Allreduce(&waiting, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (!any)
                break;
            usleep(10 * 1000);
            if (MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS)
                failed = 1;
        }
        if (failed != must_fail && !(tnbc_on && failed)) {
            printf("rank %d: %s: %s (T-NBC %s)\n", rank, names[c],
                   failed ? "failed" : "no error", tnbc_on ? "on" : "off");
            errs++;
        }
        /* the communicator goes on, and so does MPI_COMM_WORLD */
        for (int round = 3; round < 5; round++) {
            /* with the right data; a process of a tree may hear of the failure only now */
            if (run(c, comm, round) != MPI_SUCCESS) {
                errs += failed || !tnbc_on;
                failed = 1;
            }
            errs += check(c, round);
        }
        errs += run(c, MPI_COMM_WORLD, 5) != MPI_SUCCESS || check(c, 5);
        MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Comm_free(&comm);
    }

    free(sbuf);
    free(rbuf);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
