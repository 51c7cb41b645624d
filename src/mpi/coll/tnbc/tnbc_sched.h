/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Schedule tables of the T-NBC family.
 *
 * A schedule lists what one rank does for one collective: sends, receives, local copies and
 * local reductions, in bytes, against three flat spaces -- the send space (the user's send
 * buffer or a copy of it), the receive space (the user's receive buffer, seen through its
 * page-guard staging, or a temporary buffer) and a work space of the operation's own
 * (partial results of reductions). Each receive space range that an entry fills is one
 * receive sub-message; they are sorted by offset and never overlap, as the page guards need.
 * Entries that read the send space after the call may have returned name a send sub-message,
 * which stays guarded or copied until all its readers are done.
 *
 * An entry may wait for up to two earlier entries ("after", "after2"): a tree Bcast forwards a
 * segment only once it has received it; a reduction step needs its input and the previous
 * step. Lower priority values are posted first, and the sends (receives) to one peer are
 * always posted in that order ("prev_peer"), whatever order their dependencies complete in:
 * MPI matches messages of one tag in posting order, so the schedules of the two sides agree
 * on which message is which. An entry may instead have a tag of its own (tag > 0: the
 * operation draws ntags tags) when it is the only message with that tag between its two
 * processes in its direction; it matches whatever the posting order, so each side may post
 * such messages in an order of its own (a Bcast posts its segments in each process's access
 * order).
 *
 * Pure C: no MPICH includes, unit-tested with Check. */

#ifndef TNBC_SCHED_H_INCLUDED
#define TNBC_SCHED_H_INCLUDED

#include <stddef.h>

#define MPIR_TNBC_SCHED_OK           0
#define MPIR_TNBC_SCHED_ERR_NOMEM   -1
#define MPIR_TNBC_SCHED_ERR_ARG     -2
#define MPIR_TNBC_SCHED_ERR_OVERLAP -3  /* receive ranges overlap: the user layout cannot be
                                         * guarded; use a packed receive space instead */

/* Edge pieces. A receive buffer's first and last pages are usually shared with other memory and
 * cannot be guarded, so the sub-messages on them must arrive before the call returns. Every
 * piece of more than two edges therefore travels as head (first EDGE bytes), tail (last EDGE
 * bytes) and body, heads and tails first: a process returns as soon as its edges are in. The
 * split depends only on sizes both sides know, so the messages match; the pairwise builders send
 * a smaller pair as three messages too (two of them empty), so that they still match one to one
 * when an erroneous program's sizes disagree. */
#define MPIR_TNBC_SCHED_EDGE 4096

typedef enum {
    MPIR_TNBC_SEND,             /* space[off, +len) to peer */
    MPIR_TNBC_RECV,             /* from peer into space[off, +len) */
    MPIR_TNBC_COPY,             /* src_space[src_off, +len) -> space[off, +len) */
    MPIR_TNBC_REDUCE            /* space[off] = src_space[src_off] op space[off], len bytes */
} MPIR_Tnbc_kind_t;

typedef enum {
    MPIR_TNBC_SPACE_SEND,
    MPIR_TNBC_SPACE_RECV,
    MPIR_TNBC_SPACE_WORK
} MPIR_Tnbc_space_t;

typedef struct {
    MPIR_Tnbc_kind_t kind;
    int peer;                   /* rank in the communicator (SEND, RECV) */
    MPIR_Tnbc_space_t space;    /* the space off refers to */
    size_t off;
    MPIR_Tnbc_space_t src_space;        /* COPY, REDUCE: where the input is */
    size_t src_off;
    size_t len;
    int after, after2;          /* entries that must complete before this one starts; -1: none */
    int prev_peer;              /* set by finish: the previous SEND (RECV) to (from) peer */
    int sub;                    /* receive sub-message if the entry writes the receive space,
                                 * else send sub-message if it reads the send space, else -1 */
    int prio;                   /* lower goes first */
    int tag;                    /* which of the operation's tags (0: the shared one) */
    int block;                  /* receive entries: the block of the access order the data
                                 * belongs to (-1: the peer's, as in the pairwise layout) */
} MPIR_Tnbc_entry_t;

/* The sub-message an entry names is a receive sub-message (it fills the receive space). */
static inline int MPIR_Tnbc_entry_fills_recv(const MPIR_Tnbc_entry_t * e)
{
    return e->kind != MPIR_TNBC_SEND && e->space == MPIR_TNBC_SPACE_RECV;
}

typedef struct {
    int n, cap;
    MPIR_Tnbc_entry_t *entries;
    int *order;                 /* entry indices by (prio, index) once finished */
    /* receive sub-messages, sorted by offset, non-overlapping */
    int nrecv_sub;
    size_t *recv_sub_off, *recv_sub_len;
    size_t recv_bytes;          /* extent of the receive space */
    /* send sub-messages, in the order the builder created them (may overlap) */
    int nsend_sub;
    size_t *send_sub_off, *send_sub_len;
    size_t send_bytes;          /* extent of the send space */
    size_t work_bytes;          /* extent of the work space */
    size_t elem;                /* REDUCE: bytes per element (lengths are multiples) */
    int body_prio;              /* entries of this priority or more are bodies, which no process
                                 * waits for before its call returns (0: none are) */
    int ntags;                  /* tags the operation draws (0: one) */
    int body_window;            /* sends of bodies in flight to one peer at most (0: any) */
    int reports;                /* carries order reports (MPIR_Tnbc_sched_alltoallv_ordered) */
    int built;                  /* every entry and tag is there (set by finish, even if it
                                 * then runs out of memory) */
} MPIR_Tnbc_sched_t;

/* the most tags a schedule draws (a Bcast of the most segments) */
#define MPIR_TNBC_SCHED_MAX_TAGS (MPII_TNBC_MAX_SEGS + 4)

void MPIR_Tnbc_sched_init(MPIR_Tnbc_sched_t * s);
void MPIR_Tnbc_sched_free(MPIR_Tnbc_sched_t * s);

/* Alltoall(v) in bytes. Per peer p: sbytes[p] from send offset soff[p], rbytes[p] to receive
 * offset roff[p] (relative to the spaces). The self pair becomes one COPY. Peers are visited in
 * ring order (rank+1, rank+2, ... for sends; rank-1, rank-2, ... for receives) so that each
 * step pairs every rank with a distinct partner; all edge pieces go before the bodies. Empty
 * pairs get no entry. */
int MPIR_Tnbc_sched_alltoallv(MPIR_Tnbc_sched_t * s, int rank, int size,
                              const size_t * sbytes, const size_t * soff,
                              const size_t * rbytes, const size_t * roff);
/* The same, with the receive bodies posted by recv_pos[from] (0 first: the access order) and
 * the sends by send_pos[to] (0 first: a reorder plan, or the readers' orders) instead of ring
 * order; edges still go before bodies. NULL: ring order. With reports (every process or
 * none), each rank also tells every peer where it reads that peer's block: an int32 (-1:
 * unknown) from its work space at MPIR_Tnbc_report_out_off(peer) into the peer's at
 * MPIR_Tnbc_report_in_off(size, rank), on a tag of its own; the work space is then
 * MPIR_Tnbc_reports_bytes(size). A report goes after the body to the same peer (after):
 * over one connection it arrives after the body, so its being matched tells the sender the
 * body was delivered. A hint only: MPI does not order messages of different tags, and a
 * transport with several rails may deliver them out of order. */
int MPIR_Tnbc_sched_alltoallv_ordered(MPIR_Tnbc_sched_t * s, int rank, int size,
                                      const size_t * sbytes, const size_t * soff,
                                      const size_t * rbytes, const size_t * roff,
                                      const int *recv_pos, const int *send_pos, int reports);
size_t MPIR_Tnbc_reports_bytes(int size);
size_t MPIR_Tnbc_report_out_off(int peer);
size_t MPIR_Tnbc_report_in_off(int size, int peer);

/* The entry is a body: no process waits for it before returning, so it may be held back:
 * by node arbitration, or by body_window, which keeps the order of priorities on the wire
 * (posted all at once, a transport may move large messages side by side, and the one read
 * first comes as late as the last). */
static inline int MPIR_Tnbc_entry_is_body(const MPIR_Tnbc_sched_t * s, const MPIR_Tnbc_entry_t * e)
{
    return s->body_prio > 0 && e->prio >= s->body_prio;
}

/* block[k] = the block of the access order receive sub-message k belongs to, or -1. The
 * pairwise layouts have one block per source rank (a self copy: this rank); a Bcast has one
 * per piece. */
void MPIR_Tnbc_sched_recv_sub_blocks(const MPIR_Tnbc_sched_t * s, int *block);

/* Neighbour collectives: nsend pieces to dests[k] (sbytes[k] at soff[k]) and nrecv pieces from
 * srcs[k] (rbytes[k] at roff[k]); a negative peer (MPI_PROC_NULL) moves nothing. A peer may
 * appear several times, this rank too: the i-th message to a peer (in dests order) is the i-th
 * that peer expects from us in srcs order, or in reverse srcs order with recv_reversed. That
 * is how MPICH 4.0.2's own algorithms match them (reversed for Neighbor_alltoall only, so that
 * on a periodic Cartesian dimension of size 2 the message to the -1 neighbour arrives as the
 * one from the +1 neighbour); T-NBC keeps the stock results. */
int MPIR_Tnbc_sched_neighbor(MPIR_Tnbc_sched_t * s, int nsend, const int *dests,
                             const size_t * sbytes, const size_t * soff, int nrecv,
                             const int *srcs, const size_t * rbytes, const size_t * roff,
                             int recv_reversed);

/* Binomial-tree Bcast of nbytes in pieces: a head and a tail edge (when nbytes > 2 EDGE), then
 * the rest in nseg segments (at least one byte each); the pieces are the blocks of its access
 * order. The root's buffer is its send space; every other rank receives into its receive space
 * and forwards each piece to its children as soon as that piece has arrived. Every piece has a
 * tag of its own, so each process posts its receives in its own access order (recv_pos[piece]:
 * position, 0 first; NULL: piece order) and its sends to child c in that child's
 * (child_pos[c], children in MPIR_Tnbc_bcast_tree's order; NULL or a NULL entry: recv_pos);
 * edges always go first. With several pieces, every process but the root also sends its
 * parent an order report (MPIR_Tnbc_bcast_report_bytes, from its send space: the caller puts
 * it there) and every parent receives its children's into its work space, report c at
 * c * report bytes, so that a parent learns the order its children read in. The segments
 * are bodies (the edges are not). */
typedef struct {
    const int *recv_pos;
    const int *const *child_pos;
    const int *ranks;           /* the tree's order of ranks, the root first (NULL: by rank
                                 * from the root): a node's ranks together keep the tree's
                                 * lower levels inside the node */
} MPIR_Tnbc_bcast_order_t;

int MPIR_Tnbc_sched_bcast(MPIR_Tnbc_sched_t * s, int rank, int size, int root, size_t nbytes,
                          int nseg, const MPIR_Tnbc_bcast_order_t * order);
/* The tree over ranks (as in MPIR_Tnbc_bcast_order_t, or NULL): *parent (-1 at the root) and
 * children[], largest subtree first; returns the number of children, or -1 when ranks does
 * not list rank after the root. */
#define MPIR_TNBC_BCAST_MAX_CHILDREN 32
int MPIR_Tnbc_bcast_tree(int rank, int size, int root, const int *ranks, int *parent,
                         int *children);
/* How many pieces (blocks) a Bcast of nbytes in nseg segments has. */
int MPIR_Tnbc_bcast_pieces(size_t nbytes, int nseg);
/* How many of those pieces are the buffer's edges (pieces 0 and 1, before the segments). */
int MPIR_Tnbc_bcast_edge_pieces(size_t nbytes);
/* Bytes of one order report for npieces pieces (0: this Bcast sends none). A report is
 * npieces + 1 int32: 1 when an order is known, then each piece's position. */
size_t MPIR_Tnbc_bcast_report_bytes(int npieces);
void MPIR_Tnbc_bcast_report_encode(const int *pos, int npieces, void *report);
/* The positions a report carries into pos; 0 when it names no order or is not a
 * permutation of npieces. */
int MPIR_Tnbc_bcast_report_decode(const void *report, size_t len, int npieces, int *pos);

/* Reductions with a commutative, associative op on elements of elem bytes; every length is
 * a multiple of elem. The head and tail edges (up to EDGE bytes of whole elements) of each
 * result travel directly: every process sends its input to the processes that need them, which
 * combine all inputs in rank order (the same operations in the same order everywhere, so an
 * Allreduce gives the same bits on every process). The rest is reduced around a ring in
 * pipelined chunks (reduce-scatter: each process ends with one fully reduced chunk), then
 * distributed around the ring again (Allreduce) or sent to the root (Reduce).
 *
 * Allreduce: nbytes in the send space and the receive space of every process.
 * Reduce: nbytes in every send space and the root's receive space.
 * Reduce_scatter: the send space holds size blocks of bytes[k]; process k's receive space
 * gets the reduced block k.
 * Scan / Exscan: a pipeline along the ranks in segments (edges first, then nseg); the receive
 * space of rank k gets the reduction of ranks 0..k (Scan) or 0..k-1 (Exscan; none on rank 0).
 * The op must be commutative for every builder but Scan and Exscan. */
int MPIR_Tnbc_sched_allreduce(MPIR_Tnbc_sched_t * s, int rank, int size, size_t nbytes,
                              size_t elem);
int MPIR_Tnbc_sched_reduce(MPIR_Tnbc_sched_t * s, int rank, int size, int root, size_t nbytes,
                           size_t elem);
int MPIR_Tnbc_sched_reduce_scatter(MPIR_Tnbc_sched_t * s, int rank, int size,
                                   const size_t * bytes, size_t elem);
int MPIR_Tnbc_sched_scan(MPIR_Tnbc_sched_t * s, int rank, int size, size_t nbytes, size_t elem,
                         int nseg, int exclusive);

/* Sort the receive sub-messages by offset (renumbering entries), check that they do not
 * overlap, compute order[]. Builders call it; exposed for tests. */
int MPIR_Tnbc_sched_finish(MPIR_Tnbc_sched_t * s);

/* 1 when the send sub-messages are sorted and non-overlapping (a read-only guard needs it). */
int MPIR_Tnbc_sched_send_subs_disjoint(const MPIR_Tnbc_sched_t * s);

/* 1 when some entry reads the receive space (a tree forwards what it received from there; a
 * reduction combines into it). */
int MPIR_Tnbc_sched_reads_recv(const MPIR_Tnbc_sched_t * s);

/* 1 when entry i copies part of the send space into receive sub-message e->sub with nothing
 * before it: the caller may do that copy itself, straight into the receive buffer, at the
 * start (a self block), when nothing reads the receive space afterwards. */
int MPIR_Tnbc_sched_is_first_self_copy(const MPIR_Tnbc_sched_t * s, int i);

/* For the builders (tnbc_sched*.c). */
MPIR_Tnbc_entry_t MPII_Tnbc_entry(MPIR_Tnbc_kind_t kind, int peer, MPIR_Tnbc_space_t space,
                                  size_t off, size_t len, int prio);
int MPII_Tnbc_sched_add(MPIR_Tnbc_sched_t * s, const MPIR_Tnbc_entry_t * e);
int MPII_Tnbc_sched_reserve(MPIR_Tnbc_sched_t * s, int nrecv, int nsend);
int MPII_Tnbc_sched_recv_sub(MPIR_Tnbc_sched_t * s, size_t off, size_t len);
int MPII_Tnbc_sched_send_sub(MPIR_Tnbc_sched_t * s, size_t off, size_t len);
/* head edge, tail edge and the middle in nseg segments of whole elements; returns the count */
int MPII_Tnbc_sched_segments(size_t nbytes, size_t elem, int nseg, size_t * off, size_t * len);
#define MPII_TNBC_MAX_SEGS 1024

#endif /* TNBC_SCHED_H_INCLUDED */
