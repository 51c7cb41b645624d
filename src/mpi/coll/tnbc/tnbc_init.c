/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

#include "mpiimpl.h"
#include "tnbc_access.h"
#include "tnbc_engine.h"
#include "tnbc_entry.h"
#include "tnbc_message.h"
#include "tnbc_node.h"
#include "tnbc_settle.h"
#include "tnbc_stats.h"
#include "mpid_tnbc.h"
#include "mpir_pageguard.h"

#include <limits.h>
#include <malloc.h>

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

categories :
    - name        : TNBC
      description : Transparent non-blocking collectives (mpich-tnbc)

cvars:
    - name        : MPIR_CVAR_TNBC_ENABLE
      category    : TNBC
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        If true, blocking collectives are offered to the T-NBC family, which returns early and
        finishes the communication in the background, or declines and leaves the call to the
        stock algorithms. Must be the same on every process.

    - name        : MPIR_CVAR_TNBC_COLLECTIVES
      category    : TNBC
      type        : string
      default     : "all"
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        Comma-separated list of the collectives T-NBC may take when MPIR_CVAR_TNBC_ENABLE is
        set: "all", "none", collective names such as "alltoall,alltoallv,bcast", and "-name" to
        remove one ("all,-bcast"). Later items override earlier ones. An unknown name makes
        MPI_Init fail.

    - name        : MPIR_CVAR_TNBC_MIN_BYTES
      category    : TNBC
      type        : int
      default     : 4096
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        T-NBC declines a call whose largest sub-message (the data one process moves to or from one
        peer) is smaller than this many bytes: below a few KiB, protecting pages costs more than
        the overlap hides. 0 offers every size. Must be the same on every process (T-NBC is
        off for the job otherwise).

    - name        : MPIR_CVAR_TNBC_NODE_MIN_BYTES
      category    : TNBC
      type        : int
      default     : -1
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        On a communicator whose processes are all on one node: -1 (default), T-NBC declines
        every call (MPICH's algorithms run); 0, it takes every size; N, it declines the calls
        whose largest sub-message is below N bytes (only collectives whose sizes are the same
        on every process, such as Alltoall or Bcast). Within a node a CPU copies every byte
        whether the call waits or not, so with a core per process nothing overlaps and T-NBC's
        own schedule only adds its costs (README.tnbc, section 7). Must be the same on every
        process (T-NBC is off for the job otherwise); below -1 MPI_Init fails.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

MPIR_Tnbc_policy_t MPII_Tnbc_policy;
int MPIR_Tnbc_enabled;

/* Collectives with a T-NBC schedule builder. */
#define MPII_TNBC_SUPPORTED_COLLS (MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLTOALL) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLTOALLV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLTOALLW) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_BCAST) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLGATHER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLGATHERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_GATHER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_GATHERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_SCATTER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_SCATTERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_ALLREDUCE) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_REDUCE) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_REDUCE_SCATTER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_SCAN) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_EXSCAN) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV) | \
                                   MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW))

/* glibc's default mmap threshold of free()d chunks */
#define MPII_TNBC_MMAP_THRESHOLD (128 * 1024)

/* Why T-NBC cannot run in this process */
static enum {
    MPII_TNBC_CAN_RUN,
    MPII_TNBC_NO_DEVICE_SUPPORT,
    MPII_TNBC_NO_HOOKS  /* the C library's functions could not be redirected */
} off_here;
static const char *off_why;

static void tune_malloc(void)
{
    /* free's hook waits for a send buffer's data and forgets a receive buffer's before the
     * memory goes back to the allocator (src/util/mpir_pageguard/pageguard_alloc.c) */
    if (MPIR_Pageguard_alloc_interposed())
        return;
#ifdef M_MMAP_THRESHOLD
    /* no hook on free: send-guarded buffers (> MPIR_CVAR_TNBC_SEND_COPY_MAX) must
     * be unmapped by free() outside the allocator's lock, so keep them mmap'd chunks (a fixed
     * threshold; glibc's dynamic one would move them into the heap), and never trim the heap
     * if guards can be smaller */
    mallopt(M_MMAP_THRESHOLD, MPII_TNBC_MMAP_THRESHOLD);
    if (MPIR_CVAR_TNBC_SEND_COPY_MAX < MPII_TNBC_MMAP_THRESHOLD)
        mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

/* The settings every process must share, as the CVARs say now (all but the collective list,
 * which the caller parses). */
static void policy_from_cvars(MPIR_Tnbc_policy_t * p)
{
    p->supported_colls = MPII_TNBC_SUPPORTED_COLLS;
    p->min_bytes = (size_t) MPL_MAX(MPIR_CVAR_TNBC_MIN_BYTES, 0);
    p->node_min_bytes = MPIR_CVAR_TNBC_NODE_MIN_BYTES < 0 ?
        MPIR_TNBC_NODE_DECLINE_ALL : (size_t) MPIR_CVAR_TNBC_NODE_MIN_BYTES;
    p->pace_bytes = (size_t) MPL_MAX(MPIR_CVAR_TNBC_PACE_BYTES, 0);
    p->bcast_segments = MPIR_Tnbc_segments(MPIR_CVAR_TNBC_BCAST_SEGMENTS);
    p->scan_segments = MPIR_Tnbc_segments(MPIR_CVAR_TNBC_SCAN_SEGMENTS);
    p->stats = MPIR_CVAR_TNBC_STATS;
}

static char *collectives_at_init;

/* The shared settings are read once, at MPI_Init: a write through MPI_T after it, perhaps on
 * some processes only, changes nothing. Say so once (seen at the next collective T-NBC is
 * offered), naming the first such setting. */
void MPII_Tnbc_policy_check_late(void)
{
    static int said;
    MPIR_Tnbc_policy_t now;
    const MPIR_Tnbc_policy_t *p = &MPII_Tnbc_policy;
    const char *name = NULL;

    if (said)
        return;
    policy_from_cvars(&now);
    if (MPIR_CVAR_TNBC_ENABLE != MPIR_Tnbc_enabled)
        name = "MPIR_CVAR_TNBC_ENABLE";
    else if (collectives_at_init && MPIR_CVAR_TNBC_COLLECTIVES &&
             strcmp(MPIR_CVAR_TNBC_COLLECTIVES, collectives_at_init) != 0)
        name = "MPIR_CVAR_TNBC_COLLECTIVES";
    else if (now.min_bytes != p->min_bytes)
        name = "MPIR_CVAR_TNBC_MIN_BYTES";
    else if (now.node_min_bytes != p->node_min_bytes)
        name = "MPIR_CVAR_TNBC_NODE_MIN_BYTES";
    else if (now.pace_bytes != p->pace_bytes)
        name = "MPIR_CVAR_TNBC_PACE_BYTES";
    else if (now.bcast_segments != p->bcast_segments)
        name = "MPIR_CVAR_TNBC_BCAST_SEGMENTS";
    else if (now.scan_segments != p->scan_segments)
        name = "MPIR_CVAR_TNBC_SCAN_SEGMENTS";
    else if (now.stats != p->stats)
        name = "MPIR_CVAR_TNBC_STATS";
    if (!name)
        return;
    said = 1;
    MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "%s was changed after MPI_Init; T-NBC keeps the value "
                  "MPI_Init found (every process must use the same)", name);
}

int MPIR_Tnbc_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    char bad_item[64];
    uint32_t mask;

    if (MPIR_Tnbc_parse_coll_list(MPIR_CVAR_TNBC_COLLECTIVES, &mask, bad_item,
                                  sizeof(bad_item)) != 0) {
        MPIR_ERR_SETANDJUMP2(mpi_errno, MPI_ERR_OTHER, "**cvar_val", "**cvar_val %s %s",
                             "MPIR_CVAR_TNBC_COLLECTIVES", bad_item);
    }
    MPIR_ERR_CHKANDJUMP2(MPIR_CVAR_TNBC_MIN_BYTES < 0, mpi_errno, MPI_ERR_OTHER, "**cvar_val",
                         "**cvar_val %s %s", "MPIR_CVAR_TNBC_MIN_BYTES", "negative");
    MPIR_ERR_CHKANDJUMP2(MPIR_CVAR_TNBC_NODE_MIN_BYTES < -1, mpi_errno, MPI_ERR_OTHER,
                         "**cvar_val", "**cvar_val %s %s", "MPIR_CVAR_TNBC_NODE_MIN_BYTES",
                         "below -1");

    policy_from_cvars(&MPII_Tnbc_policy);
    MPII_Tnbc_policy.enabled_colls = mask;
    MPII_Tnbc_policy.job_off = 1;       /* until MPIR_Tnbc_world_init agrees */
    MPIR_Tnbc_enabled = MPIR_CVAR_TNBC_ENABLE;
    MPL_free(collectives_at_init);
    collectives_at_init = MPL_strdup(MPIR_CVAR_TNBC_COLLECTIVES);
    MPII_Tnbc_pvars_register();
    mpi_errno = MPII_Tnbc_access_init();
    MPIR_ERR_CHECK(mpi_errno);
    if (MPIR_Tnbc_enabled) {
        /* before the application allocates its buffers; MPIR_Tnbc_world_init agrees on it */
        if (!MPID_Tnbc_available(&off_why))
            off_here = MPII_TNBC_NO_DEVICE_SUPPORT;
        else if (MPIR_Pageguard_hooks_install(MPID_Tnbc_owns_object, &off_why) != 0)
            off_here = MPII_TNBC_NO_HOOKS;
        else
            tune_malloc();
        MPII_Tnbc_settle_at_fork();
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Where a process could not redirect the C library's read, sigaction, ... to the page guards'
 * hooks (MPIR_Tnbc_init), a system call on a guarded page would fail with EFAULT and the
 * program's SIGSEGV handler would replace ours; where its device cannot carry T-NBC's messages
 * (a netmod without netmod_tnbc.h) nothing can run. Then T-NBC stays off for the whole job (it is
 * off from MPIR_Tnbc_init until this agreement: a process that never calls MPI_Init has none),
 * so that every process still runs the same protocol; the lowest such rank says why, once. So
 * it does when the thresholds that decline calls differ between processes (an MPMD launch that
 * sets them for some), or pacing (its order reports change the schedule), since processes that
 * decide differently never match their messages. */
enum {
    MPII_AGREE_FIRST_OFF,
    MPII_AGREE_MIN_BYTES, MPII_AGREE_MIN_BYTES_NEG,     /* the least, and minus the most */
    MPII_AGREE_NODE_MIN, MPII_AGREE_NODE_MIN_NEG,
    MPII_AGREE_PACED, MPII_AGREE_PACED_NEG,     /* paced Alltoall(v)s carry order reports */
    MPII_AGREE_COUNT
};

static void say_off_for_job(void)
{
    if (off_here == MPII_TNBC_NO_DEVICE_SUPPORT) {
        MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "T-NBC is off for this job: %s.", off_why);
    } else if (off_here == MPII_TNBC_NO_HOOKS) {
        MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "T-NBC is off for this job: could not redirect the "
                      "C library's functions to the page guards: %s.", off_why);
    } else {
        MPII_Tnbc_say(MPII_TNBC_SAY_WARNING, "T-NBC is off for this job: MPIR_CVAR_TNBC_MIN_BYTES, "
                      "MPIR_CVAR_TNBC_NODE_MIN_BYTES or whether MPIR_CVAR_TNBC_PACE_BYTES is set "
                      "differs between processes; give every process the same value.");
    }
}

static void say_on_for_job(void)
{
    MPIR_Pageguard_hooks_stats_t hooks;
    MPIR_Pageguard_hooks_get_stats(&hooks);
    MPII_Tnbc_say(MPII_TNBC_SAY_NOTE, "T-NBC is on for this job: collectives \"%s\", "
                  "MPIR_CVAR_TNBC_MIN_BYTES %d, MPIR_CVAR_TNBC_NODE_MIN_BYTES %d; the C library's "
                  "functions redirected in %u GOT slots of %u objects here",
                  MPIR_CVAR_TNBC_COLLECTIVES, MPIR_CVAR_TNBC_MIN_BYTES,
                  MPIR_CVAR_TNBC_NODE_MIN_BYTES, hooks.slots, hooks.objects);
}

static int agree_job_wide(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    MPIR_Comm *world = MPIR_Process.comm_world;
    int mine[MPII_AGREE_COUNT], all[MPII_AGREE_COUNT];

    mine[MPII_AGREE_FIRST_OFF] = off_here != MPII_TNBC_CAN_RUN ? world->rank : INT_MAX;
    mine[MPII_AGREE_MIN_BYTES] = MPIR_CVAR_TNBC_MIN_BYTES;
    mine[MPII_AGREE_MIN_BYTES_NEG] = -MPIR_CVAR_TNBC_MIN_BYTES;
    mine[MPII_AGREE_NODE_MIN] = MPIR_CVAR_TNBC_NODE_MIN_BYTES;
    mine[MPII_AGREE_NODE_MIN_NEG] = -MPIR_CVAR_TNBC_NODE_MIN_BYTES;
    mine[MPII_AGREE_PACED] = MPII_Tnbc_policy.pace_bytes > 0;
    mine[MPII_AGREE_PACED_NEG] = -(MPII_Tnbc_policy.pace_bytes > 0);
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    mpi_errno = MPIR_Allreduce(mine, all, MPII_AGREE_COUNT, MPI_INT, MPI_MIN, world, &errflag);
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");

    int first_off = all[MPII_AGREE_FIRST_OFF];
    int thresholds_agree = all[MPII_AGREE_MIN_BYTES] == -all[MPII_AGREE_MIN_BYTES_NEG] &&
        all[MPII_AGREE_NODE_MIN] == -all[MPII_AGREE_NODE_MIN_NEG] &&
        all[MPII_AGREE_PACED] == -all[MPII_AGREE_PACED_NEG];
    if (first_off == INT_MAX && thresholds_agree) {
        MPII_Tnbc_policy.job_off = 0;
        /* again: a lazy binding resolved by another thread during MPI_Init may have written
         * over a hook */
        MPIR_Pageguard_hooks_refresh(1);
        if (world->rank == 0)
            say_on_for_job();
        goto fn_exit;
    }
    MPIR_Pageguard_hooks_remove();      /* nothing will be guarded */
    if (first_off == world->rank || (first_off == INT_MAX && world->rank == 0))
        say_off_for_job();

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_world_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    static int done;

    if (done || !MPIR_Tnbc_enabled || !MPIR_Process.comm_world)
        goto fn_exit;
    done = 1;
    mpi_errno = agree_job_wide();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPII_Tnbc_node_init();
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIR_Tnbc_finalize(void)
{
    /* the operations were drained and the helper stopped by MPIR_Tnbc_finalize_drain */
    int mpi_errno = MPII_Tnbc_access_finalize();
    int engine_errno = MPII_Tnbc_engine_finalize();
    /* nothing is guarded any more: every redirected slot gets the C library's function back */
    MPIR_Pageguard_hooks_remove();
    MPL_free(collectives_at_init);
    collectives_at_init = NULL;
    return mpi_errno ? mpi_errno : engine_errno;
}
