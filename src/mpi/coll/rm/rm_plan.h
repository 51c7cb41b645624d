/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Reorder + merge planning for irregular exchanges (Alltoallv and its kin).
 *
 * Reorder: a sender's messages are sorted by node-pair distance |node(peer) - node(me)|
 * (nearest or farthest first), then by pair weight max(bytes the source sends in all, bytes the
 * target receives in all), heaviest first, so that the messages of one node pair are adjacent.
 * Merge: the messages for one remote node travel as one stream of aggregates whose payloads grow
 * by alpha = 1.5 + log2(max(out-degree of the source node, in-degree of the target node)) in the
 * node graph, so busy node pairs merge more; a message may be split across aggregates.
 * Aggregates describe themselves (a header of fragments), so the receiver needs no plan.
 *
 * Pure C: no MPICH includes, unit-tested with Check. */

#ifndef RM_PLAN_H_INCLUDED
#define RM_PLAN_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define MPIR_RM_OK            0
#define MPIR_RM_ERR_NOMEM    -1
#define MPIR_RM_ERR_FORMAT   -2    /* a received aggregate or directory is malformed */

typedef enum {
    MPIR_RM_ORDER_RING,    /* peers me+1, me+2, ... as MPICH's scattered algorithm */
    MPIR_RM_ORDER_NEAR_FIRST,      /* the paper's text: short node distance first */
    MPIR_RM_ORDER_FAR_FIRST        /* the paper's pseudo-code: the larger distance first */
} MPIR_Rm_order_t;

/* One message as its sender sees it. */
typedef struct {
    int peer;                   /* rank in the communicator */
    int node;                   /* the peer's node, 0..nnodes-1 */
    size_t bytes;
    int64_t weight;             /* max(sender's total, peer's total received) */
} MPIR_Rm_msg_t;

/* Sorts msgs for a sender on my_node with rank my_rank in a communicator of comm_size. Ties
 * (and MPIR_RM_ORDER_RING) fall back to ring order from my_rank, so that concurrent
 * senders start on different targets. */
void MPIR_Rm_order(MPIR_Rm_msg_t * msgs, int n, int my_node, int my_rank,
                   int comm_size, MPIR_Rm_order_t order);

/* The growth factor of node pair (a, b): node_bytes is the node graph (row = source node). */
double MPIR_Rm_alpha(const int64_t * node_bytes, int nnodes, int a, int b);

/* A stream's split into aggregates: aggregate a holds frags[first[a] .. first[a+1]). */
typedef struct {
    int msg;                    /* index into the stream's messages */
    size_t off, len;            /* byte range of that message */
} MPIR_Rm_frag_t;

typedef struct {
    int nagg, nfrag;
    int *first;                 /* nagg + 1 entries */
    MPIR_Rm_frag_t *frags;
} MPIR_Rm_split_t;

/* Splits messages of bytes[0..n) (in stream order) into aggregates of first_bytes, then alpha
 * times the previous payload, never more than cap bytes. Zero-byte messages are skipped; a
 * stream with no bytes has one empty aggregate (the receiver always expects one). */
int MPIR_Rm_split(const size_t * bytes, int n, size_t first_bytes, double alpha, size_t cap,
                  MPIR_Rm_split_t * split);
void MPIR_Rm_split_free(MPIR_Rm_split_t * split);

/* Aggregate wire format: a header {nfrag, final}, nfrag fragment descriptors, then the
 * fragments' payloads in descriptor order. */
typedef struct {
    int64_t dst;                /* target rank */
    uint64_t total;             /* the whole message's bytes */
    uint64_t off, len;          /* this fragment */
} MPIR_Rm_wire_frag_t;

/* A descriptor with this offset and no payload announces a message the sender sends directly
 * (too large to merge): total is its size. */
#define MPIR_RM_DIRECT_OFF UINT64_MAX

size_t MPIR_Rm_header_bytes(int nfrag);
/* Writes the header; returns where the payload starts. */
char *MPIR_Rm_write_header(char *buf, int nfrag, int final,
                           const MPIR_Rm_wire_frag_t * frags);
/* Checks that buf[0, len) is a well-formed aggregate of at most max_frag fragments whose
 * payloads fit; sets its parts. */
int MPIR_Rm_read_header(const char *buf, size_t len, int max_frag, int *nfrag, int *final,
                        const MPIR_Rm_wire_frag_t ** frags, const char **payload);

/* A forwarder's message to one process of its node: a directory {n, then n x (source, bytes)}
 * followed by the payloads in directory order; bytes < 0 announces a direct message of
 * -(bytes + 1) bytes, with no payload. */
size_t MPIR_Rm_directory_bytes(int n);
int MPIR_Rm_read_directory(const char *buf, size_t len, int *n, const int64_t ** entries,
                           const char **payload);

/* A signature of a process's counts: plans made for one signature are reused for it. */
uint64_t MPIR_Rm_signature(const size_t * send_bytes, const size_t * recv_bytes, int n);

/* The key of the plan a communicator keeps: the counts (and their signature, compared first)
 * and the node graph it was made with. A signature alone could collide: the counts are
 * compared too, so that a plan is never used for other counts. */
typedef struct {
    int valid;
    uint64_t sig, graph_gen;
    size_t *counts;             /* n send counts, then n receive counts */
    int n;
    uint64_t hits, misses;
} MPIR_Rm_cache_t;

/* 1 if the kept plan is for (sig, graph_gen) and these counts; else 0, and the key becomes
 * theirs (if it cannot be kept for lack of memory, the next lookup misses again). */
int MPIR_Rm_cache_lookup(MPIR_Rm_cache_t * cache, uint64_t sig, uint64_t graph_gen,
                         const size_t * send_bytes, const size_t * recv_bytes, int n);
void MPIR_Rm_cache_free(MPIR_Rm_cache_t * cache);

#endif /* RM_PLAN_H_INCLUDED */
