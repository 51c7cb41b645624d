/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The overlap benchmark: the five scenarios of the T-NBC model (research brief, section 1).
 *
 * An application calls a collective, then computes T_CURC on unrelated data (CURC), then
 * reads the received data sub-message by sub-message at a rate R_CRC (CRC). Both are set from
 * the measured blocking collective (Tcomm, and Rcomm = bytes this rank receives / Tcomm):
 *
 *     scenario   T_CURC        R_CRC         eq. 3 overlap
 *     a          1.5 Tcomm     4   Rcomm     full (Tcomm - Tinit)
 *     b          0             0.5 Rcomm     full
 *     c          0             4   Rcomm     Tcomm Rcomm / R_CRC
 *     d          0.5 Tcomm     0.5 Rcomm     full
 *     e          0.5 Tcomm     4   Rcomm     T_CURC + Tcomm Rcomm / R_CRC
 *
 * mode=blocking is the unchanged application (MPI_Alltoall, ...: T-NBC or not is the
 * library's business); mode=nbc is the hand-written rewrite (MPI_I..., CURC, MPI_Wait, CRC).
 * Plain MPI only, so the same source builds against stock MPICH.
 *
 * Usage: tnbc_overlap [coll=alltoall|alltoallv|bcast] [bytes=N] [mode=blocking|nbc]
 *                     [iters=N] [scen=abcde] [trace=PATH] [label=NAME]
 * Rank 0 prints a header line, a 'tcomm' line, one 'scenario=' line per scenario and a
 * 'wire' line with the bytes the collectives had to move between nodes. */

#define _GNU_SOURCE             /* dladdr: which libmpi the process really loaded */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <dlfcn.h>
#endif

enum { C_ALLTOALL, C_ALLTOALLV, C_BCAST };
enum { M_CALL, M_CURC, M_WAIT, M_CRC, M_TOTAL, M_STALL, M_INCALL, M_EXPOSED, NM };

#define CHUNK 512               /* elements per CRC work step: one 4 KiB page of doubles */
#define PAGE 4096
#define BCAST_PARTS 8

/* One sub-message of the receive buffer, in elements. Its values are
 * base + stamp * 101 + 3 * (idx0 + i), exact in a double. */
struct sub {
    size_t off, n, idx0;
    double base;
};

static int rank, size;
static int coll = C_ALLTOALL, nbc;
static size_t bytes = 1048576;

/* ---- values ------------------------------------------------------------------------------ */

static double base_of(int src, int dst)
{
    return (double) src * 1000003.0 + (double) dst * 7919.0;
}

static void fill(double *p, size_t n, double base, size_t idx0, long stamp)
{
    double b = base + (double) stamp * 101.0;
    for (size_t i = 0; i < n; i++)
        p[i] = b + 3.0 * (double) (idx0 + i);
}

/* ---- CURC: floating-point work on private data, calibrated in units ---------------------- */

static double curc_data[2048];
static volatile double sink;    /* keeps the compiler from dropping the work */

static double curc_units(long units)
{
    double a = 0;
    for (long u = 0; u < units; u++)
        for (int i = 0; i < 2048; i++)
            a += curc_data[i] * curc_data[(i * 5 + u) & 2047];
    return a;
}

/* Seconds per unit on this rank, measured while the other ranks do the same (a shared core
 * must show up in the calibration, not later as a surprise). */
static double curc_calibrate(void)
{
    long units = 4;
    double t;
    for (int i = 0; i < 2048; i++)
        curc_data[i] = 1.0 / (i + 3);
    do {
        units *= 2;
        t = MPI_Wtime();
        sink += curc_units(units);
        t = MPI_Wtime() - t;
    } while (t < 0.05);
    return t / units;
}

/* ---- CRC: read the sub-messages in order, check every element, work per byte -------------- */

/* passes = work passes per CHUNK elements (fractional: carried over). touch/ready: the time
 * since t0 just before the first read of each sub-message and just after it returned (with
 * T-NBC a guarded page faults there until that sub-message has arrived). */
static long crc(const double *buf, const struct sub *sv, int nsub, long stamp, double passes,
                double t0, double *touch, double *ready)
{
    long err = 0;
    double carry = 0, acc = 0;
    for (int k = 0; k < nsub; k++) {
        const double *p = buf + sv[k].off;
        size_t n = sv[k].n;
        double b = sv[k].base + (double) stamp * 101.0;
        touch[k] = MPI_Wtime() - t0;
        if (n > 0) {
            volatile double first = p[0];
            (void) first;
        }
        ready[k] = MPI_Wtime() - t0;
        for (size_t c = 0; c < n; c += CHUNK) {
            size_t m = n - c < CHUNK ? n - c : CHUNK;
            const double *q = p + c;
            double s = 0;
            for (size_t i = 0; i < m; i++) {
                if (q[i] != b + 3.0 * (double) (sv[k].idx0 + c + i))
                    err++;
                s += q[i];
            }
            carry += passes * (double) m / CHUNK;
            long np = (long) carry;
            carry -= np;
            /* a dependent multiply-add chain over the chunk: cost per byte, data in cache */
            for (long r = 0; r < np; r++)
                for (size_t i = 0; i < m; i++)
                    s = s * 0.999999 + q[i] * 1e-9;
            acc += s;
        }
    }
    sink += acc;
    return err;
}

static double median(const double *v, int n)
{
    double *c = malloc(n * sizeof(double));
    memcpy(c, v, n * sizeof(double));
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && c[j - 1] > c[j]; j--) {
            double t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

/* Median of 3 timings of the CRC on data that is already present (ref). */
static double crc_time(const double *ref, const struct sub *sv, int nsub, long stamp,
                       double passes, double *touch, double *ready, long *err)
{
    double t[3];
    for (int r = 0; r < 3; r++) {
        double t0 = MPI_Wtime();
        *err += crc(ref, sv, nsub, stamp, passes, t0, touch, ready);
        t[r] = MPI_Wtime() - t0;
    }
    return median(t, 3);
}

/* Work passes per chunk so that the CRC over ref takes target seconds. Below the bare cost
 * of reading and checking it cannot go faster: 0 passes, and the report shows the real rate. */
static double crc_calibrate(const double *ref, const struct sub *sv, int nsub, long stamp,
                            double target, double *touch, double *ready, long *err)
{
    double t_base = crc_time(ref, sv, nsub, stamp, 0, touch, ready, err);
    if (target <= t_base)
        return 0;
    const double probe = 16;
    double t_probe = crc_time(ref, sv, nsub, stamp, probe, touch, ready, err);
    double per_pass = (t_probe - t_base) / probe;
    if (per_pass <= 0)
        return 0;
    double passes = (target - t_base) / per_pass;
    /* one correction step: the cost per pass is not quite linear (cache, frequency) */
    double t = crc_time(ref, sv, nsub, stamp, passes, touch, ready, err);
    if (t > t_base)
        passes *= (target - t_base) / (t - t_base);
    return passes;
}

/* ---- MPI_T: the T-NBC counters, when the library has them -------------------------------- */

static const char *pv_name[3] = { "tnbc_stall_ns", "tnbc_in_call_ns", "tnbc_returned_early" };

static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[3];
static int pv_found[3], pv_inited;

static void pvars_init(void)
{
    int provided, n;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    pv_inited = 1;
    MPI_T_pvar_session_create(&pv_session);
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[128], desc[256];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) != MPI_SUCCESS)
            continue;
        for (int k = 0; k < 3; k++) {
            int count;
            if (strcmp(name, pv_name[k]) != 0 || dt != MPI_UNSIGNED_LONG_LONG ||
                bind != MPI_T_BIND_NO_OBJECT)
                continue;
            if (MPI_T_pvar_handle_alloc(pv_session, i, NULL, &pv_handle[k], &count) !=
                MPI_SUCCESS || count != 1)
                continue;
            if (!cont)
                MPI_T_pvar_start(pv_session, pv_handle[k]);
            pv_found[k] = 1;
        }
    }
}

static double pvar(int k)
{
    unsigned long long v = 0;
    if (pv_found[k])
        MPI_T_pvar_read(pv_session, pv_handle[k], &v);
    return (double) v;
}

/* ---- the collectives -------------------------------------------------------------------- */

static double *sendbuf, *recvbuf;
static size_t count;            /* alltoall: per pair; bcast: total (elements) */
static int *scounts, *sdispls, *rcounts, *rdispls;

static size_t skew_count(int s, int d)
{
    size_t b = bytes * (size_t) (1 + (s + 2 * d) % 3) / 2 / 8;
    return b ? b : 1;
}

/* Inlined: the Tcomm phase and the scenarios call the collective from their own places, as an
 * application's phases do (T-NBC learns per call site whether returning early pays there). */
static inline __attribute__ ((always_inline)) void coll_start(MPI_Request *req)
{
    if (coll == C_ALLTOALL) {
        if (nbc)
            MPI_Ialltoall(sendbuf, (int) count, MPI_DOUBLE, recvbuf, (int) count, MPI_DOUBLE,
                          MPI_COMM_WORLD, req);
        else
            MPI_Alltoall(sendbuf, (int) count, MPI_DOUBLE, recvbuf, (int) count, MPI_DOUBLE,
                         MPI_COMM_WORLD);
    } else if (coll == C_ALLTOALLV) {
        if (nbc)
            MPI_Ialltoallv(sendbuf, scounts, sdispls, MPI_DOUBLE, recvbuf, rcounts, rdispls,
                           MPI_DOUBLE, MPI_COMM_WORLD, req);
        else
            MPI_Alltoallv(sendbuf, scounts, sdispls, MPI_DOUBLE, recvbuf, rcounts, rdispls,
                          MPI_DOUBLE, MPI_COMM_WORLD);
    } else {
        if (nbc)
            MPI_Ibcast(recvbuf, (int) count, MPI_DOUBLE, 0, MPI_COMM_WORLD, req);
        else
            MPI_Bcast(recvbuf, (int) count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
}

/* New values for every call (a stale buffer from the previous call fails the check). */
static void fill_send(long stamp)
{
    if (coll == C_ALLTOALL) {
        for (int d = 0; d < size; d++)
            fill(sendbuf + d * count, count, base_of(rank, d), 0, stamp);
    } else if (coll == C_ALLTOALLV) {
        for (int d = 0; d < size; d++)
            fill(sendbuf + sdispls[d], scounts[d], base_of(rank, d), 0, stamp);
    } else if (rank == 0) {
        fill(recvbuf, count, base_of(0, 0), 0, stamp);
    }
}

static void usage(const char *why)
{
    if (rank == 0)
        fprintf(stderr, "tnbc_overlap: %s\nusage: tnbc_overlap [coll=alltoall|alltoallv|bcast] "
                "[bytes=N] [mode=blocking|nbc] [iters=N] [scen=abcde] [trace=PATH] "
                "[label=NAME]\n", why);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* ---- the run's parameters, buffers and measurements -------------------------------------- */

static int iters = 10;
static const char *scen = "abcde", *trace, *label, *cname, *mname;
static const double f_curc[5] = { 1.5, 0, 0, 0.5, 0.5 };
static const double f_rcrc[5] = { 4, 0.5, 4, 0.5, 4 };

static int nsub;
static struct sub *sv;          /* the receive buffer's sub-messages */
static size_t send_n, recv_n;   /* elements */
static double *ref;             /* the expected data: CRC "alone", no communication */
static double *touch, *ready;   /* per sub-message, the last CRC's times */
static double *v, *vmax;        /* NM x iters measurements, this rank's and the max over ranks */
static long stamp = 1, calls;
static double sec_per_unit, tcomm, rcomm;

/* where the collectives cross between nodes */
static int nnodes, *node_id;
static char *nodes;
static double offnode, node_max;

static void parse_args(int argc, char *argv[])
{
    for (int a = 1; a < argc; a++) {
        char *eq = strchr(argv[a], '=');
        if (!eq)
            usage("arguments are key=value");
        const char *v = eq + 1;
        size_t kl = eq - argv[a];
        if (!strncmp(argv[a], "coll", kl) && kl == 4) {
            if (!strcmp(v, "alltoall"))
                coll = C_ALLTOALL;
            else if (!strcmp(v, "alltoallv"))
                coll = C_ALLTOALLV;
            else if (!strcmp(v, "bcast"))
                coll = C_BCAST;
            else
                usage("unknown coll");
        } else if (!strncmp(argv[a], "bytes", kl) && kl == 5) {
            bytes = strtoul(v, NULL, 0);
        } else if (!strncmp(argv[a], "mode", kl) && kl == 4) {
            if (!strcmp(v, "nbc"))
                nbc = 1;
            else if (strcmp(v, "blocking"))
                usage("unknown mode");
        } else if (!strncmp(argv[a], "iters", kl) && kl == 5) {
            iters = atoi(v);
        } else if (!strncmp(argv[a], "scen", kl) && kl == 4) {
            scen = v;
        } else if (!strncmp(argv[a], "trace", kl) && kl == 5) {
            trace = v;
        } else if (!strncmp(argv[a], "label", kl) && kl == 5) {
            label = v;
        } else {
            usage("unknown argument");
        }
    }
    if (bytes < 8 * BCAST_PARTS || iters < 1)
        usage("bytes must be >= 64 and iters >= 1");
    for (const char *s = scen; *s; s++)
        if (*s < 'a' || *s > 'e')
            usage("scenarios are letters a..e");
    cname = coll == C_ALLTOALL ? "alltoall" : coll == C_ALLTOALLV ? "alltoallv" : "bcast";
    mname = nbc ? "nbc" : "blocking";
    if (!label)
        label = mname;
}

/* The sub-messages of the receive buffer and the counts of each collective. */
static void layout(void)
{
    if (coll == C_ALLTOALL) {
        count = bytes / 8;
        send_n = recv_n = count * size;
        nsub = size;
        sv = calloc(nsub, sizeof(*sv));
        for (int s = 0; s < size; s++)
            sv[s] = (struct sub) { s * count, count, 0, base_of(s, rank) };
    } else if (coll == C_ALLTOALLV) {
        scounts = malloc(4 * size * sizeof(int));
        sdispls = scounts + size;
        rcounts = sdispls + size;
        rdispls = rcounts + size;
        send_n = recv_n = 0;
        nsub = size;
        sv = calloc(nsub, sizeof(*sv));
        for (int p = 0; p < size; p++) {
            scounts[p] = (int) skew_count(rank, p);
            sdispls[p] = (int) send_n;
            send_n += scounts[p];
            rcounts[p] = (int) skew_count(p, rank);
            rdispls[p] = (int) recv_n;
            sv[p] = (struct sub) { recv_n, rcounts[p], 0, base_of(p, rank) };
            recv_n += rcounts[p];
        }
    } else {
        count = bytes / 8;
        send_n = 0;
        recv_n = count;
        nsub = BCAST_PARTS;
        sv = calloc(nsub, sizeof(*sv));
        for (int k = 0; k < nsub; k++) {
            size_t lo = count * k / nsub, hi = count * (k + 1) / nsub;
            sv[k] = (struct sub) { lo, hi - lo, lo, base_of(0, 0) };
        }
    }
}

/* Page-aligned buffers, so that every guarded page is whole. */
static void allocate(void)
{
    void *mem = NULL;
    if (posix_memalign(&mem, PAGE, (send_n ? send_n : 1) * 8))
        MPI_Abort(MPI_COMM_WORLD, 3);
    sendbuf = mem;
    if (posix_memalign(&mem, PAGE, recv_n * 8))
        MPI_Abort(MPI_COMM_WORLD, 3);
    recvbuf = mem;
    ref = malloc(recv_n * 8);
    touch = malloc(2 * nsub * sizeof(double));
    v = malloc(NM * iters * sizeof(double));
    vmax = malloc(NM * iters * sizeof(double));
    if (!ref || !touch || !v || !vmax)
        MPI_Abort(MPI_COMM_WORLD, 3);
    ready = touch + nsub;
    memset(recvbuf, 0, recv_n * 8);
}

/* Which node each rank is on, and the payload one call must move between nodes (bcast: at
 * least one copy into every other node; the algorithm may send more). */
static void find_wire(void)
{
    char node[MPI_MAX_PROCESSOR_NAME] = { 0 };
    int nlen;
    MPI_Get_processor_name(node, &nlen);
    nodes = calloc(size, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(node, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, nodes, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, MPI_COMM_WORLD);
    node_id = malloc(size * sizeof(int));
    for (int r = 0; r < size; r++) {
        node_id[r] = -1;
        for (int q = 0; q < r && node_id[r] < 0; q++)
            if (!strcmp(nodes + q * MPI_MAX_PROCESSOR_NAME, nodes + r * MPI_MAX_PROCESSOR_NAME))
                node_id[r] = node_id[q];
        if (node_id[r] < 0)
            node_id[r] = nnodes++;
    }
    double *node_io = calloc(2 * nnodes, sizeof(double));
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++)
            if (node_id[s] != node_id[d] && coll != C_BCAST) {
                double b = 8.0 * (coll == C_ALLTOALL ? count : skew_count(s, d));
                offnode += b;
                node_io[2 * node_id[s]] += b;           /* leaves the sender's node */
                node_io[2 * node_id[d] + 1] += b;       /* enters the receiver's node */
            }
    for (int k = 0; k < 2 * nnodes; k++)
        node_max = node_io[k] > node_max ? node_io[k] : node_max;
    if (coll == C_BCAST) {
        offnode = 8.0 * count * (nnodes - 1);
        node_max = nnodes > 1 ? 8.0 * count : 0;
    }
    free(node_io);
}

/* Rank 0: which library the process really loaded, and the run's parameters. */
static void print_header(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], ver[64] = "?", dev[64] = "?";
    int llen;
    MPI_Get_library_version(lib, &llen);
    const char *p = strstr(lib, "MPICH Version:");
    if (p)
        sscanf(p + 14, " %63s", ver);
    p = strstr(lib, "MPICH Device:");
    if (p)
        sscanf(p + 13, " %63s", dev);
    if (!strstr(lib, "MPICH"))
        snprintf(ver, sizeof(ver), "%.60s", lib);
    const char *path = "?";
#ifdef __GLIBC__
    Dl_info dl;
    if (dladdr((void *) MPI_Init, &dl) && dl.dli_fname)
        path = dl.dli_fname;
#endif
    char pvs[80] = "";
    for (int k = 0; k < 3; k++)
        if (pv_found[k])
            snprintf(pvs + strlen(pvs), sizeof(pvs) - strlen(pvs), "%s%s", *pvs ? "," : "",
                     pv_name[k]);
    printf("# tnbc_overlap lib=\"MPICH %s %s\" libpath=%s pvars=%s coll=%s mode=%s "
           "label=%s tnbc=%s async=%s np=%d nodes=%d bytes=%zu iters=%d scen=%s\n", ver, dev,
           path, *pvs ? pvs : "absent", cname, mname, label,
           env_or("MPIR_CVAR_TNBC_ENABLE", "0"), env_or("MPIR_CVAR_ASYNC_PROGRESS", "0"),
           size, nnodes, bytes, iters, scen);
    printf("# overlap_pct = 100*(Tcomm + Tcomp - Ttotal)/min(Tcomm, Tcomp) (OSU style; "
           "Tcomp = CURC + CRC alone on present data); pred_ms = min(Tcomm - Tinit, "
           "T_CURC + Tcomm*Rcomm/R_CRC) (eq. 3; Tinit = Tcall, T_CURC and Tcomm*Rcomm/R_CRC "
           "= the CRC measured alone); pred_pct = 100*pred_ms/min(Tcomm, Tcomp); "
           "hidden_pct = 100*(1 - (stall + Tcall + Twait)/Tcomm); times: median over "
           "iterations of the max over ranks\n");
    fflush(stdout);
}

/* Tcomm: the blocking collective alone, until its data is in the receive buffer. With T-NBC
 * the call returns early: reading one element per page waits for the rest, so Tcomm is the
 * same thing for every library. */
static void measure_tcomm(void)
{
    MPI_Request req = MPI_REQUEST_NULL;
    nbc = 0;
    for (int it = -1; it < iters; it++, stamp++) {
        fill_send(stamp);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        coll_start(&req);
        double t1 = MPI_Wtime();
        double s = 0;
        for (size_t i = 0; i < recv_n; i += PAGE / 8)
            s += ((volatile double *) recvbuf)[i];
        s += ((volatile double *) recvbuf)[recv_n - 1];
        sink += s;
        double t2 = MPI_Wtime();
        calls++;
        if (it >= 0) {
            v[it] = t2 - t0;
            v[iters + it] = t1 - t0;
        }
    }
    nbc = strcmp(mname, "nbc") == 0;
    MPI_Allreduce(v, vmax, 2 * iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    tcomm = median(vmax, iters);
    double tcomm_call = median(vmax + iters, iters);
    rcomm = recv_n * 8 / tcomm;
    if (rank == 0) {
        printf("tcomm coll=%s label=%s np=%d bytes=%zu Tcomm_ms=%.3f Tcomm_call_ms=%.3f "
               "Rcomm_MBps=%.1f recv_bytes_rank0=%zu\n", cname, label, size, bytes, tcomm * 1e3,
               tcomm_call * 1e3, rcomm / 1e6, recv_n * 8);
        fflush(stdout);
    }
}

/* One scenario's computation without communication: its CRC pace and CURC length, and the
 * times of CURC, CRC and both alone. */
typedef struct {
    double passes;              /* CRC's pace */
    long units;                 /* CURC's length */
    double a_max[3];            /* curc, crc, both: median of 3, max over ranks (rank 0) */
    double r_crc;               /* this rank's CRC rate, bytes/s */
    long cal_stamp;
} alone_t;

static long calibrate_alone(int si, alone_t * al)
{
    long err = 0;
    double t_curc_target = f_curc[si] * tcomm;
    al->units = (long) (t_curc_target / sec_per_unit + 0.5);

    /* CRC calibrated on the expected data, then CURC + CRC alone (no communication) */
    al->cal_stamp = stamp;
    for (int k = 0; k < nsub; k++)
        fill(ref + sv[k].off, sv[k].n, sv[k].base, sv[k].idx0, al->cal_stamp);
    MPI_Barrier(MPI_COMM_WORLD);
    al->passes = crc_calibrate(ref, sv, nsub, al->cal_stamp, tcomm / f_rcrc[si], touch, ready,
                               &err);
    if (al->units > 0) {
        /* the CPU may be faster or busier than at the start: correct the CURC once */
        double t = MPI_Wtime();
        sink += curc_units(al->units);
        t = MPI_Wtime() - t;
        if (t > 0)
            al->units = (long) (al->units * t_curc_target / t + 0.5);
    }
    double alone[3][3];         /* [rep][curc, crc, both] */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < 3; r++) {
        double t0 = MPI_Wtime();
        sink += curc_units(al->units);
        double t1 = MPI_Wtime();
        err += crc(ref, sv, nsub, al->cal_stamp, al->passes, t1, touch, ready);
        double t2 = MPI_Wtime();
        alone[r][0] = t1 - t0;
        alone[r][1] = t2 - t1;
        alone[r][2] = t2 - t0;
    }
    double a_loc[3];
    for (int m = 0; m < 3; m++) {
        double c[3] = { alone[0][m], alone[1][m], alone[2][m] };
        a_loc[m] = median(c, 3);
    }
    MPI_Reduce(a_loc, al->a_max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    al->r_crc = recv_n * 8 / a_loc[1];
    return err;
}

/* The measured iterations: collective, CURC, wait (nbc), CRC on the received data. Fills v;
 * returns the data errors, *early the calls that returned early, *last_total the last
 * iteration's time. */
static long iterate(const alone_t * al, long *early, double *last_total)
{
    long err = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int it = -1; it < iters; it++, stamp++) {
        fill_send(stamp);
        double p0[3] = { pvar(0), pvar(1), pvar(2) };
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        coll_start(&req);
        double t1 = MPI_Wtime();
        sink += curc_units(al->units);
        double t2 = MPI_Wtime();
        if (nbc)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        double t3 = MPI_Wtime();
        err += crc(recvbuf, sv, nsub, stamp, al->passes, t0, touch, ready);
        double t4 = MPI_Wtime();
        double p1[3] = { pvar(0), pvar(1), pvar(2) };
        calls++;
        *last_total = t4 - t0;
        if (it < 0)
            continue;
        *early += (long) (p1[2] - p0[2]);
        double stall = (p1[0] - p0[0]) * 1e-9;
        double m[NM] = { t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, stall,
            (p1[1] - p0[1]) * 1e-9, stall + (t1 - t0) + (t3 - t2)
        };
        for (int k = 0; k < NM; k++)
            v[k * iters + it] = m[k];
    }
    return err;
}

/* Rank 0 writes the per-sub-message times of the last iteration, its own and the slowest
 * rank's (one gnuplot data block each). */
static void write_trace_file(const double *all, int n2, int slow)
{
    FILE *f = fopen(trace, "w");
    if (!f) {
        perror(trace);
        return;
    }
    fprintf(f, "# tnbc_overlap trace coll=%s label=%s np=%d bytes=%zu "
            "scenario=c (last iteration); ms since the collective call "
            "started: touch = just before the first read of the sub-message, "
            "ready = just after it returned\n# rank role sub bytes touch_ms "
            "ready_ms\n", cname, label, size, bytes);
    int who[2] = { 0, slow };
    for (int w = 0; w < 2; w++) {
        const double *t = all + who[w] * n2 + 1;
        for (int k = 0; k < nsub; k++) {
            /* the slowest rank's sizes (alltoallv) */
            size_t nb = coll == C_ALLTOALLV ? skew_count(k, who[w]) * 8 : sv[k].n * 8;
            fprintf(f, "%d %s %d %zu %.4f %.4f\n", who[w], w ? "slowest" : "rank0", k, nb,
                    t[k] * 1e3, t[nsub + k] * 1e3);
        }
        fprintf(f, "\n\n");     /* a gnuplot data block per role */
    }
    fclose(f);
}

/* per-sub-message timing of the last iteration of (c): rank 0 and the slowest rank */
static void gather_trace(double last_total)
{
    int n2 = 2 * nsub + 1;
    double *mine = malloc(n2 * sizeof(double)), *all = NULL;
    mine[0] = last_total;
    memcpy(mine + 1, touch, 2 * nsub * sizeof(double));
    if (rank == 0)
        all = malloc((size_t) n2 * size * sizeof(double));
    MPI_Gather(mine, n2, MPI_DOUBLE, all, n2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int slow = 0;
        for (int r = 1; r < size; r++)
            if (all[r * n2] > all[slow * n2])
                slow = r;
        write_trace_file(all, n2, slow);
        free(all);
    }
    free(mine);
}

/* Rank 0: one scenario's line, from the medians over iterations of the max over ranks. */
static void print_scenario(char sc, const alone_t * al, long early_all, long err_all)
{
    int si = sc - 'a';
    double md[NM];
    for (int k = 0; k < NM; k++)
        md[k] = median(vmax + k * iters, iters);
    const double *a_max = al->a_max;
    double tcomp = a_max[2], tinit = md[M_CALL], total = md[M_TOTAL];
    double ovl = tcomm + tcomp - total;
    double den = tcomm < tcomp ? tcomm : tcomp;
    double pred = tcomm - tinit < a_max[0] + a_max[1] ? tcomm - tinit : a_max[0] + a_max[1];
    printf("scenario=%c coll=%s mode=%s label=%s tnbc=%s async=%s np=%d bytes=%zu "
           "Tcomm_ms=%.3f Tinit_ms=%.3f T_CURC_target_ms=%.3f T_CURC_ms=%.3f "
           "T_CRC_ms=%.3f Tcomp_ms=%.3f R_CRC_target_x=%.1f R_CRC_MBps=%.1f "
           "R_CRC_x=%.2f Tcurc_ms=%.3f Twait_ms=%.3f Tcrc_ms=%.3f "
           "Ttotal_ms=%.3f overlap_ms=%.3f overlap_pct=%.1f pred_ms=%.3f "
           "pred_pct=%.1f hidden_pct=%.1f stall_ms=%.3f in_call_ms=%.3f early=%ld "
           "errors=%ld\n", sc, cname, mname, label,
           env_or("MPIR_CVAR_TNBC_ENABLE", "0"), env_or("MPIR_CVAR_ASYNC_PROGRESS", "0"),
           size, bytes, tcomm * 1e3, tinit * 1e3, f_curc[si] * tcomm * 1e3, a_max[0] * 1e3,
           a_max[1] * 1e3, tcomp * 1e3, f_rcrc[si], al->r_crc / 1e6, al->r_crc / rcomm,
           md[M_CURC] * 1e3, md[M_WAIT] * 1e3, md[M_CRC] * 1e3, total * 1e3,
           ovl * 1e3, 100 * ovl / den, pred * 1e3, 100 * pred / den,
           100 * (1 - md[M_EXPOSED] / tcomm), md[M_STALL] * 1e3,
           md[M_INCALL] * 1e3, early_all, err_all);
    fflush(stdout);
}

/* One scenario; returns this rank's data errors. */
static long run_scenario(char sc)
{
    alone_t al;
    long early = 0, err_all = 0, early_all = 0;
    double last_total = 0;

    long err = calibrate_alone(sc - 'a', &al);
    err += iterate(&al, &early, &last_total);
    MPI_Reduce(v, vmax, NM * iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&err, &err_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&early, &early_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (sc == 'c' && trace)
        gather_trace(last_total);
    if (rank == 0)
        print_scenario(sc, &al, early_all, err_all);
    return err;
}

/* Rank 0: the busiest node link's payload per call bounds Tcomm from below (bcast: a lower
 * bound, the algorithm may send more). */
static void print_wire(long errors_all)
{
    printf("wire coll=%s label=%s np=%d nodes=%d calls=%ld offnode_payload_per_call=%.0f "
           "offnode_payload_total=%.0f busiest_link_payload_per_call=%.0f errors=%ld\n",
           cname, label, size, nnodes, calls, offnode, offnode * calls, node_max, errors_all);
    fflush(stdout);
}

static void release(void)
{
    free(sendbuf);
    free(recvbuf);
    free(ref);
    free(touch);
    free(sv);
    free(v);
    free(vmax);
    free(nodes);
    free(node_id);
    free(scounts);
}

int main(int argc, char *argv[])
{
    long total_errors = 0, errors_all = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    parse_args(argc, argv);
    layout();
    allocate();
    pvars_init();
    find_wire();
    if (rank == 0)
        print_header();

    sec_per_unit = curc_calibrate();
    measure_tcomm();
    for (const char *sc = scen; *sc; sc++)
        total_errors += run_scenario(*sc);

    MPI_Reduce(&total_errors, &errors_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        print_wire(errors_all);
    for (int k = 0; k < 3; k++)
        if (pv_found[k])
            MPI_T_pvar_handle_free(pv_session, &pv_handle[k]);
    if (pv_inited) {
        MPI_T_pvar_session_free(&pv_session);
        MPI_T_finalize();
    }
    MPI_Finalize();
    release();
    return errors_all ? 1 : 0;
}
