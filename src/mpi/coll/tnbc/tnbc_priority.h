/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Access orders: the order in which an application first reads the receive sub-messages
 * ("blocks") of a collective, per call site. A call site is one place in the application
 * that calls one collective with one shape (communicator size, receive bytes, blocks); an
 * iterative code meets the same sites again and again, so the order seen in earlier calls
 * predicts the next one. Orders come from a profile (a trace run merged by maint/tnbc-profile)
 * or are learnt online from the first touches the page guards record.
 *
 * Profile format (text, one site per two lines, '#' starts a comment):
 *     site <collective> <comm size> <receive bytes> <blocks> <caller>
 *     order <block> <block> ...
 * caller is the call's return address as an offset in its executable or library (hex, 0x...);
 * "*" matches any caller. order lists every block once, the one read first first.
 *
 * Pure C: no MPICH includes, unit-tested with Check. */

#ifndef TNBC_PRIORITY_H_INCLUDED
#define TNBC_PRIORITY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "tnbc_gain.h"

#define MPIR_TNBC_ANY_CALLER UINT64_MAX

typedef struct {
    int coll;                   /* MPIR_Tnbc_coll_t */
    int comm_size;
    int nblocks;                /* receive sub-messages */
    uint64_t recv_bytes;
    uint64_t caller;            /* offset of the return address in its object */
} MPIR_Tnbc_site_key_t;

typedef struct {
    MPIR_Tnbc_site_key_t key;
    int *rank;                  /* rank[b]: position of block b, 0 = read first */
    int known;                  /* an order was observed or loaded */
    int from_profile;
    unsigned long calls;        /* collectives seen at this site */
    unsigned long observations; /* calls whose touches were recorded */
    unsigned long changes;      /* observations that changed the order */
    /* Faults show only the blocks read before they arrived: when they cannot place the blocks
     * (one faulted, or several in the order already known), a coming call records every first
     * touch (a sample), until a sample finds the order unchanged (confirmed). */
    int confirmed;
    int want_sample;
    unsigned long sampled_at;   /* calls when the last sample was taken (0: none) */
    /* orders other processes reported for this site (a Bcast parent hears its children's):
     * peer_pos[i] is the newest from peer_rank[i] */
    int npeers;
    int *peer_rank;
    int **peer_pos;
    /* where each process reads this one's block (an Alltoall(v)'s order reports): reader_pos[p]
     * (0 first, -1 not reported), nreaders known */
    int *reader_pos;
    int nreaders;
    MPIR_Tnbc_gain_t gain;      /* return early here, or wait in the call (tnbc_gain.h) */
} MPIR_Tnbc_site_t;

/* A process keeps at most this many sites, each of at most this many blocks, and this many
 * blocks in all (16 MiB of orders): a code whose collectives change shape every step (particle
 * exchanges) stops learning new shapes rather than grow without bound, and a profile cannot
 * make a process allocate more. */
#define MPIR_TNBC_SITES_MAX        4096
#define MPIR_TNBC_SITE_BLOCKS_MAX  (1 << 20)
#define MPIR_TNBC_SITES_BLOCKS_MAX (1 << 22)

typedef struct {
    int n, cap;
    size_t nblocks;             /* blocks of all sites */
    MPIR_Tnbc_site_t **sites;   /* in the order they were added */
    int *index;                 /* open addressing over sites: 1 + position, 0 empty */
    int index_cap;              /* a power of two, at least twice cap */
} MPIR_Tnbc_sites_t;

#define MPIR_TNBC_PRIORITY_OK          0
#define MPIR_TNBC_PRIORITY_ERR_NOMEM  -1
#define MPIR_TNBC_PRIORITY_ERR_SYNTAX -2
#define MPIR_TNBC_PRIORITY_ERR_LIMIT  -3    /* more sites or blocks than the bounds above */

void MPIR_Tnbc_sites_init(MPIR_Tnbc_sites_t * t);
void MPIR_Tnbc_sites_free(MPIR_Tnbc_sites_t * t);

/* The site of key: exact caller first, then a "*" site of the same shape. With create, a
 * missing site is added (order: block order, not yet known). NULL: not found or no memory. */
MPIR_Tnbc_site_t *MPIR_Tnbc_sites_get(MPIR_Tnbc_sites_t * t, const MPIR_Tnbc_site_key_t * key,
                                      int create);

/* One call's first touches: touch[b] is block b's position among the touches (1 = first),
 * 0 when no touch was seen. complete: every block the application read reported its touch
 * (a trace run or a sample); otherwise only blocks still missing when read did (page faults),
 * and those are reordered among the positions they held, the others keep theirs. Returns 1
 * when the order changed. Faults that change nothing ask for a sample (see confirmed). */
int MPIR_Tnbc_site_observe(MPIR_Tnbc_site_t * s, const int *touch, int complete);

/* Take a sample in this call? Only when faults could not tell the order, the site does not
 * come from a profile, and gap calls have passed since the last sample (gap 0: never). */
int MPIR_Tnbc_site_take_sample(MPIR_Tnbc_site_t * s, unsigned long gap);

/* Whether pos (pos[b]: block b's position) reads blocks first..n-1 in their own order, each
 * before the next (the others, wherever they are read, do not count). NULL, no order known:
 * the blocks go in their own order. */
int MPIR_Tnbc_order_is_natural(const int *pos, int first, int n);

/* Renumber positive touch orders as 1, 2, ... keeping their order (0 stays 0). */
void MPIR_Tnbc_touch_ranks(int *touch, int n);

/* blocks[i] = the block at position i (the inverse of rank). */
void MPIR_Tnbc_site_order(const MPIR_Tnbc_site_t * s, int *blocks);

/* Keep the order peer reported (pos[b]: block b's position); returns 0 without memory. */
int MPIR_Tnbc_site_set_peer_order(MPIR_Tnbc_site_t * s, int peer, const int *pos);
/* The order peer last reported, or NULL. */
const int *MPIR_Tnbc_site_peer_order(const MPIR_Tnbc_site_t * s, int peer);

/* Keep the positions the readers reported for a site of comm_size processes: in[p] is where
 * process p reads our block (rank, ours, is skipped). -1 (the reader did not know, e.g. a call
 * too small to learn from) keeps what p reported before; anything else outside 0..nblocks-1
 * forgets it. Returns how many are known now (0 also without memory). */
int MPIR_Tnbc_site_set_reader_pos(MPIR_Tnbc_site_t * s, const int32_t * in, int rank);
/* The readers' positions, or NULL when none has reported. */
const int *MPIR_Tnbc_site_reader_pos(const MPIR_Tnbc_site_t * s);
/* send_pos[p] (0 first) from the readers' positions: the block read earliest goes first, ties
 * and unreported readers (last) in ring order from rank. */
void MPIR_Tnbc_send_order_by_readers(const int *reader_pos, int rank, int size, int *send_pos);

/* Parse a whole profile. Returns OK, ERR_NOMEM, or ERR_SYNTAX with the 1-based line in
 * *bad_line. Sites are added to t (from_profile, known). */
int MPIR_Tnbc_profile_parse(const char *text, MPIR_Tnbc_sites_t * t, int *bad_line);

/* Write the known sites of t as a profile into buf (at most len bytes, NUL-terminated);
 * returns the length the whole text needs, like snprintf. */
size_t MPIR_Tnbc_profile_format(const MPIR_Tnbc_sites_t * t, char *buf, size_t len);

/* Collective names as in the profile: MPIR_Tnbc_coll_name's, or -1. */
int MPIR_Tnbc_coll_of_name(const char *name);

#endif /* TNBC_PRIORITY_H_INCLUDED */
