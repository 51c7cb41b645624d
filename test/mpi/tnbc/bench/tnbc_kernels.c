/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Application kernels that read what a collective delivered right away (maint/bench-kernels).
 *
 *   tnbc_kernels ft  BYTES ITERS        FT-like: Alltoall of BYTES per pair (complex doubles),
 *                                       then the transpose copy, block by block in source
 *                                       order, then radix-2 FFTs over the transposed rows
 *   tnbc_kernels is  BYTES ITERS        IS-like: bucket sizes by Alltoall, the keys (about
 *                                       BYTES per pair) by Alltoallv, one counting pass
 *   tnbc_kernels crc BYTES ITERS NS     Alltoall, then a checksum of every block in source
 *                                       order taking NS nanoseconds per KiB (scenario c, with
 *                                       the read rate set by the caller; the time beyond the
 *                                       checksum itself is slept, see crc_iteration)
 *   tnbc_kernels crcrot BYTES ITERS NS  the same, but rank r reads block (r + 1 + s) mod size
 *                                       at step s: every rank reads in its own order
 *                                       (heterogeneous orders), the opposite of ring order
 *   tnbc_kernels bcast BYTES ITERS NS   rank 0 broadcasts a table of size blocks of BYTES;
 *                                       every rank checksums it block by block at NS per KiB,
 *                                       from the last block to the first (a backward sweep)
 *   tnbc_kernels bcastrot BYTES ITERS NS  the same, but rank r starts at its own block r
 *                                       and wraps (each rank its part first)
 *
 * With TNBC_KERNELS_P2P=1 the main exchange is the rewrite a user could make by hand instead:
 * MPI_Irecv of every block and MPI_Isend of every piece, then MPI_Wait for block s right
 * before it is read (IS: the bucket sizes still by MPI_Alltoall; Bcast: one MPI_Ibcast per
 * block, in the order rank 0 reads).
 *
 * Nothing is added per block to flatter overlap: the transpose and the counting pass are what
 * the codes do. Per iteration (a barrier first), rank 0 prints the maximum over ranks of:
 * the whole iteration, the time the application could not work on its own data (inside the
 * collectives or waits, plus waiting in T-NBC's fault handler, from the pvar tnbc_stall_ns
 * when the library has it) and the stall alone; then the same two as means over ranks. Data
 * are checked once at the end of every iteration. With TNBC_KERNELS_BLOCKS=<prefix>, each
 * rank appends to <prefix>.<rank>, per iteration and block (in reading order), when the
 * application came to the block and when its first word could be read (ms after the exchange
 * returned): touch and arrival, as the application sees them. With
 * TNBC_KERNELS_WAIT_RANKS="r1 r2 ...", those ranks wait in every T-NBC call while the others
 * keep the environment's choice: what processes that choose apart cost each other. */

#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../tnbc_test_pvar.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static MPI_T_pvar_session session;
static int have_stall;          /* the library is ours: it counts T-NBC's stall */

static void stall_init(void)
{
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    have_stall = tnbc_read_pvar(session, "tnbc_stall_ns") != TNBC_PVAR_MISSING;
}

static double stall_s(void)
{
    return have_stall ? tnbc_read_pvar(session, "tnbc_stall_ns") * 1e-9 : 0;
}

/* the T-NBC helper's CPU time so far (0 with another library) */
static double helper_cpu_s(void)
{
    unsigned long long ns = have_stall ? tnbc_read_pvar(session, "tnbc_helper_cpu_ns") : 0;
    return ns == TNBC_PVAR_MISSING ? 0 : ns * 1e-9;
}

/* ---- the main exchange: a collective, or the point-to-point rewrite ---- */

static int p2p;
static MPI_Request *rreq, *sreq;
static double p2p_wait;         /* seconds in MPI_Wait(all) of the rewrite, this iteration */

static void exchange_v(const void *sbuf, const int *sc, const int *sd, void *rbuf,
                       const int *rc, const int *rd, MPI_Datatype type, int rank, int size)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(type, &lb, &ext);
    for (int s = 0; s < size; s++)
        MPI_Irecv((char *) rbuf + rd[s] * ext, rc[s], type, s, 7, MPI_COMM_WORLD, &rreq[s]);
    for (int k = 1; k <= size; k++) {
        int d = (rank + k) % size;
        MPI_Isend((const char *) sbuf + sd[d] * ext, sc[d], type, d, 7, MPI_COMM_WORLD,
                  &sreq[d]);
    }
}

/* Alltoall of bytes per pair */
static void exchange(const void *sbuf, void *rbuf, size_t bytes, int rank, int size)
{
    if (!p2p) {
        MPI_Alltoall(sbuf, (int) bytes, MPI_BYTE, rbuf, (int) bytes, MPI_BYTE, MPI_COMM_WORLD);
        return;
    }
    int *c = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int));
    for (int p = 0; p < size; p++) {
        c[p] = (int) bytes;
        d[p] = (int) (p * bytes);
    }
    exchange_v(sbuf, c, d, rbuf, c, d, MPI_BYTE, rank, size);
    free(c);
    free(d);
}

static FILE *blocks_log;
static double returned;         /* when the exchange returned */
static double *touch_ms, *ready_ms;   /* per block, by the position it was read at */
static int reads;               /* blocks read so far in this iteration */

/* the application is about to read block s: len bytes at first */
static void block_ready(int s, const volatile void *first, size_t len)
{
    double t = now();
    if (p2p) {
        MPI_Wait(&rreq[s], MPI_STATUS_IGNORE);
        p2p_wait += now() - t;
    }
    /* T-NBC: waits here until the block came. Every page, as T-NBC may send a block in
     * several pieces, and in every configuration: a stall must never fall inside the block's
     * work below, whose rest is slept */
    for (size_t off = 0; off < len; off += 4096)
        (void) ((const volatile char *) first)[off];
    if (len)
        (void) ((const volatile char *) first)[len - 1];
    if (blocks_log) {
        touch_ms[reads] = (t - returned) * 1e3;
        ready_ms[reads++] = (now() - returned) * 1e3;
    }
}

static void blocks_write(int iter, int size)
{
    if (blocks_log && iter >= 0)
        for (int pos = 0; pos < size; pos++)
            fprintf(blocks_log, "%d %d %.3f %.3f\n", iter, pos, touch_ms[pos], ready_ms[pos]);
    reads = 0;
    if (blocks_log)
        fflush(blocks_log);     /* Debian's MPICH may never return from MPI_Finalize */
}

static void exchange_done(int size)
{
    if (p2p) {
        double t = now();
        for (int d = 0; d < size; d++)
            MPI_Wait(&sreq[d], MPI_STATUS_IGNORE);
        p2p_wait += now() - t;
    }
}

/* ---- FT-like ---- */

typedef struct {
    double re, im;
} cplx;

static void fft(cplx * a, int n)
{
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            cplx t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        double ang = -2 * M_PI / len;
        cplx w = { cos(ang), sin(ang) };
        for (int i = 0; i < n; i += len) {
            cplx u = { 1, 0 };
            for (int k = 0; k < len / 2; k++) {
                cplx x = a[i + k], y = a[i + k + len / 2];
                cplx t = { y.re * u.re - y.im * u.im, y.re * u.im + y.im * u.re };
                a[i + k] = (cplx) { x.re + t.re, x.im + t.im };
                a[i + k + len / 2] = (cplx) { x.re - t.re, x.im - t.im };
                u = (cplx) { u.re * w.re - u.im * w.im, u.re * w.im + u.im * w.re };
            }
        }
    }
}

/* A block from source s holds rows x cols of the source's slab; after the transpose this rank
 * holds, for each of its cols, a row of length size * rows (s's rows at s * rows). */
static double ft_iteration(int rank, int size, int iter, size_t bytes, cplx * sbuf, cplx * rbuf,
                           cplx * t, int rows, int cols, double *wait, int *errs)
{
    size_t per = bytes / sizeof(cplx);
    int n = size * rows;
    for (int d = 0; d < size; d++)
        for (size_t i = 0; i < per; i++)
            sbuf[d * per + i] = (cplx) { rank + iter * 0.5, d + i * 1e-6 };
    double t0 = now();
    exchange(sbuf, rbuf, bytes, rank, size);
    returned = now();
    *wait = returned - t0;
    for (int s = 0; s < size; s++) {
        const cplx *b = rbuf + s * per;
        block_ready(s, b, bytes);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                t[(size_t) c * n + s * rows + r] = b[(size_t) r * cols + c];
    }
    exchange_done(size);
    for (int s = 0; s < size; s++)
        if (t[s * rows].re != s + iter * 0.5 || t[s * rows].im != rank) {
            (*errs)++;
            break;
        }
    for (int c = 0; c < cols; c++)
        fft(t + (size_t) c * n, n);
    return now() - t0;
}

/* ---- IS-like ---- */

static uint32_t rng(uint64_t * s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t) (*s >> 33);
}

static double is_iteration(int rank, int size, int iter, size_t bytes, uint32_t * keys,
                           size_t nkeys, uint32_t * recv, size_t recv_cap, uint32_t * hist,
                           double *wait, int *errs)
{
    const uint32_t range = 1u << 24;
    int *scount = calloc(size, sizeof(int)), *rcount = calloc(size, sizeof(int));
    int *sdisp = calloc(size, sizeof(int)), *rdisp = calloc(size, sizeof(int));
    uint64_t seed = (uint64_t) rank * 977 + iter;
    /* NPB IS draws keys as the mean of four uniforms: buckets of unequal size */
    for (size_t i = 0; i < nkeys; i++) {
        uint64_t k = 0;
        for (int j = 0; j < 4; j++)
            k += rng(&seed) % range;
        keys[i] = (uint32_t) (k / 4);
    }
    /* bucket by destination (key range split evenly), counting sort into the send buffer */
    uint32_t *sorted = malloc(nkeys * sizeof(uint32_t));
    for (size_t i = 0; i < nkeys; i++)
        scount[(uint64_t) keys[i] * size / range]++;
    for (int d = 1; d < size; d++)
        sdisp[d] = sdisp[d - 1] + scount[d - 1];
    int *fill = calloc(size, sizeof(int));
    for (size_t i = 0; i < nkeys; i++) {
        int d = (int) ((uint64_t) keys[i] * size / range);
        sorted[sdisp[d] + fill[d]++] = keys[i];
    }
    double t0 = now();
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    for (int s = 0; s < size; s++) {
        rdisp[s] = (int) total;
        total += rcount[s];
    }
    if (total > recv_cap) {
        fprintf(stderr, "IS: %zu keys do not fit\n", total);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (p2p)
        exchange_v(sorted, scount, sdisp, recv, rcount, rdisp, MPI_UINT32_T, rank, size);
    else
        MPI_Alltoallv(sorted, scount, sdisp, MPI_UINT32_T, recv, rcount, rdisp, MPI_UINT32_T,
                      MPI_COMM_WORLD);
    returned = now();
    *wait = returned - t0;
    /* one counting pass over the keys, in the order they sit in the buffer */
    uint32_t lo = (uint32_t) ((uint64_t) range * rank / size);
    uint32_t width = (uint32_t) ((uint64_t) range * (rank + 1) / size) - lo;
    memset(hist, 0, (size_t) width * sizeof(uint32_t));
    size_t bad = 0;
    for (int s = 0; s < size; s++) {
        block_ready(s, recv + rdisp[s], (size_t) rcount[s] * sizeof(uint32_t));
        for (size_t i = rdisp[s]; i < (size_t) rdisp[s] + rcount[s]; i++) {
            uint32_t k = recv[i] - lo;
            if (k < width)
                hist[k]++;
            else
                bad++;
        }
    }
    exchange_done(size);
    double t = now() - t0;
    if (bad)
        (*errs)++;
    (void) bytes;
    free(sorted);
    free(fill);
    free(scount);
    free(rcount);
    free(sdisp);
    free(rdisp);
    return t;
}

/* ---- scenario c: a checksum pass at a set rate ---- */

static volatile uint64_t sink;
static int rotated;             /* crcrot: each rank reads from the next rank's block on */

static double crc_iteration(int rank, int size, int iter, size_t bytes, uint64_t * sbuf,
                            uint64_t * rbuf, double ns_per_kib, double *wait, int *errs)
{
    size_t per = bytes / sizeof(uint64_t);
    for (int d = 0; d < size; d++)
        for (size_t i = 0; i < per; i++)
            sbuf[d * per + i] = ((uint64_t) rank << 40) ^ ((uint64_t) d << 20) ^ i ^ iter;
    double t0 = now();
    exchange(sbuf, rbuf, bytes, rank, size);
    returned = now();
    *wait = returned - t0;
    double per_block = ns_per_kib * 1e-9 * bytes / 1024;
    uint64_t sum = 0;
    for (int step = 0; step < size; step++) {
        int s = rotated ? (rank + 1 + step) % size : step;
        const uint64_t *b = rbuf + s * per;
        block_ready(s, b, bytes);
        double start = now();
        for (size_t i = 0; i < per; i++)
            sum = sum * 31 + b[i];
        if (b[0] != (((uint64_t) s << 40) ^ ((uint64_t) rank << 20) ^ (uint64_t) iter))
            (*errs)++;
        /* the rest of the block's work, as a sleep: with more ranks than this machine's
         * cores, spinning would take the CPU that the network and the other ranks need, which
         * a node with a core per rank does not lack */
        double rest = per_block - (now() - start);
        if (rest > 0) {
            struct timespec ts = {.tv_sec = (time_t) rest,
                .tv_nsec = (long) ((rest - (time_t) rest) * 1e9) };
            nanosleep(&ts, NULL);
        }
    }
    exchange_done(size);
    sink += sum;
    return now() - t0;
}

/* ---- Bcast: a table every rank reads at once, in an order of its own ---- */

static int bcast_own_first;     /* bcastrot: rank r reads from its own block on */

static int bcast_block(int rank, int size, int step)
{
    return bcast_own_first ? (rank + step) % size : size - 1 - step;
}

static double bcast_iteration(int rank, int size, int iter, size_t bytes, uint64_t * buf,
                              double ns_per_kib, double *wait, int *errs)
{
    size_t per = bytes / sizeof(uint64_t);
    if (rank == 0)
        for (int s = 0; s < size; s++)
            for (size_t i = 0; i < per; i++)
                buf[s * per + i] = ((uint64_t) s << 40) ^ i ^ (uint64_t) iter;
    double t0 = now();
    if (!p2p) {
        MPI_Bcast(buf, (int) (bytes * size), MPI_BYTE, 0, MPI_COMM_WORLD);
    } else {
        /* every process must start the Ibcasts in one order: rank 0's */
        for (int step = 0; step < size; step++) {
            int s = bcast_block(0, size, step);
            MPI_Ibcast(buf + s * per, (int) bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &rreq[s]);
        }
    }
    returned = now();
    *wait = returned - t0;
    double per_block = ns_per_kib * 1e-9 * bytes / 1024;
    uint64_t sum = 0;
    for (int step = 0; step < size; step++) {
        int s = bcast_block(rank, size, step);
        const uint64_t *b = buf + s * per;
        block_ready(s, b, bytes);
        double start = now();
        for (size_t i = 0; i < per; i++)
            sum = sum * 31 + b[i];
        if (b[0] != (((uint64_t) s << 40) ^ (uint64_t) iter) ||
            b[per - 1] != (((uint64_t) s << 40) ^ (per - 1) ^ (uint64_t) iter))
            (*errs)++;
        double rest = per_block - (now() - start);      /* as in crc_iteration */
        if (rest > 0) {
            struct timespec ts = {.tv_sec = (time_t) rest,
                .tv_nsec = (long) ((rest - (time_t) rest) * 1e9) };
            nanosleep(&ts, NULL);
        }
    }
    sink += sum;
    return now() - t0;
}

/* Before MPI_Init, so the rank is the launcher's (PMI_RANK). */
static void wait_ranks_from_env(void)
{
    const char *list = getenv("TNBC_KERNELS_WAIT_RANKS"), *me = getenv("PMI_RANK");
    if (!list || !me)
        return;
    long my_rank = atol(me);
    for (const char *p = list;;) {
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p)
            return;
        if (r == my_rank) {
            setenv("MPIR_CVAR_TNBC_RETURN", "wait", 1);
            return;
        }
        for (p = end; *p == ',' || *p == ' '; p++);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    wait_ranks_from_env();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int crc = argc >= 2 && (!strcmp(argv[1], "crc") || !strcmp(argv[1], "crcrot"));
    int bcast = argc >= 2 && (!strcmp(argv[1], "bcast") || !strcmp(argv[1], "bcastrot"));
    if (argc < 4 || (strcmp(argv[1], "ft") && strcmp(argv[1], "is") && !crc && !bcast) ||
        ((crc || bcast) && argc < 5)) {
        if (rank == 0)
            fprintf(stderr, "usage: tnbc_kernels ft|is|crc|crcrot|bcast|bcastrot BYTES ITERS "
                    "[NS_PER_KIB]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *kernel = argv[1];
    size_t bytes = strtoull(argv[2], NULL, 10);
    int iters = atoi(argv[3]);
    double ns_per_kib = argc > 4 ? atof(argv[4]) : 0;
    rotated = !strcmp(kernel, "crcrot");
    bcast_own_first = !strcmp(kernel, "bcastrot");
    stall_init();
    p2p = getenv("TNBC_KERNELS_P2P") && atoi(getenv("TNBC_KERNELS_P2P"));
    rreq = malloc(size * sizeof(MPI_Request));
    sreq = malloc(size * sizeof(MPI_Request));
    touch_ms = calloc(size, sizeof(double));
    ready_ms = calloc(size, sizeof(double));
    if (getenv("TNBC_KERNELS_BLOCKS") && *getenv("TNBC_KERNELS_BLOCKS")) {
        char path[4096];
        snprintf(path, sizeof(path), "%s.%d", getenv("TNBC_KERNELS_BLOCKS"), rank);
        blocks_log = fopen(path, "w");
    }

    /* FT: rows x cols complex doubles per block, the transposed rows a power of two long */
    int rows = 1, cols;
    while ((size_t) rows * rows * 2 * sizeof(cplx) <= bytes)
        rows *= 2;
    cols = (int) (bytes / sizeof(cplx) / rows);
    int n = size * rows;
    if (!strcmp(kernel, "ft") && (n & (n - 1))) {
        if (rank == 0)
            fprintf(stderr, "ft: the number of ranks must be a power of two\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    bytes = !strcmp(kernel, "ft") ? (size_t) rows * cols * sizeof(cplx) : bytes / 64 * 64;

    void *sbuf = NULL, *rbuf = NULL, *tbuf = NULL, *hist = NULL;
    size_t nkeys = bytes / sizeof(uint32_t) * size;
    size_t recv_cap = nkeys * size;     /* the middle buckets get far more than their share */
    posix_memalign(&sbuf, 4096, bytes * size + 4096);
    posix_memalign(&rbuf, 4096, (!strcmp(kernel, "is") ? recv_cap * 4 : bytes * size) + 4096);
    posix_memalign(&tbuf, 4096, bytes * size + 4096);
    hist = malloc((1u << 24) / size * sizeof(uint32_t) + 64);
    if (rank == 0)
        printf("# tnbc_kernels kernel=%s ranks=%d bytes_per_pair=%zu iters=%d ns_per_kib=%.1f "
               "stall_pvar=%d p2p=%d\n", kernel, size, bytes, iters, ns_per_kib, have_stall, p2p);

    double loop_start = MPI_Wtime(), helper_start = 0;
    for (int it = -1; it < iters; it++) {
        double wait = 0, total;
        if (it == 0) {
            loop_start = MPI_Wtime();
            helper_start = helper_cpu_s();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double s0 = stall_s();
        p2p_wait = 0;
        if (!strcmp(kernel, "ft"))
            total = ft_iteration(rank, size, it, bytes, sbuf, rbuf, tbuf, rows, cols, &wait,
                                 &errs);
        else if (!strcmp(kernel, "is"))
            total = is_iteration(rank, size, it, bytes, sbuf, nkeys, rbuf, recv_cap, hist,
                                 &wait, &errs);
        else if (bcast)
            total = bcast_iteration(rank, size, it, bytes, rbuf, ns_per_kib, &wait, &errs);
        else
            total = crc_iteration(rank, size, it, bytes, sbuf, rbuf, ns_per_kib, &wait, &errs);
        blocks_write(it, size);
        double stall = stall_s() - s0;
        double v[3] = { total, wait + p2p_wait + stall, stall }, m[3], sum[3];
        MPI_Reduce(v, m, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(v, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && it >= 0)
            printf("iter=%d total_ms=%.3f wait_ms=%.3f stall_ms=%.3f wait_mean_ms=%.3f "
                   "stall_mean_ms=%.3f\n", it, m[0] * 1e3, m[1] * 1e3, m[2] * 1e3,
                   sum[1] * 1e3 / size, sum[2] * 1e3 / size);
    }
    /* what the helper thread cost, against the loop's time: the driver charges it to the
     * rank's CPU share (on a core per rank the helper runs on the rank's core) */
    double h[2] = { helper_cpu_s() - helper_start, MPI_Wtime() - loop_start }, hmax[2], hsum[2];
    MPI_Reduce(h, hmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(h, hsum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && have_stall)
        printf("helper_cpu_mean_ms=%.3f helper_cpu_max_ms=%.3f loop_ms=%.3f\n",
               hsum[0] * 1e3 / size, hmax[0] * 1e3, hmax[1] * 1e3);
    int all;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("errors=%d\n", all);
    if (blocks_log)
        fclose(blocks_log);
    MPI_T_finalize();
    /* Debian's MPICH can hang in MPI_Finalize over TCP: the driver sets this for the stock
     * library, whose finalize it does not measure */
    if (getenv("TNBC_KERNELS_SKIP_FINALIZE")) {
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
        _exit(0);
    }
    MPI_Finalize();
    return 0;
}
