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
 * A shared segment per node (created by MPI_Init over COMM_WORLD's node communicator; MPICH
 * removes its file once every process mapped it, so no exit leaves it behind) has one slot per
 * local process: the operation it is sending remote bodies for and its position, and how many
 * bytes its bodies have completed so far. A process holds its remote bodies while a node peer in
 * the same operation with a better position (or the same, in a lower slot) still has bodies to
 * send; it stops holding when that peer has made no progress for
 * MPIR_CVAR_TNBC_NODE_HOLD_MAX_US. When the readers reported where they read each body
 * (paced operations), a process's position is that of its next body (MPII_Tnbc_node_set_pos),
 * so the node's bodies take turns one by one, most urgent first. Holding is a hint, never a
 * wait on another process: peers that disagree on the order, are late or are gone cost at
 * most that time, and every message still goes. */

#include "mpiimpl.h"
#include "coll_peers.h"
#include "tnbc_node.h"
#include "tnbc_stats.h"
#include "tnbc_util.h"
#include "mpid_tnbc.h"

/*
=== BEGIN_MPI_T_CVAR_INFO_BLOCK ===

cvars:
    - name        : MPIR_CVAR_TNBC_NODE_ARBITRATION
      category    : TNBC
      type        : boolean
      default     : false
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        If true (and MPIR_CVAR_TNBC_ENABLE), the processes of a node take turns on its link for
        the bodies of an Alltoall, Alltoallv, Alltoallw or Allgather(v) whose access order is
        known (learnt or from a profile): the process whose blocks are read first sends first.
        They share one segment per node, made by MPI_Init whenever MPIR_CVAR_TNBC_ENABLE is
        set; a process with this CVAR off sends all at once and never holds. Off by default:
        it pays only where the application reads about as fast as the wire delivers.

    - name        : MPIR_CVAR_TNBC_NODE_HOLD_MAX_US
      category    : TNBC
      type        : int
      default     : 100000
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        A process holds its bodies back for a more urgent node peer only while that peer
        completes sends at least this often (microseconds); then it sends anyway. Its send
        window likewise lapses while its own bodies complete less often. 0: never hold.

    - name        : MPIR_CVAR_TNBC_SEND_WINDOW
      category    : TNBC
      type        : int
      default     : 2097152
      class       : none
      verbosity   : MPI_T_VERBOSITY_USER_BASIC
      scope       : MPI_T_SCOPE_LOCAL
      description : >-
        While a less urgent node peer waits for its turn, a process keeps at most this many
        bytes of remote bodies in flight (at least one body), so that the peer's turn starts
        soon after this process's ends.

=== END_MPI_T_CVAR_INFO_BLOCK ===
*/

/* A slot is written by its process only; peers read it. One cache line each. */
typedef struct {
    uint64_t claim;             /* MPII_CLAIM(...) of the operation with bodies unsent, or 0 */
    uint64_t done;              /* bytes of remote bodies completed, ever (progress) */
    char pad[48];
} MPII_node_slot_t;

/* valid bit, 39 bits naming the operation, 24 of position */
#define MPII_POS_BITS 24
#define MPII_POS_MAX ((1u << MPII_POS_BITS) - 1)
#define MPII_OP_MASK ((1ull << 39) - 1)
#define MPII_CLAIM(op_, pos_) ((1ull << 63) | ((op_) & MPII_OP_MASK) << MPII_POS_BITS | (pos_))
#define MPII_CLAIM_OP(claim_) ((claim_) >> MPII_POS_BITS)
#define MPII_CLAIM_POS(claim_) ((int) ((claim_) & MPII_POS_MAX))

static struct {
    MPII_node_slot_t *slots;    /* the node's segment, or NULL: no arbitration */
    int nslots, self;
    const MPII_Tnbc_turn_t *owner;      /* the operation that holds our slot */
} node;

int MPII_Tnbc_node_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    static int attempted;
    MPIR_Comm *node_comm = MPIR_Process.comm_world ? MPIR_Process.comm_world->node_comm : NULL;
    bool failed = false;
    void *seg;

    /* collective over the node: it depends on MPIR_CVAR_TNBC_ENABLE alone, the same
     * everywhere; whether a process then arbitrates is its own choice */
    if (attempted || !MPIR_Tnbc_enabled || !node_comm)
        goto fn_exit;
    attempted = 1;
    MPID_THREAD_CS_ENTER(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    mpi_errno = MPID_Tnbc_node_segment_alloc(node_comm,
                                             node_comm->local_size * sizeof(MPII_node_slot_t),
                                             &seg, &failed);
    MPID_THREAD_CS_EXIT(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    MPIR_ERR_CHECK(mpi_errno);
    if (failed)
        goto fn_exit;   /* no shared memory: the processes send all at once, as before */
    /* a new segment reads as zeros: every slot is free */
    node.slots = seg;
    node.nslots = node_comm->local_size;
    node.self = node_comm->rank;

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPII_Tnbc_node_finalize(void)
{
    if (node.slots) {
        MPID_Tnbc_node_segment_free(node.slots);
        node.slots = NULL;
        node.owner = NULL;
    }
}

int MPII_Tnbc_node_available(void)
{
    return node.slots != NULL && MPIR_CVAR_TNBC_NODE_ARBITRATION;
}

/* Whether a communicator has processes of more than one world (spawn, connect/accept), kept
 * as an attribute: found once per communicator, freed with it. */
enum { MPII_ONE_WORLD = 1, MPII_WORLDS = 2 };
static int worlds_keyval = MPI_KEYVAL_INVALID;

static int worlds_finalize(void *unused)
{
    if (worlds_keyval != MPI_KEYVAL_INVALID) {
        MPII_Keyval *keyval_ptr;
        MPII_Keyval_get_ptr(worlds_keyval, keyval_ptr);
        MPIR_free_keyval(keyval_ptr);
        worlds_keyval = MPI_KEYVAL_INVALID;
    }
    return MPI_SUCCESS;
}

/* A process knows the node of every process of its own world and of no other: the processes
 * of a communicator that spans worlds each see some unknown node, so all of them answer 1. */
int MPII_Tnbc_comm_spans_worlds(MPIR_Comm * comm)
{
    void *kept = NULL;
    int flag = 0;
    MPII_Keyval *keyval_ptr;

    if (worlds_keyval == MPI_KEYVAL_INVALID) {
        if (MPIR_Comm_create_keyval_impl(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN,
                                         &worlds_keyval, NULL) != MPI_SUCCESS)
            return 1;   /* cannot tell: decline, as on every process whatever it finds */
        MPIR_Add_finalize(worlds_finalize, NULL, MPIR_FINALIZE_CALLBACK_PRIO - 1);
    }
    if (MPIR_Comm_get_attr_impl(comm, worlds_keyval, &kept, &flag, MPIR_ATTR_PTR) ==
        MPI_SUCCESS && flag)
        return (intptr_t) kept == MPII_WORLDS;
    intptr_t worlds = MPII_ONE_WORLD;
    for (int r = 0; r < comm->local_size && worlds == MPII_ONE_WORLD; r++)
        if (MPIR_Coll_node_of(comm, r) < 0)
            worlds = MPII_WORLDS;
    MPII_Keyval_get_ptr(worlds_keyval, keyval_ptr);
    (void) MPIR_Comm_set_attr_impl(comm, keyval_ptr, (void *) worlds, MPIR_ATTR_PTR);
    return worlds == MPII_WORLDS;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    return x ^ (x >> 33);
}

/* The same on every process of the operation, and (but for a rare collision, which costs at
 * most a bounded hold) different between operations that run at once: MPI_Comm_split gives
 * every colour the same context id and tags, so the communicator's first member counts too. */
static uint64_t operation_id(MPIR_Comm * comm, int tag)
{
    uint64_t first = 0;
    if (MPID_Comm_get_lpid(comm, 0, &first, false) != MPI_SUCCESS)
        first = 0;
    return mix64(mix64(((uint64_t) comm->context_id << 32) | (uint32_t) tag) ^ first);
}

int MPII_Tnbc_node_join(MPII_Tnbc_turn_t * turn, MPIR_Comm * comm, int tag, int pos,
                        size_t remote_bytes)
{
    memset(turn, 0, sizeof(*turn));
    if (!MPII_Tnbc_node_available() || pos < 0 || remote_bytes == 0 || node.owner)
        return 0;
    turn->claim = MPII_CLAIM(operation_id(comm, tag), MPL_MIN((unsigned) pos, MPII_POS_MAX));
    turn->unsent = remote_bytes;
    turn->window = MPL_MAX(MPIR_CVAR_TNBC_SEND_WINDOW, 1);
    turn->sent_ns = MPII_Tnbc_now_ns();
    turn->active = 1;
    node.owner = turn;
    __atomic_store_n(&node.slots[node.self].claim, turn->claim, __ATOMIC_RELEASE);
    return 1;
}

int MPII_Tnbc_node_set_pos(MPII_Tnbc_turn_t * turn, int pos)
{
    if (!turn->active || !node.slots || pos < 0)
        return 0;
    uint64_t claim = (turn->claim & ~(uint64_t) MPII_POS_MAX) | MPL_MIN((unsigned) pos,
                                                                        MPII_POS_MAX);
    if (claim == turn->claim)
        return 0;
    turn->claim = claim;
    __atomic_store_n(&node.slots[node.self].claim, claim, __ATOMIC_RELEASE);
    return 1;
}

void MPII_Tnbc_node_sent(MPII_Tnbc_turn_t * turn, size_t bytes)
{
    if (!turn->active || !node.slots)
        return;
    turn->unsent -= MPL_MIN(bytes, turn->unsent);
    turn->sent_ns = MPII_Tnbc_now_ns();
    __atomic_add_fetch(&node.slots[node.self].done, bytes, __ATOMIC_RELEASE);
    if (turn->unsent == 0)
        MPII_Tnbc_node_leave(turn);
}

static void stop_holding(MPII_Tnbc_turn_t * turn, uint64_t now)
{
    if (turn->holding_since_ns)
        turn->held_ns += now - turn->holding_since_ns;
    turn->holding_since_ns = 0;
}

void MPII_Tnbc_node_leave(MPII_Tnbc_turn_t * turn)
{
    if (!turn->active)
        return;
    turn->active = 0;
    stop_holding(turn, MPII_Tnbc_now_ns());
    turn->window_applies = 0;
    if (node.slots) {   /* else the segment is gone already (MPI_Finalize) */
        __atomic_store_n(&node.slots[node.self].claim, 0, __ATOMIC_RELEASE);
        node.owner = NULL;
    }
    MPII_Tnbc_stats_node_turn(turn->held_ns, turn->held, turn->gave_up);
}

/* The most urgent peer ahead of us in the same operation that still has bodies to send, and
 * whether one behind us waits. Of two peers at one position the lower slot goes first, so
 * that the link carries one of them at a time. */
static int scan_peers(const MPII_Tnbc_turn_t * turn, int *behind)
{
    int best = -1, best_pos = MPII_CLAIM_POS(turn->claim), mine = best_pos;
    *behind = 0;
    for (int i = 0; i < node.nslots; i++) {
        if (i == node.self)
            continue;
        uint64_t c = __atomic_load_n(&node.slots[i].claim, __ATOMIC_ACQUIRE);
        if (!c || MPII_CLAIM_OP(c) != MPII_CLAIM_OP(turn->claim))
            continue;
        int pos = MPII_CLAIM_POS(c);
        if (pos < mine || (pos == mine && i < node.self)) {
            if (best < 0 || pos < best_pos) {
                best = i;
                best_pos = pos;
            }
        } else {
            *behind = 1;
        }
    }
    return best;
}

/* Hold for peer while it keeps completing bodies; give up for good once it has not for the
 * limit (it may disagree on the order, be late, or be gone). */
static int holds_for(MPII_Tnbc_turn_t * turn, int peer, uint64_t now, uint64_t limit_ns)
{
    if (peer < 0 || turn->gave_up || limit_ns == 0)
        return 0;
    uint64_t done = __atomic_load_n(&node.slots[peer].done, __ATOMIC_ACQUIRE);
    if (peer != turn->peer || done != turn->peer_done || !turn->peer_seen_ns) {
        turn->peer = peer;
        turn->peer_done = done;
        turn->peer_seen_ns = now;
    } else if (now - turn->peer_seen_ns > limit_ns) {
        turn->gave_up = 1;
        return 0;
    }
    return 1;
}

void MPII_Tnbc_node_poll(MPII_Tnbc_turn_t * turn)
{
    int behind;
    if (!turn->active || !node.slots)
        return;
    uint64_t now = MPII_Tnbc_now_ns();
    uint64_t limit_ns = (uint64_t) MPL_MAX(MPIR_CVAR_TNBC_NODE_HOLD_MAX_US, 0) * 1000;
    int peer = scan_peers(turn, &behind);
    if (holds_for(turn, peer, now, limit_ns)) {
        if (!turn->holding_since_ns)
            turn->holding_since_ns = now;
        turn->held = 1;
    } else {
        stop_holding(turn, now);
    }
    /* a receiver that is late (rendezvous) must not keep our later bodies back */
    turn->window_applies = behind && now - turn->sent_ns <= limit_ns;
}
