/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What the files of the reorder + merge family share: the Alltoallv, Alltoall and
 * Neighbor_alltoallv entry points (rm_forms.c), the exchange they all become (rm_exchange.c), a
 * communicator's kept state (rm_comm.c), one call's view with its requests, buffers and errors
 * (rm_call.c), the forwarder and receiving side of merged streams (rm_forward.c), the counters
 * (rm_stats.c). Calls go one way: forms -> exchange -> forward -> call; comm is called by forms
 * and exchange, and by T-NBC through MPIR_Rm_send_order (rm.h). The plan itself is pure
 * (rm_plan.c). */

#ifndef RM_IMPL_H_INCLUDED
#define RM_IMPL_H_INCLUDED

#include "rm_plan.h"

/* What a communicator keeps between calls (an attribute, freed with the communicator). */
typedef struct {
    uint64_t calls;
    int nnodes;
    int *node_of;               /* node index of every rank */
    int *node_start, *node_ranks;       /* the ranks of each node, ascending */
    int64_t *graph;             /* recv_total[size], then node_bytes[nnodes * nnodes] */
    uint64_t graph_gen;
    MPIR_Rm_cache_t cache;
    MPIR_Rm_msg_t *msgs;        /* the ordered plan for cache's key */
    int nmsg;
    int nbrs_simple;            /* neighbour lists without repeats on every process: 1, 0,
                                 * or -1 not known yet */
} MPII_Rm_comm_t;

/* One call's view of the exchange. */
typedef struct {
    MPIR_Comm *comm;
    int rank, size, my_node, nlocal, my_local;
    const int *local;           /* ranks of my node, ascending */
    MPII_Rm_comm_t *st;
    const char *sendbuf;
    const MPI_Aint *sendcounts, *sdispls;
    MPI_Datatype sendtype;
    char *recvbuf;
    const MPI_Aint *recvcounts, *rdispls;
    MPI_Datatype recvtype;
    MPI_Aint sext, rext, send_true_lb;
    int send_contig;
    size_t *sbytes, *rbytes;
    size_t cap, hdr_max, merge_max;
    int *direct_req;            /* per source: index of its direct receive in reqs, or -1 */
    int *own;                   /* per source whose forwarder I am: what came for me */
    MPIR_Request **reqs;        /* every request of the call, waited one by one at the end */
    int nreq, reqcap;
    char **bufs;                /* freed at the end */
    int nbuf, bufcap;
    MPIR_Errflag_t *errflag;
    int mpi_errno_ret;
    /* tags of this call, drawn like a non-blocking collective's (the same on every process):
     * a message of an earlier call, or a receive it left posted, never matches this one's */
    int tag_direct, tag_aggregate, tag_forward;
} MPII_Rm_call_t;

/* What a forwarder saw of a source's message for one process of its node. */
#define MPII_RM_NONE   0        /* nothing */
#define MPII_RM_MERGED 1        /* merged data (unpacked, or kept in a slot) */
#define MPII_RM_DIRECT 2        /* an announcement: the sender sends it directly */
#define MPII_RM_TAKEN  3        /* merged data for me, already unpacked */

/* A forwarder's message to one process of my node, as that process receives it. */
typedef struct {
    int fwd;
    char *buf;
    size_t cap;
    int req;                    /* index into the call's requests */
} MPII_Rm_inbox_t;

/* rm_stats.c */
typedef enum {
    MPII_RM_EXCHANGE,           /* ran the exchange */
    MPII_RM_STOCK               /* handed it to MPICH's own algorithm */
} MPII_Rm_event_t;
void MPII_Rm_count(MPII_Rm_event_t event);

/* rm_exchange.c */
int MPII_Rm_exchange(const void *sendbuf, const MPI_Aint * sendcounts,
                     const MPI_Aint * sdispls, MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                     MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag,
                     int reorder, int merge);

/* rm_comm.c */
int MPII_Rm_comm_get(MPIR_Comm * comm, MPII_Rm_comm_t ** out);
int MPII_Rm_update_graph(MPII_Rm_call_t * c);
int MPII_Rm_plan(MPII_Rm_call_t * c, int reorder);

/* rm_call.c */
int MPII_Rm_setup_call(MPII_Rm_call_t * c);
void MPII_Rm_free_call(MPII_Rm_call_t * c);
void MPII_Rm_note_error(MPII_Rm_call_t * c, int mpi_errno);
void MPII_Rm_note_malformed(MPII_Rm_call_t * c);
void MPII_Rm_note_truncated(MPII_Rm_call_t * c);
void MPII_Rm_note_missing(MPII_Rm_call_t * c);
MPIR_Request **MPII_Rm_new_req(MPII_Rm_call_t * c);
char *MPII_Rm_new_buf(MPII_Rm_call_t * c, size_t bytes);
int MPII_Rm_forwarder_of(MPII_Rm_call_t * c, int sender, int node);
int MPII_Rm_local_index(MPII_Rm_call_t * c, int rank);
int MPII_Rm_forwards_for(MPII_Rm_call_t * c, int f, int i);
void MPII_Rm_post_direct_recv(MPII_Rm_call_t * c, int p);
void MPII_Rm_post_direct_send(MPII_Rm_call_t * c, int p);
MPI_Status MPII_Rm_wait_req(MPII_Rm_call_t * c, int i);

/* rm_forward.c */
void MPII_Rm_forward(MPII_Rm_call_t * c);
int MPII_Rm_post_inboxes(MPII_Rm_call_t * c, MPII_Rm_inbox_t ** out);
void MPII_Rm_take_inbox(MPII_Rm_call_t * c, MPII_Rm_inbox_t * in,
                        const MPI_Status * status);

#endif /* RM_IMPL_H_INCLUDED */
