/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Nonblocking collectives with T-NBC: every MPI_I<coll> T-NBC takes, its data checked after the
 * request completes, the request completed in each way MPI offers (Wait, a Test loop, Waitall
 * with point-to-point requests, Waitany, Waitsome, Request_get_status then Wait, Testall), and
 * several calls in flight at once, completed in another order than started, mixed with
 * blocking collectives. A receive type freed right after the call (the unpack happens after
 * the call returned), v-layouts whose int counts the binding converts into arrays it frees when
 * it returns, MPI_Request_free refused as MPICH refuses it, statuses of completed collectives. */

#include "mpitest.h"
#include "tnbc_test_pvar.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, errs;
static MPI_T_pvar_session session;
/* the request being completed is T-NBC's: its status must be empty (MPICH's own leave the
 * fields of whatever request object was reused, so only T-NBC's are checked) */
static int request_is_ours;

static unsigned long long calls_taken(void)
{
    return tnbc_read_pvar(session, "tnbc_returned_early") +
        tnbc_read_pvar(session, "tnbc_waited_in_call");
}

enum { WAIT, TEST, WAITALL_P2P, WAITANY, WAITSOME, GET_STATUS, TESTALL, NCOMPLETE };
static const char *complete_names[] = { "Wait", "Test", "Waitall+p2p", "Waitany", "Waitsome",
    "Request_get_status", "Testall"
};

static int value(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i;
}

static void expect(const int *buf, long i, int want, const char *what)
{
    if (buf[i] != want) {
        if (errs < 10)
            fprintf(stderr, "rank %d %s [%ld]: got %d expected %d\n", rank, what, i, buf[i],
                    want);
        errs++;
    }
}

static void check_status(const MPI_Status * st, const char *what)
{
    int count = -1, cancelled = -1;
    if (!request_is_ours)
        return;
    MPI_Get_count(st, MPI_INT, &count);
    MPI_Test_cancelled(st, &cancelled);
    if (count != 0 || cancelled || st->MPI_SOURCE != MPI_ANY_SOURCE ||
        st->MPI_TAG != MPI_ANY_TAG) {
        if (errs < 10)
            fprintf(stderr, "rank %d %s: status count %d cancelled %d source %d tag %d\n", rank,
                    what, count, cancelled, st->MPI_SOURCE, st->MPI_TAG);
        errs++;
    }
}

/* Complete req the way how says, with a point-to-point exchange around the ring beside it where
 * the way takes several requests. */
static void complete(MPI_Request * req, int how, const char *what)
{
    MPI_Status st;
    int flag = 0, idx, outcount, idxs[3];
    int token_out = rank, token_in = -1;
    MPI_Request reqs[3] = { *req, MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    MPI_Status sts[3];

    switch (how) {
        case WAIT:
            MPI_Wait(req, &st);
            check_status(&st, what);
            break;
        case TEST:
            while (!flag)
                MPI_Test(req, &flag, &st);
            check_status(&st, what);
            break;
        case GET_STATUS:
            /* MPICH's MPI_Request_get_status fills no status for a collective's request */
            while (!flag)
                MPI_Request_get_status(*req, &flag, MPI_STATUS_IGNORE);
            MPI_Wait(req, &st);
            check_status(&st, what);
            break;
        default:
            MPI_Irecv(&token_in, 1, MPI_INT, (rank + size - 1) % size, 7, MPI_COMM_WORLD,
                      &reqs[1]);
            MPI_Isend(&token_out, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD, &reqs[2]);
            if (how == WAITALL_P2P) {
                MPI_Waitall(3, reqs, sts);
                check_status(&sts[0], what);
            } else if (how == TESTALL) {
                while (!flag)
                    MPI_Testall(3, reqs, &flag, sts);
                check_status(&sts[0], what);
            } else {
                for (int left = 3; left > 0;) {
                    if (how == WAITANY) {
                        MPI_Waitany(3, reqs, &idx, &st);
                        if (idx == 0)
                            check_status(&st, what);
                        left--;
                    } else {
                        MPI_Waitsome(3, reqs, &outcount, idxs, sts);
                        for (int k = 0; k < outcount; k++)
                            if (idxs[k] == 0)
                                check_status(&sts[k], what);
                        left -= outcount;
                    }
                }
            }
            *req = reqs[0];
            if (*req != MPI_REQUEST_NULL || token_in != (rank + size - 1) % size) {
                fprintf(stderr, "rank %d %s: request %s, token %d\n", rank, what,
                        *req != MPI_REQUEST_NULL ? "not freed" : "freed", token_in);
                errs++;
            }
    }
}

static void ialltoall(int n, int how)
{
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * sizeof(int));
    MPI_Request req;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++) {
            s[(long) p * n + i] = value(rank, p, i);
            r[(long) p * n + i] = -1;
        }
    unsigned long long before = calls_taken();
    MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &req);
    request_is_ours = (calls_taken() != before);
    complete(&req, how, complete_names[how]);
    memset(s, 0, (size_t) size * n * sizeof(int));     /* the send buffer is ours again */
    for (int p = size - 1; p >= 0; p--)
        for (int i = 0; i < n; i++)
            expect(r, (long) p * n + i, value(p, rank, i), "Ialltoall");
    free(s);
    free(r);
}

/* uneven pieces, int counts: the binding's converted arrays are gone when we wait */
static void ialltoallv(int n)
{
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int)), st = 0, rt = 0;
    for (int p = 0; p < size; p++) {
        sc[p] = n + ((rank + 2 * p) % 3) * 17;
        rc[p] = n + ((p + 2 * rank) % 3) * 17;
    }
    for (int p = size - 1; p >= 0; p--) {
        sd[p] = st;
        rd[p] = rt;
        st += sc[p];
        rt += rc[p];
    }
    int *s = malloc(st * sizeof(int)), *r = malloc(rt * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < sc[p]; i++)
            s[sd[p] + i] = value(rank, p, i);
    for (int i = 0; i < rt; i++)
        r[i] = -1;
    MPI_Request req;
    MPI_Ialltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < rc[p]; i++)
            expect(r, rd[p] + i, value(p, rank, i), "Ialltoallv");
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* A strided receive type: T-NBC receives into a temporary space and unpacks once the data is
 * in, after the call returned; the type is freed before that. */
static void ialltoall_strided(int n)
{
    MPI_Datatype strided;
    MPI_Type_vector(n, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    long extent = 2L * n - 1;
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc(size * extent * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            s[(long) p * n + i] = value(rank, p, i);
    for (long i = 0; i < size * extent; i++)
        r[i] = -1;
    MPI_Request req;
    MPI_Ialltoall(s, n, MPI_INT, r, 1, strided, MPI_COMM_WORLD, &req);
    MPI_Type_free(&strided);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int p = 0; p < size; p++)
        for (long i = 0; i < extent; i++)
            expect(r, p * extent + i, i % 2 ? -1 : value(p, rank, (int) (i / 2)),
                   "Ialltoall strided");
    free(s);
    free(r);
}

static void ibcast(int n, int root, int strided)
{
    MPI_Datatype type = MPI_INT;
    long len = strided ? 2L * n - 1 : n;
    int *b = malloc(len * sizeof(int));
    if (strided) {
        MPI_Type_vector(n, 1, 2, MPI_INT, &type);
        MPI_Type_commit(&type);
    }
    for (long i = 0; i < len; i++)
        b[i] = (rank == root && i % (strided + 1) == 0) ? value(root, 0, (int) i) : -1;
    MPI_Request req;
    MPI_Ibcast(b, strided ? 1 : n, type, root, MPI_COMM_WORLD, &req);
    if (strided)
        MPI_Type_free(&type);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (long i = len - 1; i >= 0; i--)
        expect(b, i, i % (strided + 1) ? -1 : value(root, 0, (int) i), "Ibcast");
    free(b);
}

static void igather_family(int n, int root)
{
    int *s = malloc(n * sizeof(int)), *r = malloc((size_t) size * n * sizeof(int));
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    MPI_Request req[4];
    for (int p = 0; p < size; p++) {
        counts[p] = n;
        displs[p] = (size - 1 - p) * n;
    }
    /* Iallgather */
    for (int i = 0; i < n; i++)
        s[i] = value(rank, 0, i);
    MPI_Iallgather(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            expect(r, (long) p * n + i, value(p, 0, i), "Iallgather");
    /* Iallgatherv, reversed pieces */
    MPI_Iallgatherv(s, n, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            expect(r, displs[p] + i, value(p, 0, i), "Iallgatherv");
    /* Igather and Igatherv */
    for (long i = 0; i < (long) size * n; i++)
        r[i] = -1;
    MPI_Igather(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                expect(r, (long) p * n + i, value(p, 0, i), "Igather");
    MPI_Igatherv(s, n, MPI_INT, r, counts, displs, MPI_INT, root, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                expect(r, displs[p] + i, value(p, 0, i), "Igatherv");
    /* Iscatter and Iscatterv */
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                r[(long) p * n + i] = value(root, p, i);
    MPI_Iscatter(r, n, MPI_INT, s, n, MPI_INT, root, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        expect(s, i, value(root, rank, i), "Iscatter");
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                r[displs[p] + i] = value(root, p, i + 1);
    MPI_Iscatterv(r, counts, displs, MPI_INT, s, n, MPI_INT, root, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        expect(s, i, value(root, rank, i + 1), "Iscatterv");
    free(s);
    free(r);
    free(counts);
    free(displs);
}

static void ireductions(int n, int root)
{
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * sizeof(int));
    int *counts = malloc(size * sizeof(int));
    MPI_Request req;
    for (long i = 0; i < (long) size * n; i++)
        s[i] = value(rank, 0, (int) (i % 1000));
    int sum_ranks = size * (size - 1) / 2;
    MPI_Iallreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        expect(r, i, size * value(0, 0, i % 1000) + 1000003 * sum_ranks, "Iallreduce");
    for (int i = 0; i < n; i++)
        r[i] = -1;
    MPI_Ireduce(s, rank == root ? r : NULL, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == root)
        for (int i = 0; i < n; i++)
            expect(r, i, size * value(0, 0, i % 1000) + 1000003 * sum_ranks, "Ireduce");
    MPI_Ireduce_scatter_block(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        expect(r, i, size * value(0, 0, (int) (((long) rank * n + i) % 1000)) +
               1000003 * sum_ranks, "Ireduce_scatter_block");
    for (int p = 0; p < size; p++)
        counts[p] = n;
    MPI_Ireduce_scatter(s, r, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        expect(r, i, size * value(0, 0, (int) (((long) rank * n + i) % 1000)) +
               1000003 * sum_ranks, "Ireduce_scatter");
    MPI_Iscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        expect(r, i, (rank + 1) * value(0, 0, i % 1000) + 1000003 * (rank * (rank + 1) / 2),
               "Iscan");
    MPI_Iexscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank > 0)
        for (int i = 0; i < n; i++)
            expect(r, i, rank * value(0, 0, i % 1000) + 1000003 * (rank * (rank - 1) / 2),
                   "Iexscan");
    free(s);
    free(r);
    free(counts);
}

/* a ring: each process sends piece 0 to its left and piece 1 to its right */
static void ineighbor(int n)
{
    MPI_Comm ring;
    int periods = 1, dims = size;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &ring);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int *s = malloc(2 * n * sizeof(int)), *r = malloc(2 * n * sizeof(int));
    for (int i = 0; i < n; i++) {
        s[i] = value(rank, left, i);
        s[n + i] = value(rank, right, i);
        r[i] = r[n + i] = -1;
    }
    MPI_Request req;
    MPI_Ineighbor_alltoall(s, n, MPI_INT, r, n, MPI_INT, ring, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) {
        expect(r, i, value(left, rank, i), "Ineighbor_alltoall");
        expect(r, n + i, value(right, rank, i), "Ineighbor_alltoall");
    }
    int counts[2] = { n, n }, displs[2] = { n, 0 };
    MPI_Ineighbor_allgatherv(s, n, MPI_INT, r, counts, displs, MPI_INT, ring, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) {
        expect(r, n + i, value(left, (left + size - 1) % size, i), "Ineighbor_allgatherv");
        expect(r, i, value(right, rank, i), "Ineighbor_allgatherv");
    }
    free(s);
    free(r);
    MPI_Comm_free(&ring);
}

/* Three calls in flight, a blocking one in between, completed in reverse order. */
static void in_flight(int n)
{
    int *a_s = malloc((size_t) size * n * sizeof(int)), *a_r = malloc((size_t) size * n * 4);
    int *b = malloc(n * sizeof(int)), *c_s = malloc(n * sizeof(int)), *c_r = malloc(n * 4);
    int *d = malloc((size_t) size * n * sizeof(int)), *d_r = malloc((size_t) size * n * 4);
    MPI_Request req[3];
    for (long i = 0; i < (long) size * n; i++) {
        a_s[i] = value(rank, (int) (i / n), (int) (i % n));
        d[i] = value(rank, (int) (i / n), (int) (i % n)) + 1;
    }
    for (int i = 0; i < n; i++) {
        b[i] = rank == 0 ? value(0, 1, i) : -1;
        c_s[i] = rank;
    }
    MPI_Ialltoall(a_s, n, MPI_INT, a_r, n, MPI_INT, MPI_COMM_WORLD, &req[0]);
    MPI_Ibcast(b, n, MPI_INT, 0, MPI_COMM_WORLD, &req[1]);
    MPI_Alltoall(d, n, MPI_INT, d_r, n, MPI_INT, MPI_COMM_WORLD);
    MPI_Iallreduce(c_s, c_r, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req[2]);
    for (int k = 2; k >= 0; k--)
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
    for (long i = 0; i < (long) size * n; i++) {
        expect(a_r, i, value((int) (i / n), rank, (int) (i % n)), "in flight Ialltoall");
        expect(d_r, i, value((int) (i / n), rank, (int) (i % n)) + 1, "in flight Alltoall");
    }
    for (int i = 0; i < n; i++) {
        expect(b, i, value(0, 1, i), "in flight Ibcast");
        expect(c_r, i, size - 1, "in flight Iallreduce");
    }
    free(a_s);
    free(a_r);
    free(b);
    free(c_s);
    free(c_r);
    free(d);
    free(d_r);
}

/* MPI forbids MPI_Request_free of a nonblocking collective's request: MPICH says so with an
 * error, and the request stays valid; so does ours. */
static void request_free_refused(int n)
{
    int *s = malloc((size_t) size * n * sizeof(int)), *r = malloc((size_t) size * n * 4);
    for (long i = 0; i < (long) size * n; i++)
        s[i] = value(rank, (int) (i / n), (int) (i % n));
    MPI_Request req;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Ialltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &req);
    int rc = MPI_Request_free(&req);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rc == MPI_SUCCESS || req == MPI_REQUEST_NULL) {
        fprintf(stderr, "rank %d: MPI_Request_free of a collective's request: rc %d\n", rank, rc);
        errs++;
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (long i = 0; i < (long) size * n; i++)
            expect(r, i, value((int) (i / n), rank, (int) (i % n)), "after Request_free");
    }
    free(s);
    free(r);
}

int main(int argc, char *argv[])
{
    const int counts[] = { 1, 1024, 3000, 65536 };

    MTest_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        for (int how = 0; how < NCOMPLETE; how++)
            ialltoall(n, how);
        ialltoallv(n);
        ialltoall_strided(n);
        for (int root = 0; root < size; root++) {
            ibcast(n, root, 0);
            ibcast(n, root, 1);
            igather_family(n, root);
            ireductions(n, root);
        }
        ineighbor(n);
        in_flight(n);
    }
    request_free_refused(4096);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MTest_Finalize(errs);
    return MTestReturnValue(errs);
}
