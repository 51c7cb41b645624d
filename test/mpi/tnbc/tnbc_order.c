/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Access orders (tnbc_access.c): every rank reads its Alltoall blocks in reverse source order.
 *   tnbc_order trace       MPIR_CVAR_TNBC_TRACE=tnbc_order_trace: after MPI_Finalize each rank
 *                          reads its own trace back and checks every call's touch order (the
 *                          application also uses MPI_T, which frees string CVARs at
 *                          MPI_T_finalize: the trace still goes to the prefix it named)
 *   tnbc_order profile     a profile (reverse order) written before MPI_Init is used
 *   tnbc_order badprofile  a malformed profile is reported (checked on stderr) and ignored
 *   tnbc_order online      no profile: the order is learnt from the faults
 * Every mode checks every byte. */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tnbc_test_profile.h"

#define BLOCK (64 * 1024)       /* bytes per pair: whole pages */
#define CALLS 4
#define TRACE_PREFIX "tnbc_order_trace"
#define MAX_SIZE 16

static int errs;

/* After MPI_Finalize: the trace lists CALLS calls, each with the blocks read in reverse. */
static void check_trace(int rank, int size)
{
    char path[256], line[256];
    snprintf(path, sizeof(path), "%s.%d.trace", TRACE_PREFIX, rank);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("rank %d: no trace file %s\n", rank, path);
        errs++;
        return;
    }
    int calls = 0, order[MAX_SIZE] = { 0 };
    unsigned long long caller = 0;
    while (fgets(line, sizeof(line), f)) {
        int b, o, n, nb;
        unsigned long long bytes, t, computed, in_call;
        char coll[32];
        if (sscanf(line, "call %*lu %31s %d %llu %d 0x%llx %llu %llu", coll, &n, &bytes, &nb,
                   &caller, &computed, &in_call) == 7) {
            calls++;
            /* the first call has nothing before it; each later one follows the reads */
            if ((calls == 1 && computed) || (calls > 1 && !computed) || !in_call) {
                printf("rank %d: call %d computed %llu ns before, %llu ns in it\n", rank, calls,
                       computed, in_call);
                errs++;
            }
            memset(order, 0, sizeof(order));
            if (strcmp(coll, "alltoall") || n != size || nb != size || bytes != size * BLOCK) {
                printf("rank %d: unexpected call line %s", rank, line);
                errs++;
            }
        } else if (sscanf(line, "touch %d %d %llu", &b, &o, &t) == 3 && b >= 0 && b < size) {
            order[b] = o;
            /* a block read later was touched later */
            if (b < size - 1 && order[b + 1] && order[b + 1] >= o) {
                printf("rank %d call %d: block %d touched at %d after block %d at %d\n", rank,
                       calls, b, o, b + 1, order[b + 1]);
                errs++;
            }
        }
    }
    fclose(f);
    unlink(path);
    if (calls != CALLS || caller == 0) {
        printf("rank %d: %d calls in the trace (want %d), caller 0x%llx\n", rank, calls, CALLS,
               caller);
        errs++;
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "online";
    char profile[64];
    int rank, size;

    if (!strcmp(mode, "profile") || !strcmp(mode, "badprofile")) {
        snprintf(profile, sizeof(profile), "tnbc_order_profile.%d", (int) getpid());
        tnbc_write_profile(profile, BLOCK, MAX_SIZE, 1, !strcmp(mode, "badprofile") ?
                           "site alltoall 2 64 2 0x1\norder 0 0\n" : NULL);
        setenv("MPIR_CVAR_TNBC_PROFILE", profile, 1);
    }
    char errlog[64];
    snprintf(errlog, sizeof(errlog), "tnbc_order_stderr.%d", (int) getpid());
    if (!strcmp(mode, "badprofile") && !freopen(errlog, "w", stderr))
        return 1;
    if (!strcmp(mode, "trace"))
        setenv("MPIR_CVAR_TNBC_TRACE", TRACE_PREFIX, 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAX_SIZE) {
        printf("at most %d ranks\n", MAX_SIZE);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    unsigned char *send, *recv;
    long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign((void **) &send, page, (size_t) size * BLOCK) ||
        posix_memalign((void **) &recv, page, (size_t) size * BLOCK))
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int it = 0; it < CALLS; it++) {
        for (int p = 0; p < size; p++)
            memset(send + (size_t) p * BLOCK, (rank * 31 + p * 7 + it) & 0xff, BLOCK);
        /* the same call site every time: one line */
        MPI_Alltoall(send, BLOCK, MPI_BYTE, recv, BLOCK, MPI_BYTE, MPI_COMM_WORLD);
        for (int p = size - 1; p >= 0; p--) {
            const unsigned char *b = recv + (size_t) p * BLOCK;
            unsigned char want = (p * 31 + rank * 7 + it) & 0xff;
            for (int i = 0; i < BLOCK; i += 997)
                if (b[i] != want) {
                    if (errs++ < 5)
                        printf("rank %d call %d block %d byte %d: %d, want %d\n", rank, it, p,
                               i, b[i], want);
                    break;
                }
            if (b[BLOCK - 1] != want)
                errs++;
        }
    }
    free(send);
    free(recv);
    if (!strcmp(mode, "trace")) {
        int provided;
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        MPI_T_finalize();
    }
    MPI_Finalize();

    if (!strcmp(mode, "trace"))
        check_trace(rank, size);
    if (!strcmp(mode, "profile") || !strcmp(mode, "badprofile"))
        unlink(profile);
    if (!strcmp(mode, "badprofile")) {
        /* the rank that reads the profile names the bad line */
        char line[256];
        int said = 0;
        fflush(stderr);
        FILE *f = fopen(errlog, "r");
        while (f && fgets(line, sizeof(line), f))
            said |= strstr(line, "line 35 is not a profile line; profile ignored") != NULL;
        if (f)
            fclose(f);
        unlink(errlog);
        if (!said) {
            printf("rank %d: no message about the malformed profile\n", rank);
            errs++;
        }
    }
    if (rank == 0 && errs == 0)
        printf("No Errors\n");
    return errs != 0;
}
