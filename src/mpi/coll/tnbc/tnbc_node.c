/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Node arbitration: the processes of a node take turns on the node's link.
 *
 * When the processes of a communicator read the received blocks in one order, all the blocks
 * that one process sends have the same urgency: its position in that order. If the processes
 * of a node send their bodies all at once, they share the link and every block arrives as late
 * as the last. Taking turns, most urgent first, brings the blocks read first early and the
 * others no later.
 *
 * A shared segment per node (created at MPI_Init over COMM_WORLD's node communicator; MPICH
 * removes its file once every process mapped it, so no exit leaves it behind) has one slot per
 * local process: the operation it is sending remote bodies for and its position, and how many
 * bytes its bodies have completed so far. A process holds its remote bodies while a node peer in
 * the same operation with a better position still has bodies to send; it stops holding when
 * that peer has made no progress for MPIR_CVAR_TNBC_NODE_HOLD_MAX_US. Holding is a hint, never
 * a wait on another process: peers that disagree on the order, are late or are gone cost at
 * most that time, and every message still goes. */

#include "mpiimpl.h"
#include "tnbc_impl.h"
#include "mpidu_shm.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_NODE_ARBITRATION
      category    : TNBC
      type        : boolean
      default     : true
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_ALL_EQ
      description : >-
        If true (and MPIR_CVAR_TNBC_ENABLE), the processes of a node take turns on its link for
        the bodies of an Alltoall(v) whose access order is known (learnt or from a profile):
        the process whose blocks are read first sends first. Needs one shared-memory segment
        per node, made at MPI_Init.

    - name        : MPIR_CVAR_TNBC_NODE_HOLD_MAX_US
      category    : TNBC
      type        : int
      default     : 100000
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        A process holds its bodies back for a more urgent node peer only while that peer
        completes sends at least this often (microseconds); then it sends anyway.

    - name        : MPIR_CVAR_TNBC_SEND_WINDOW
      category    : TNBC
      type        : int
      default     : 2097152
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        While node arbitration applies, a process keeps at most this many bytes of remote
        bodies in flight (at least one body), so that a peer's turn starts soon after this
        process's ends and its blocks go out one receiver after another.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* A slot is written by its process only; peers read it. One cache line each. */
typedef struct {
    uint64_t claim;             /* MPII_CLAIM(...) of the operation with bodies unsent, or 0 */
    uint64_t done;              /* bytes of remote bodies completed, ever (progress) */
    char pad[48];
} MPII_node_slot_t;

#define MPII_POS_BITS 24
#define MPII_POS_MAX ((1u << MPII_POS_BITS) - 1)
/* valid bit, 16 bits of context id, 23 of tag, 24 of position */
#define MPII_CLAIM(ctx_, tag_, pos_)                                            \
    ((1ull << 63) | ((uint64_t) ((ctx_) & 0xffff) << 47) |                      \
     ((uint64_t) ((tag_) & 0x7fffff) << MPII_POS_BITS) | (uint64_t) (pos_))
#define MPII_CLAIM_OP(claim_) ((claim_) >> MPII_POS_BITS)
#define MPII_CLAIM_POS(claim_) ((int) ((claim_) & MPII_POS_MAX))

static struct {
    MPII_node_slot_t *slots;    /* the node's segment, or NULL: no arbitration */
    int nslots, self;
    const MPII_Tnbc_turn_t *owner;      /* the operation that holds our slot */
} node;

int MPIR_Tnbc_node_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Comm *node_comm = MPIR_Process.comm_world ? MPIR_Process.comm_world->node_comm : NULL;
    bool failed = false;
    void *seg;

    if (!MPIR_CVAR_TNBC_ENABLE || !MPIR_CVAR_TNBC_NODE_ARBITRATION || !node_comm)
        goto fn_exit;
    /* every local process takes part, or none: the CVARs are the same everywhere */
    mpi_errno = MPIDU_shm_alloc(node_comm, node_comm->local_size * sizeof(MPII_node_slot_t),
                                &seg, &failed);
    MPIR_ERR_CHECK(mpi_errno);
    if (failed)
        goto fn_exit;   /* no shared memory: the processes send all at once, as before */
    node.slots = seg;
    node.nslots = node_comm->local_size;
    node.self = node_comm->rank;
    memset(&node.slots[node.self], 0, sizeof(MPII_node_slot_t));

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPII_Tnbc_node_finalize(void)
{
    if (node.slots) {
        MPIDU_shm_free(node.slots);
        node.slots = NULL;
    }
}

int MPII_Tnbc_node_available(void)
{
    return node.slots != NULL;
}

int MPII_Tnbc_node_peer_is_remote(MPIR_Comm * comm, int rank)
{
    int mine, theirs;
    if (MPID_Get_node_id(comm, comm->rank, &mine) != MPI_SUCCESS ||
        MPID_Get_node_id(comm, rank, &theirs) != MPI_SUCCESS)
        return 1;
    return mine != theirs;
}

int MPII_Tnbc_node_join(MPII_Tnbc_turn_t * turn, MPIR_Comm * comm, int tag, int pos,
                        size_t remote_bytes)
{
    memset(turn, 0, sizeof(*turn));
    if (!node.slots || pos < 0 || remote_bytes == 0 || node.owner)
        return 0;
    turn->claim = MPII_CLAIM(comm->context_id, tag, MPL_MIN((unsigned) pos, MPII_POS_MAX));
    turn->unsent = remote_bytes;
    turn->window = MPL_MAX(MPIR_CVAR_TNBC_SEND_WINDOW, 1);
    turn->active = 1;
    node.owner = turn;
    __atomic_store_n(&node.slots[node.self].claim, turn->claim, __ATOMIC_RELEASE);
    return 1;
}

void MPII_Tnbc_node_sent(MPII_Tnbc_turn_t * turn, size_t bytes)
{
    if (!turn->active)
        return;
    turn->unsent -= MPL_MIN(bytes, turn->unsent);
    __atomic_add_fetch(&node.slots[node.self].done, bytes, __ATOMIC_RELEASE);
    if (turn->unsent == 0)
        MPII_Tnbc_node_leave(turn);
}

void MPII_Tnbc_node_leave(MPII_Tnbc_turn_t * turn)
{
    if (!turn->active)
        return;
    __atomic_store_n(&node.slots[node.self].claim, 0, __ATOMIC_RELEASE);
    node.owner = NULL;
    turn->active = 0;
    MPII_Tnbc_stats_node_turn(turn->held_since_ns ? turn->last_held_ns - turn->held_since_ns :
                              0, turn->held_since_ns != 0, turn->gave_up);
}

/* The most urgent peer ahead of us in the same operation that still has bodies to send. */
static int peer_ahead(const MPII_Tnbc_turn_t * turn)
{
    int best = -1, best_pos = MPII_CLAIM_POS(turn->claim);
    for (int i = 0; i < node.nslots; i++) {
        if (i == node.self)
            continue;
        uint64_t c = __atomic_load_n(&node.slots[i].claim, __ATOMIC_ACQUIRE);
        if (c && MPII_CLAIM_OP(c) == MPII_CLAIM_OP(turn->claim) && MPII_CLAIM_POS(c) < best_pos) {
            best = i;
            best_pos = MPII_CLAIM_POS(c);
        }
    }
    return best;
}

int MPII_Tnbc_node_must_hold(MPII_Tnbc_turn_t * turn)
{
    if (!turn->active || turn->gave_up)
        return 0;
    int peer = peer_ahead(turn);
    if (peer < 0)
        return 0;
    uint64_t now = MPII_Tnbc_now_ns();
    uint64_t done = __atomic_load_n(&node.slots[peer].done, __ATOMIC_ACQUIRE);
    if (!turn->held_since_ns)
        turn->held_since_ns = now;
    turn->last_held_ns = now;
    if (peer != turn->peer || done != turn->peer_done || !turn->peer_seen_ns) {
        turn->peer = peer;
        turn->peer_done = done;
        turn->peer_seen_ns = now;
    } else if (now - turn->peer_seen_ns > (uint64_t) MPIR_CVAR_TNBC_NODE_HOLD_MAX_US * 1000) {
        turn->gave_up = 1;
        return 0;
    }
    return 1;
}
