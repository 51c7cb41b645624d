/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Which blocking collectives the T-NBC family takes, and why it declines the others.
 * Pure C: no MPICH includes, so the decision logic is unit-tested in milliseconds. */

#ifndef TNBC_POLICY_H_INCLUDED
#define TNBC_POLICY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef enum {
    MPIR_TNBC_COLL_BCAST,
    MPIR_TNBC_COLL_GATHER,
    MPIR_TNBC_COLL_GATHERV,
    MPIR_TNBC_COLL_SCATTER,
    MPIR_TNBC_COLL_SCATTERV,
    MPIR_TNBC_COLL_ALLGATHER,
    MPIR_TNBC_COLL_ALLGATHERV,
    MPIR_TNBC_COLL_ALLTOALL,
    MPIR_TNBC_COLL_ALLTOALLV,
    MPIR_TNBC_COLL_ALLTOALLW,
    MPIR_TNBC_COLL_REDUCE,
    MPIR_TNBC_COLL_ALLREDUCE,
    MPIR_TNBC_COLL_REDUCE_SCATTER,
    MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK,
    MPIR_TNBC_COLL_SCAN,
    MPIR_TNBC_COLL_EXSCAN,
    MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER,
    MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV,
    MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL,
    MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV,
    MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW,
    MPIR_TNBC_COLL_COUNT
} MPIR_Tnbc_coll_t;

#define MPIR_TNBC_COLL_BIT(coll) ((uint32_t) 1 << (coll))
#define MPIR_TNBC_COLL_ALL_MASK  (MPIR_TNBC_COLL_BIT(MPIR_TNBC_COLL_COUNT) - 1)

/* In the order MPIR_Tnbc_policy_decide checks them: the first that applies is the reason. */
typedef enum {
    MPIR_TNBC_ACCEPT = 0,
    MPIR_TNBC_DECLINE_DISABLED,         /* excluded by MPIR_CVAR_TNBC_COLLECTIVES */
    MPIR_TNBC_DECLINE_UNSUPPORTED,      /* no T-NBC schedule builder for this collective yet */
    MPIR_TNBC_DECLINE_NOT_READY,        /* outside MPI_Init..MPI_Finalize, or T-NBC switched off */
    MPIR_TNBC_DECLINE_INTERNAL,         /* MPICH's own call (e.g. in MPI_Comm_split) */
    MPIR_TNBC_DECLINE_JOB_OFF,          /* off for the job: a process could not install the
                                         * libc hooks or has no device support, thresholds
                                         * differ, or no MPI_Init (MPIR_Tnbc_world_init) */
    MPIR_TNBC_DECLINE_INTERCOMM,
    MPIR_TNBC_DECLINE_WORLDS,           /* processes of several worlds: each world decided on
                                         * T-NBC alone (MPIR_Tnbc_world_init) */
    MPIR_TNBC_DECLINE_DEVICE_BUFFER,    /* GPU support is on: buffers may be device memory */
    MPIR_TNBC_DECLINE_OP_TYPE,          /* reduction with a user-defined op or a datatype that
                                         * is not one predefined, gap-free type */
    MPIR_TNBC_DECLINE_SMALL,            /* no sub-message reaches MPIR_CVAR_TNBC_MIN_BYTES */
    MPIR_TNBC_DECLINE_NODE,             /* every process on one node, and no sub-message
                                         * reaches MPIR_CVAR_TNBC_NODE_MIN_BYTES (by default
                                         * none does) */
    MPIR_TNBC_DECISION_COUNT
} MPIR_Tnbc_decision_t;

/* How a handled call completed. The decision above uses only facts that are the same on every
 * process (the wire protocol must match); these outcomes are local: a process that cannot
 * return early runs the same schedule and waits for it inside the call. */
typedef enum {
    MPIR_TNBC_EARLY = 0,                /* returned early */
    MPIR_TNBC_SYNC_SMALL,               /* this process's pieces are below the threshold */
    MPIR_TNBC_SYNC_PACKED,              /* derived datatype or overlapping ranges: packed */
    MPIR_TNBC_SYNC_NO_PAGE,             /* the receive buffer spans no whole page */
    MPIR_TNBC_SYNC_GUARD,               /* page guards refused (budget, landing, ...) */
    MPIR_TNBC_SYNC_NOMEM,               /* no memory for a copy of the send buffer */
    MPIR_TNBC_SYNC_TRACE,               /* a trace run (MPIR_CVAR_TNBC_TRACE) */
    MPIR_TNBC_SYNC_NO_HELPER,           /* the helper thread could not be created */
    MPIR_TNBC_SYNC_PROT,                /* the receive buffer is not private read-write memory */
    MPIR_TNBC_SYNC_WINDOW,              /* the receive buffer is in an RMA window */
    MPIR_TNBC_SYNC_SAMPLE,              /* recording every first touch (online learning) */
    MPIR_TNBC_SYNC_NO_GAIN,             /* returning early did not pay at this call site */
    MPIR_TNBC_OUTCOME_COUNT
} MPIR_Tnbc_outcome_t;

/* What the entry point learnt about one call. */
typedef struct {
    MPIR_Tnbc_coll_t coll;
    int ready;
    int internal;               /* not called by the application: results are read at once */
    int is_intercomm;
    int spans_worlds;           /* the communicator has processes of another world */
    int device_buffer;
    int op_type_unsupported;    /* a reduction's op or datatype has no T-NBC schedule */
    int size_is_global;         /* largest_submsg_bytes is the same on every process */
    int node_local;             /* every process of the communicator is on this node */
    size_t largest_submsg_bytes;        /* largest piece this rank moves to or from one peer */
} MPIR_Tnbc_call_facts_t;

typedef struct {
    uint32_t enabled_colls;     /* MPIR_TNBC_COLL_BIT set */
    uint32_t supported_colls;   /* collectives with a schedule builder */
    size_t min_bytes;
    size_t node_min_bytes;      /* the same for a communicator within one node;
                                 * MPIR_TNBC_NODE_DECLINE_ALL: every call, whatever its sizes */
    size_t pace_bytes;          /* MPIR_CVAR_TNBC_PACE_BYTES as MPI_Init found it (0: off); its
                                 * schedules carry order reports, so it is agreed */
    int job_off;                /* every call declined: until MPI_Init's agreement, and for
                                 * good where a process could not install the libc hooks */
    /* settings every process must share (scope ALL_EQ), as MPI_Init found them: an MPI_T
     * write made later, or made by some processes only, must not make them disagree */
    int bcast_segments;         /* MPIR_CVAR_TNBC_BCAST_SEGMENTS, 1 to 1024 */
    int scan_segments;          /* MPIR_CVAR_TNBC_SCAN_SEGMENTS, 1 to 1024 */
    int stats;                  /* MPIR_CVAR_TNBC_STATS */
} MPIR_Tnbc_policy_t;

#define MPIR_TNBC_NODE_DECLINE_ALL SIZE_MAX

/* A segment count setting (MPIR_CVAR_TNBC_*_SEGMENTS) as the schedules use it. */
static inline int MPIR_Tnbc_segments(int setting)
{
    return setting < 1 ? 1 : setting > 1024 ? 1024 : setting;
}

/* The process's policy: set by MPIR_Tnbc_init from the CVARs (tnbc_init.c), read by every
 * entry point and by the engine. */
extern MPIR_Tnbc_policy_t MPII_Tnbc_policy;
/* Warn once when an MPI_T write after MPI_Init changed a setting the policy keeps. */
void MPII_Tnbc_policy_check_late(void);

const char *MPIR_Tnbc_coll_name(MPIR_Tnbc_coll_t coll);
const char *MPIR_Tnbc_decision_name(MPIR_Tnbc_decision_t decision);
const char *MPIR_Tnbc_outcome_name(MPIR_Tnbc_outcome_t outcome);

/* Parse a collective list such as "all", "none", "alltoall,bcast" or "all,-bcast" (case and
 * blanks ignored; later items override earlier ones). Returns 0 and sets *mask, or -1 with the
 * offending item in err. */
int MPIR_Tnbc_parse_coll_list(const char *spec, uint32_t * mask, char *err, size_t errlen);

MPIR_Tnbc_decision_t MPIR_Tnbc_policy_decide(const MPIR_Tnbc_policy_t * policy,
                                             const MPIR_Tnbc_call_facts_t * facts);

#endif /* TNBC_POLICY_H_INCLUDED */
