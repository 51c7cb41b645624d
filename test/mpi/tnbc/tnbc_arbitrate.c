/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Node arbitration: the processes of a node take turns on its link for their remote bodies.
 * Run with MPIR_CVAR_TNBC_NODE_ARBITRATION=1 and MPIR_CVAR_NUM_CLIQUES=2, which makes this
 * machine look like two nodes.
 *   tnbc_arbitrate same    every process has the same access order (a profile: source order)
 *   tnbc_arbitrate mixed   odd ranks' profile says reverse order: the processes disagree
 *   tnbc_arbitrate session even ranks open an MPI session before MPI_Init (another way into
 *                          the collective that makes the node's segment)
 * In all: every byte is right; the processes took turns (pvar tnbc_node_turns); a receiver
 * that enters late does not make its node peers hold forever; and no file of a shared-memory
 * segment is left in /dev/shm once MPI_Init has returned, so a killed job leaves none.
 * Then COMM_WORLD is split in two colours with one process of each node per colour (the same
 * context id and tags in both): operations of different colours are different operations,
 * so no process holds for a node peer of the other colour (pvar tnbc_node_holds stays). */

#include <mpi.h>
#include "mpitest.h"
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

/* One MPI_T session for the whole run: MPICH 4.0.2 does not survive a second MPI_T_init. */
static MPI_T_pvar_session pvars;

static unsigned long long read_pvar(const char *name)
{
    return tnbc_read_pvar(pvars, name);
}

/* Alltoalls of comm, the data read in this process's order, block by block; in the call
 * LATE_CALL the process whose blocks everyone reads first comes late. */
static void exchange(MPI_Comm comm, unsigned *sbuf, unsigned *rbuf, int mixed, int calls)
{
    int rank, size;
    size_t per = BLOCK / sizeof(unsigned);

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int call = 0; call < calls; call++) {
        for (int to = 0; to < size; to++)
            for (size_t i = 0; i < per; i++)
                sbuf[to * per + i] = value(rank, to, call, i);
        if (call == LATE_CALL && rank == size - 1)
            usleep(300 * 1000);
        MPI_Alltoall(sbuf, BLOCK, MPI_BYTE, rbuf, BLOCK, MPI_BYTE, comm);
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
}

int main(int argc, char **argv)
{
    int rank, size;
    int mixed = argc > 1 && !strcmp(argv[1], "mixed");
    int with_session = argc > 1 && !strcmp(argv[1], "session");
    MPI_Session early_session = MPI_SESSION_NULL;
    char profile[64];
    int world_rank = atoi(getenv("PMI_RANK") ? getenv("PMI_RANK") : "0");

    snprintf(profile, sizeof(profile), "tnbc_arbitrate_profile.%d", (int) getpid());
    tnbc_write_profile(profile, BLOCK, MAX_SIZE, mixed && world_rank % 2, NULL);
    setenv("MPIR_CVAR_TNBC_PROFILE", profile, 1);

    if (with_session && world_rank % 2 == 0)
        MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &early_session);
    MPI_Init(&argc, &argv);
    if (early_session != MPI_SESSION_NULL)
        MPI_Session_finalize(&early_session);
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

    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&pvars);

    unsigned *sbuf = malloc((size_t) size * BLOCK), *rbuf = malloc((size_t) size * BLOCK);
    exchange(MPI_COMM_WORLD, sbuf, rbuf, mixed, CALLS);

    /* with two processes per node and peers on the other, every process took turns */
    unsigned long long turns = read_pvar("tnbc_node_turns");
    if (size >= 4 && (turns == TNBC_PVAR_MISSING || turns == 0)) {
        printf("rank %d: no operation took turns (tnbc_node_turns %llu)\n", rank, turns);
        errs++;
    }

    /* two colours, one process of each node in each; the second colour's ranks reversed, so
     * that node peers have different positions in their operations */
    MPI_Comm node_comm, colour_comm;
    int local, local_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_comm);
    MPI_Comm_rank(node_comm, &local);
    MPI_Comm_size(node_comm, &local_size);
    MPI_Comm_split(MPI_COMM_WORLD, local, local % 2 ? -rank : rank, &colour_comm);
    unsigned long long holds = read_pvar("tnbc_node_holds");
    exchange(colour_comm, sbuf, rbuf, 0, CALLS);
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned long long holds_split = read_pvar("tnbc_node_holds");
    if (size == 4 && local_size == 2 && holds_split != holds) {
        printf("rank %d: held for a process of the other colour (%llu holds)\n", rank,
               holds_split - holds);
        errs++;
    }
    MPI_Comm_free(&colour_comm);
    MPI_Comm_free(&node_comm);

    MPI_T_pvar_session_free(&pvars);
    MPI_T_finalize();

    free(sbuf);
    free(rbuf);
    MTest_Finalize(errs);
    return 0;
}
