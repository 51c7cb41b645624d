/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Where access orders come from (tnbc_priority.h holds the orders themselves):
 * - trace runs (MPIR_CVAR_TNBC_TRACE): the collective completes in the call, then its receive
 *   buffer is guarded anyway (MPIR_PAGEGUARD_TRACE) and kept until the next collective handled
 *   by T-NBC, or finalize; every first touch is recorded and written per rank at finalize;
 * - a profile (MPIR_CVAR_TNBC_PROFILE), merged from traces by maint/tnbc-profile;
 * - online learning: the page faults of earlier calls of the same call site (tnbc_op.c feeds
 *   them in when an operation is freed); where they cannot tell the order, a sample: one call
 *   of the site is recorded as in a trace run.
 * A call site is the application's call (its return address, as an offset in its object, so
 * that it is the same in every run of the binary) with the collective and its shape. */

#include "mpiimpl.h"
#include "tnbc_access.h"
#include "tnbc_message.h"
#include "tnbc_util.h"
#include "mpir_pageguard.h"

#include <unistd.h>

#include <dlfcn.h>
#include <stdio.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_TRACE
      category    : TNBC
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Trace run: a path prefix. Collectives handled by T-NBC complete inside the call; their
        receive buffers are guarded anyway and the first touch of every block (the piece from
        one source rank) is recorded, with the time computed before each call and spent in it.
        Each rank writes <prefix>.<rank>.trace at MPI_Finalize; maint/tnbc-profile merges them
        into a profile (MPIR_CVAR_TNBC_PROFILE) and a plot, maint/tnbc-predict --trace replays
        them on a model cluster.

    - name        : MPIR_CVAR_TNBC_PROFILE
      category    : TNBC
      type        : string
      default     : ""
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        A profile written by maint/tnbc-profile: the order in which the application reads the
        blocks of each call site's receive buffer. Matching calls receive their blocks in that
        order; other call sites learn theirs online. A profile that cannot be read is reported
        and ignored.

    - name        : MPIR_CVAR_TNBC_PRIORITIES
      category    : TNBC
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Use the order in which the application reads a collective's blocks (from
        MPIR_CVAR_TNBC_PROFILE or learnt from earlier calls of the same call site) for node
        arbitration, and with MPIR_CVAR_TNBC_RECV_ORDER for receive posting. Off: ring order,
        first in first out.

    - name        : MPIR_CVAR_TNBC_SAMPLE_GAP
      category    : TNBC
      type        : int
      default     : 8
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        Online learning sees only the blocks read before they arrived. When those cannot tell
        a call site's access order (one block, or blocks in the order already known), and the
        order steers something (a Bcast's segments; Alltoall(v) with
        MPIR_CVAR_TNBC_NODE_ARBITRATION or MPIR_CVAR_TNBC_RECV_ORDER), one of the site's next
        calls is a sample: it completes inside the call, as in a trace run, and its first
        touches give the whole order. At most one call in this many per site is a sample, and
        none once a sample found the order unchanged, until faults move blocks again. The
        sampled buffer stays guarded until its first touches, the next T-NBC collective or an
        MPI routine that uses it. 0: never.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* Trace regions kept for their first touches; the oldest goes when a new one needs a slot. */
#define MPII_TNBC_TRACE_HELD 8

typedef struct {
    MPIR_Pageguard_region_t *region;
    uintptr_t lo, hi;           /* the buffer */
    MPIR_Tnbc_site_t *site;
    int *sub_block;             /* per receive sub-message: its block */
    int nsub;
    uint64_t t_return_ns;
    uint64_t compute_ns;        /* since the previous traced call returned (0: the first) */
    uint64_t call_ns;           /* in this call */
    unsigned long call;         /* number of this call in the trace */
} MPII_Tnbc_held_t;

static struct {
    MPIR_Tnbc_sites_t sites;
    int tracing;
    char *trace_prefix;         /* a copy: MPI_T_finalize frees the CVAR's string */
    MPII_Tnbc_held_t held[MPII_TNBC_TRACE_HELD];
    unsigned long calls;
    uint64_t last_return_ns;    /* of the previous traced call */
    char *log;                  /* trace lines, written at finalize */
    size_t log_len, log_cap;
} orders;

MPL_TLS const void *MPIR_Tnbc_user_caller;
int MPIR_Tnbc_regions_held;   /* entries of orders.held in use */

static int read_file(const char *path, char **text)
{
    FILE *f = fopen(path, "r");
    size_t cap = 4096, len = 0;
    char *buf = MPL_malloc(cap, MPL_MEM_COLL);
    if (!f || !buf) {
        if (f)
            fclose(f);
        MPL_free(buf);
        return -1;
    }
    for (size_t n; (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += n;
        if (len + 1 == cap) {
            char *bigger = MPL_realloc(buf, 2 * cap, MPL_MEM_COLL);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
    }
    int failed = ferror(f);
    fclose(f);
    buf[len] = '\0';
    if (failed) {
        MPL_free(buf);
        return -1;
    }
    *text = buf;
    return 0;
}

/* The directory the trace files (prefix.<rank>.trace) go to takes new files. */
static int trace_dir_writable(const char *prefix)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(prefix, '/');
    if (!slash)
        return access(".", W_OK | X_OK) == 0;
    size_t len = slash == prefix ? 1 : (size_t) (slash - prefix);
    if (len >= sizeof(dir))
        return 0;
    memcpy(dir, prefix, len);
    dir[len] = '\0';
    return access(dir, W_OK | X_OK) == 0;
}

int MPII_Tnbc_access_init(void)
{
    MPIR_Tnbc_sites_init(&orders.sites);
    orders.tracing = MPIR_CVAR_TNBC_TRACE && MPIR_CVAR_TNBC_TRACE[0];
    if (orders.tracing) {
        orders.trace_prefix = MPL_strdup(MPIR_CVAR_TNBC_TRACE);
        if (!orders.trace_prefix)
            return MPI_ERR_NO_MEM;
        if (!trace_dir_writable(orders.trace_prefix)) {
            MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "MPIR_CVAR_TNBC_TRACE %s: its directory cannot "
                          "be written; no trace is recorded", orders.trace_prefix);
            orders.tracing = 0;
        }
    }
    if (!MPIR_CVAR_TNBC_PROFILE || !MPIR_CVAR_TNBC_PROFILE[0])
        return MPI_SUCCESS;

    /* a bad profile costs the priorities of its sites, never the run */
    char *text = NULL;
    int bad_line = 0, rc = -1;
    if (read_file(MPIR_CVAR_TNBC_PROFILE, &text) == 0)
        rc = MPIR_Tnbc_profile_parse(text, &orders.sites, &bad_line);
    MPL_free(text);
    if (rc != MPIR_TNBC_PRIORITY_OK) {
        MPIR_Tnbc_sites_free(&orders.sites);
        /* every process reads its own (the path may differ per rank) and says so */
        if (rc == MPIR_TNBC_PRIORITY_ERR_LIMIT)
            MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "MPIR_CVAR_TNBC_PROFILE %s: line %d goes beyond "
                          "%d sites, %d blocks a site or %d blocks in all; profile ignored",
                          MPIR_CVAR_TNBC_PROFILE, bad_line, MPIR_TNBC_SITES_MAX,
                          MPIR_TNBC_SITE_BLOCKS_MAX, MPIR_TNBC_SITES_BLOCKS_MAX);
        else if (bad_line)
            MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "MPIR_CVAR_TNBC_PROFILE %s: line %d is not a "
                          "profile line; profile ignored", MPIR_CVAR_TNBC_PROFILE, bad_line);
        else
            MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "MPIR_CVAR_TNBC_PROFILE %s: cannot be read; "
                          "profile ignored", MPIR_CVAR_TNBC_PROFILE);
    }
    return MPI_SUCCESS;
}

int MPII_Tnbc_access_tracing(void)
{
    return orders.tracing;
}

/* The return address of the application's call as an offset in its object. */
static uint64_t caller_offset(void)
{
    Dl_info info;
    const void *addr = MPIR_Tnbc_user_caller;
    if (!addr)
        return 0;
    if (dladdr(addr, &info) && info.dli_fbase)
        return (uint64_t) ((uintptr_t) addr - (uintptr_t) info.dli_fbase);
    return (uint64_t) (uintptr_t) addr;
}

MPIR_Tnbc_site_t *MPII_Tnbc_access_site(MPIR_Tnbc_coll_t coll, int comm_size, int nblocks,
                                        uint64_t recv_bytes)
{
    MPIR_Tnbc_site_key_t key = {.coll = coll,.comm_size = comm_size,.nblocks = nblocks,
        .recv_bytes = recv_bytes,.caller = caller_offset()
    };
    MPIR_Tnbc_site_t *site = MPIR_Tnbc_sites_get(&orders.sites, &key, 1);
    if (site)
        site->calls++;
    return site;
}

const int *MPII_Tnbc_access_order(const MPIR_Tnbc_site_t * site)
{
    if (!site || !site->known || !MPIR_CVAR_TNBC_PRIORITIES || orders.tracing)
        return NULL;
    return site->rank;
}

int MPII_Tnbc_access_sampling(MPIR_Tnbc_site_t * site, int order_used)
{
    if (!site || !order_used || orders.tracing || !MPIR_CVAR_TNBC_PRIORITIES ||
        MPIR_CVAR_TNBC_SAMPLE_GAP <= 0)
        return 0;
    return MPIR_Tnbc_site_take_sample(site, (unsigned long) MPIR_CVAR_TNBC_SAMPLE_GAP);
}

const int *MPII_Tnbc_access_peer_order(const MPIR_Tnbc_site_t * site, int peer)
{
    if (!site || !MPIR_CVAR_TNBC_PRIORITIES || orders.tracing)
        return NULL;
    return MPIR_Tnbc_site_peer_order(site, peer);
}

static void log_append(const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = orders.log_cap - orders.log_len;
        va_start(ap, fmt);
        int n = vsnprintf(orders.log + orders.log_len, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t) n < room) {
            orders.log_len += n;
            return;
        }
        size_t cap = orders.log_cap ? 2 * orders.log_cap : 65536;
        while (cap < orders.log_len + n + 1)
            cap *= 2;
        char *log = MPL_realloc(orders.log, cap, MPL_MEM_COLL);
        if (!log)
            return;
        orders.log = log;
        orders.log_cap = cap;
    }
}

/* What a held region saw: the whole order only when every block that received data was
 * touched (it may be released unread, by an MPI routine or the next collective); nothing seen
 * asks for another sample. */
static void observe_sample(MPIR_Tnbc_site_t * s, const MPII_Tnbc_held_t * h, const int *order)
{
    int seen_all = 1, seen_any = 0;
    for (int k = 0; k < h->nsub; k++) {
        int b = h->sub_block[k];
        if (b >= 0 && order[b] > 0)
            seen_any = 1;
        else if (b >= 0)
            seen_all = 0;
    }
    if (seen_any)
        MPIR_Tnbc_site_observe(s, order, seen_all);
    else
        s->want_sample = 1;
}

/* A held trace region's first touches go to the site and the trace; then it is released. */
static void harvest(MPII_Tnbc_held_t * h)
{
    MPIR_Tnbc_site_t *s = h->site;
    int nb = s->key.nblocks;
    int *order = MPL_calloc(nb + 1, sizeof(int), MPL_MEM_COLL);
    uint64_t *when = MPL_calloc(nb + 1, sizeof(uint64_t), MPL_MEM_COLL);

    if (order && when) {
        /* a block's touch is the first touch of any of its sub-messages */
        for (int k = 0; k < h->nsub; k++) {
            int o, b = h->sub_block[k];
            uint64_t t;
            MPIR_Pageguard_first_touch(h->region, k, &o, &t);
            if (o > 0 && b >= 0 && (order[b] == 0 || o < order[b])) {
                order[b] = o;
                when[b] = t;
            }
        }
        MPIR_Tnbc_touch_ranks(order, nb);
        if (orders.tracing) {   /* a sample is not traced */
            log_append("call %lu %s %d %" PRIu64 " %d 0x%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
                       h->call, MPIR_Tnbc_coll_name(s->key.coll), s->key.comm_size,
                       s->key.recv_bytes, nb, s->key.caller, h->compute_ns, h->call_ns);
            for (int b = 0; b < nb; b++)
                if (order[b] > 0)
                    log_append("touch %d %d %" PRIu64 "\n", b, order[b],
                               when[b] > h->t_return_ns ? when[b] - h->t_return_ns : 0);
        }
        observe_sample(s, h, order);
    }
    MPL_free(order);
    MPL_free(when);
    MPIR_Pageguard_unregister(h->region);
    MPL_free(h->sub_block);
}

void MPII_Tnbc_access_harvest(void)
{
    for (int i = 0; i < MPIR_Tnbc_regions_held; i++)
        harvest(&orders.held[i]);
    MPIR_Tnbc_regions_held = 0;
}

void MPII_Tnbc_access_release(const void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t) addr, hi = lo + len;
    int kept = 0;
    for (int i = 0; i < MPIR_Tnbc_regions_held; i++) {
        if (orders.held[i].lo < hi && lo < orders.held[i].hi)
            harvest(&orders.held[i]);
        else
            orders.held[kept++] = orders.held[i];
    }
    MPIR_Tnbc_regions_held = kept;
}

void MPII_Tnbc_access_trace(MPIR_Tnbc_site_t * site, void *recv_user,
                            const MPIR_Tnbc_sched_t * sched, uint64_t t_enter_ns)
{
    if (!site || !recv_user || sched->nrecv_sub == 0)
        return;
    if (MPIR_Tnbc_regions_held == MPII_TNBC_TRACE_HELD) {
        harvest(&orders.held[0]);
        memmove(&orders.held[0], &orders.held[1], (MPII_TNBC_TRACE_HELD - 1) *
                sizeof(orders.held[0]));
        MPIR_Tnbc_regions_held--;
    }
    MPII_Tnbc_held_t *h = &orders.held[MPIR_Tnbc_regions_held];
    h->sub_block = MPL_malloc(sched->nrecv_sub * sizeof(int), MPL_MEM_COLL);
    if (!h->sub_block)
        return;
    MPIR_Tnbc_sched_recv_sub_blocks(sched, h->sub_block);
    if (MPIR_Pageguard_register(recv_user, sched->recv_bytes, sched->nrecv_sub,
                                sched->recv_sub_off, sched->recv_sub_len, MPIR_PAGEGUARD_RECV,
                                MPIR_PAGEGUARD_TRACE, &h->region) != MPIR_PAGEGUARD_OK) {
        MPL_free(h->sub_block);
        return;
    }
    h->site = site;
    h->lo = (uintptr_t) recv_user;
    h->hi = h->lo + sched->recv_bytes;
    h->nsub = sched->nrecv_sub;
    h->t_return_ns = MPII_Tnbc_now_ns();
    /* what the application did between two calls and how long the call took: a replay of
     * the run (maint/tnbc-predict --trace) needs both */
    h->compute_ns = orders.last_return_ns && t_enter_ns > orders.last_return_ns ?
        t_enter_ns - orders.last_return_ns : 0;
    h->call_ns = h->t_return_ns > t_enter_ns ? h->t_return_ns - t_enter_ns : 0;
    orders.last_return_ns = h->t_return_ns;
    h->call = ++orders.calls;
    MPIR_Tnbc_regions_held++;
}

int MPII_Tnbc_access_finalize(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPII_Tnbc_access_harvest();
    if (orders.tracing) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s.%d.trace", orders.trace_prefix, MPIR_Process.rank);
        FILE *f = fopen(path, "w");
        int failed = !f;
        if (f) {
            fprintf(f, "# mpich-tnbc trace 2 rank %d size %d\n"
                    "# call <n> <collective> <comm size> <receive bytes> <blocks> <caller> "
                    "<ns since the previous call returned> <ns in the call>\n"
                    "# touch <block> <order> <ns after the call returned>\n",
                    MPIR_Process.rank, MPIR_Process.size);
            if (orders.log_len)
                failed |= fwrite(orders.log, 1, orders.log_len, f) != orders.log_len;
            failed |= fclose(f) != 0;
        }
        if (failed)     /* the run's results stand: a lost trace is no reason to fail it */
            MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "MPIR_CVAR_TNBC_TRACE: cannot write %s; trace "
                          "lost", path);
    }
    MPL_free(orders.trace_prefix);
    orders.trace_prefix = NULL;
    MPL_free(orders.log);
    orders.log = NULL;
    orders.log_len = orders.log_cap = 0;
    MPIR_Tnbc_sites_free(&orders.sites);
    return mpi_errno;
}
