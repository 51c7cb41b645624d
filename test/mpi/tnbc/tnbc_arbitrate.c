/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Node arbitration: the processes of a node take turns on its link for their remote bodies.
 * Run with MPIR_CVAR_NUM_CLIQUES=2, which makes this machine look like two nodes.
 *   tnbc_arbitrate same    every process has the same access order (a profile: source order)
 *   tnbc_arbitrate mixed   odd ranks' profile says reverse order: the processes disagree
 * In both: every byte is right; the processes took turns (pvar tnbc_node_turns); a receiver
 * that enters late does not make its node peers hold forever; and no file of a shared-memory
 * segment is left in /dev/shm once MPI_Init has returned, so a killed job leaves none. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tnbc_test_pvar.h"
#include "tnbc_test_profile.h"

#define BLOCK (256 * 1024)      /* bytes per pair */
#define CALLS 8
#define LATE_CALL 3
#define MAX_SIZE 16

static int errs;

static unsigned value(int from, int to, int call, size_t i)
{
    return (unsigned) (from * 7919 + to * 104729 + call * 1299709) ^ (unsigned) i;
}

/* Mapped files of /dev/shm that still have a name: what a killed process would leave. */
static int named_shm_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, " /dev/shm/") && !strstr(line, "(deleted)")) {
            printf("still named: %s", line);
            n++;
        }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    int mixed = argc > 1 && !strcmp(argv[1], "mixed");
    char profile[64];
    int world_rank = atoi(getenv("PMI_RANK") ? getenv("PMI_RANK") : "0");

    snprintf(profile, sizeof(profile), "tnbc_arbitrate_profile.%d", (int) getpid());
    tnbc_write_profile(profile, BLOCK, MAX_SIZE, mixed && world_rank % 2, NULL);
    setenv("MPIR_CVAR_TNBC_PROFILE", profile, 1);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unlink(profile);
    if (size > MAX_SIZE) {
        printf("at most %d processes\n", MAX_SIZE);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* the node's first process removes the file once all have mapped it: after a barrier */
    MPI_Barrier(MPI_COMM_WORLD);
    errs += named_shm_mappings();

    size_t per = BLOCK / sizeof(unsigned);
    unsigned *sbuf = malloc((size_t) size * BLOCK), *rbuf = malloc((size_t) size * BLOCK);
    for (int call = 0; call < CALLS; call++) {
        for (int to = 0; to < size; to++)
            for (size_t i = 0; i < per; i++)
                sbuf[to * per + i] = value(rank, to, call, i);
        /* the process whose blocks everyone reads first sends to a receiver that is late */
        if (call == LATE_CALL && rank == size - 1)
            usleep(300 * 1000);
        MPI_Alltoall(sbuf, BLOCK, MPI_BYTE, rbuf, BLOCK, MPI_BYTE, MPI_COMM_WORLD);
        /* read in this process's order, block by block */
        for (int k = 0; k < size; k++) {
            int from = (mixed && rank % 2) ? size - 1 - k : k;
            for (size_t i = 0; i < per; i++)
                if (rbuf[from * per + i] != value(from, rank, call, i)) {
                    if (errs++ < 5)
                        printf("rank %d call %d: word %zu from %d is %u, not %u\n", rank, call,
                               i, from, rbuf[from * per + i], value(from, rank, call, i));
                    break;
                }
        }
    }

    /* with two processes per node and peers on the other, every process took turns */
    MPI_T_pvar_session session;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    unsigned long long turns = tnbc_read_pvar(session, "tnbc_node_turns");
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    if (size >= 4 && (turns == TNBC_PVAR_MISSING || turns == 0)) {
        printf("rank %d: no operation took turns (tnbc_node_turns %llu)\n", rank, turns);
        errs++;
    }

    int all;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
