/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Bcast segments by access order (tnbc_bcast.c), with MPIR_CVAR_TNBC_BCAST_SEGMENTS=6: a Bcast
 * of NBYTES from rank 0 has 8 pieces (head, tail, 6 segments), read by every rank in an order
 * of its own.
 *   tnbc_bcast_order profile   every rank but the root reads in reverse and has a profile
 *                              saying so; the root has none and must learn from its children
 *   tnbc_bcast_order mixed     the same, but each rank starts at a segment of its own
 *   tnbc_bcast_order online    no profile: orders are learnt from the faults
 * Every mode checks each piece of every call (every 499th byte and the last). With a profile
 * (the process manager gives PMI_RANK before MPI_Init; without it the modes check data only),
 * each non-root process must have received in its order on every call and the root must have
 * sent to a child in the child's order (it knows only what its children reported). */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tnbc_test_pvar.h"

#define NBYTES (1 << 20)
#define NSEG 6
#define EDGE 4096
#define NPIECES (NSEG + 2)
#define CALLS 6

static int errs;

/* Pieces as T-NBC cuts them: head, tail, then NSEG segments of the middle. */
static void piece_range(int p, size_t * off, size_t * len)
{
    size_t seg = (NBYTES - 2 * EDGE + NSEG - 1) / NSEG;
    if (p < 2) {
        *off = p == 0 ? 0 : NBYTES - EDGE;
        *len = EDGE;
        return;
    }
    *off = EDGE + (size_t) (p - 2) * seg;
    *len = (*off + seg <= NBYTES - EDGE) ? seg : NBYTES - EDGE - *off;
}

/* The k-th piece rank reads: edges first, then the segments in reverse (profile, online) or
 * from a segment of the rank's own, wrapping (mixed). */
static int piece_read(const char *mode, int rank, int k)
{
    if (k < 2)
        return k;
    if (!strcmp(mode, "mixed"))
        return 2 + (rank + k - 2) % NSEG;
    return NPIECES - 1 - (k - 2);
}

static void write_profile(const char *path, const char *mode, int rank, int size)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "site bcast %d %d %d *\norder", size, NBYTES, NPIECES);
    for (int k = 0; k < NPIECES; k++)
        fprintf(f, " %d", piece_read(mode, rank, k));
    fprintf(f, "\n");
    fclose(f);
}

static unsigned char value(int call, size_t i)
{
    return (unsigned char) (call * 13 + i * 7 + (i >> 12));
}

static int profile_modes_apply(const char *mode)
{
    return strcmp(mode, "online") && getenv("PMI_RANK") && getenv("PMI_SIZE");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "online";
    char profile[64] = "";
    int rank, size, provided;

    /* the rank is known before MPI_Init from the process manager */
    const char *pmi_rank = getenv("PMI_RANK"), *pmi_size = getenv("PMI_SIZE");
    if (strcmp(mode, "online") && pmi_rank && pmi_size && atoi(pmi_rank) != 0) {
        snprintf(profile, sizeof(profile), "tnbc_bcast_order.%d", (int) getpid());
        write_profile(profile, mode, atoi(pmi_rank), atoi(pmi_size));
        setenv("MPIR_CVAR_TNBC_PROFILE", profile, 1);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);

    unsigned char *buf;
    long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign((void **) &buf, page, NBYTES))
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int call = 0; call < CALLS; call++) {
        if (rank == 0)
            for (size_t i = 0; i < NBYTES; i++)
                buf[i] = value(call, i);
        /* the same call site every time: one line */
        MPI_Bcast(buf, NBYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (int k = 0; k < NPIECES; k++) {
            size_t off, len;
            piece_range(piece_read(mode, rank, k), &off, &len);
            for (size_t i = off; i < off + len; i += 499)
                if (buf[i] != value(call, i)) {
                    if (errs++ < 5)
                        printf("rank %d call %d byte %zu: %d, want %d\n", rank, call, i,
                               buf[i], value(call, i));
                    break;
                }
            if (buf[off + len - 1] != value(call, off + len - 1))
                errs++;
        }
        /* the operations complete, and the parents hear their children's orders */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);

    unsigned long long own = tnbc_read_pvar(session, "tnbc_bcast_own_order");
    unsigned long long by_child = tnbc_read_pvar(session, "tnbc_bcast_child_order");
    int has_child = (rank == 0 && size > 1);   /* the root: which others have children
                                                 * depends on the nodes (tnbc_bcast.c) */
    const char *on = getenv("MPIR_CVAR_TNBC_ENABLE");
    if (profile_modes_apply(mode) && on && atoi(on) == 1) {
        if (rank != 0 && own != CALLS) {
            printf("rank %d: %llu of %d calls received in the profile's order\n", rank, own,
                   CALLS);
            errs++;
        }
        if (has_child && (by_child < 1 || by_child == TNBC_PVAR_MISSING)) {
            printf("rank %d: never sent to a child in the order it reported\n", rank);
            errs++;
        }
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    if (profile[0])
        unlink(profile);

    int all;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
