/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Access orders per call site: learning from first touches, and the profile text format
 * (tnbc_priority.h). Pure C. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* qsort_r */
#endif
#include "tnbc_priority.h"
#include "tnbc_policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void MPIR_Tnbc_sites_init(MPIR_Tnbc_sites_t * t)
{
    memset(t, 0, sizeof(*t));
}

void MPIR_Tnbc_sites_free(MPIR_Tnbc_sites_t * t)
{
    for (int i = 0; i < t->n; i++) {
        MPIR_Tnbc_site_t *s = t->sites[i];
        for (int p = 0; p < s->npeers; p++)
            free(s->peer_pos[p]);
        free(s->peer_pos);
        free(s->peer_rank);
        free(s->reader_pos);
        free(s->rank);
        free(s);
    }
    free(t->sites);
    free(t->index);
    MPIR_Tnbc_sites_init(t);
}

static int same_shape(const MPIR_Tnbc_site_key_t * a, const MPIR_Tnbc_site_key_t * b)
{
    return a->coll == b->coll && a->comm_size == b->comm_size && a->nblocks == b->nblocks &&
        a->recv_bytes == b->recv_bytes;
}

static uint64_t key_hash(const MPIR_Tnbc_site_key_t * k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint64_t v[] = { (uint64_t) k->coll, (uint64_t) k->comm_size, (uint64_t) k->nblocks,
        k->recv_bytes, k->caller
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        h ^= v[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

/* The index slot of key: the one holding it, or the empty one where it would go. */
static size_t index_slot(const MPIR_Tnbc_sites_t * t, const MPIR_Tnbc_site_key_t * key)
{
    size_t mask = (size_t) t->index_cap - 1, i = (size_t) key_hash(key) & mask;
    while (t->index[i]) {
        const MPIR_Tnbc_site_key_t *k = &t->sites[t->index[i] - 1]->key;
        if (same_shape(k, key) && k->caller == key->caller)
            break;
        i = (i + 1) & mask;
    }
    return i;
}

static MPIR_Tnbc_site_t *find(const MPIR_Tnbc_sites_t * t, const MPIR_Tnbc_site_key_t * key)
{
    if (!t->index_cap)
        return NULL;
    int pos = t->index[index_slot(t, key)];
    return pos ? t->sites[pos - 1] : NULL;
}

/* Room for one more site: the list and an index at most half full. */
static int make_room(MPIR_Tnbc_sites_t * t)
{
    if (t->n < t->cap)
        return 1;
    int cap = t->cap ? 2 * t->cap : 16;
    MPIR_Tnbc_site_t **sites = realloc(t->sites, cap * sizeof(*sites));
    int *index = calloc((size_t) 2 * cap, sizeof(int));
    if (!sites || !index) {
        if (sites)
            t->sites = sites;
        free(index);
        return 0;
    }
    t->sites = sites;
    t->cap = cap;
    free(t->index);
    t->index = index;
    t->index_cap = 2 * cap;
    for (int i = 0; i < t->n; i++)
        t->index[index_slot(t, &t->sites[i]->key)] = i + 1;
    return 1;
}

/* Room for a site of key's shape within the bounds. */
static int within_bounds(const MPIR_Tnbc_sites_t * t, const MPIR_Tnbc_site_key_t * key)
{
    return key->nblocks >= 0 && key->nblocks <= MPIR_TNBC_SITE_BLOCKS_MAX &&
        t->n < MPIR_TNBC_SITES_MAX &&
        t->nblocks + (size_t) key->nblocks <= MPIR_TNBC_SITES_BLOCKS_MAX;
}

static MPIR_Tnbc_site_t *add_site(MPIR_Tnbc_sites_t * t, const MPIR_Tnbc_site_key_t * key)
{
    if (!within_bounds(t, key) || !make_room(t))
        return NULL;
    MPIR_Tnbc_site_t *s = calloc(1, sizeof(*s));
    int *rank = malloc(((size_t) key->nblocks + 1) * sizeof(int));
    if (!s || !rank) {
        free(s);
        free(rank);
        return NULL;
    }
    s->key = *key;
    s->rank = rank;
    for (int b = 0; b < key->nblocks; b++)
        rank[b] = b;
    t->index[index_slot(t, key)] = t->n + 1;
    t->sites[t->n++] = s;
    t->nblocks += (size_t) key->nblocks;
    return s;
}

MPIR_Tnbc_site_t *MPIR_Tnbc_sites_get(MPIR_Tnbc_sites_t * t, const MPIR_Tnbc_site_key_t * key,
                                      int create)
{
    MPIR_Tnbc_site_t *s = find(t, key);
    if (s)
        return s;
    MPIR_Tnbc_site_key_t any_key = *key;
    any_key.caller = MPIR_TNBC_ANY_CALLER;
    MPIR_Tnbc_site_t *any = find(t, &any_key);
    if (any || !create)
        return any;
    return add_site(t, key);
}

int MPIR_Tnbc_site_take_sample(MPIR_Tnbc_site_t * s, unsigned long gap)
{
    if (!s->want_sample || s->from_profile || gap == 0 ||
        (s->sampled_at && s->calls < s->sampled_at + gap))
        return 0;
    s->want_sample = 0;
    s->sampled_at = s->calls;
    return 1;
}

/* The slot of peer's order, or -1. */
static int peer_slot(const MPIR_Tnbc_site_t * s, int peer)
{
    for (int p = 0; p < s->npeers; p++)
        if (s->peer_rank[p] == peer)
            return p;
    return -1;
}

const int *MPIR_Tnbc_site_peer_order(const MPIR_Tnbc_site_t * s, int peer)
{
    int p = peer_slot(s, peer);
    return p >= 0 ? s->peer_pos[p] : NULL;
}

int MPIR_Tnbc_site_set_peer_order(MPIR_Tnbc_site_t * s, int peer, const int *pos)
{
    size_t bytes = ((size_t) s->key.nblocks + 1) * sizeof(int);
    int p = peer_slot(s, peer);
    int *kept = p >= 0 ? s->peer_pos[p] : NULL;

    if (!kept) {
        int *rank = realloc(s->peer_rank, (s->npeers + 1) * sizeof(int));
        if (rank)
            s->peer_rank = rank;
        int **all = rank ? realloc(s->peer_pos, (s->npeers + 1) * sizeof(int *)) : NULL;
        if (all)
            s->peer_pos = all;
        kept = all ? malloc(bytes) : NULL;
        if (!kept)
            return 0;
        s->peer_rank[s->npeers] = peer;
        s->peer_pos[s->npeers++] = kept;
    }
    memcpy(kept, pos, s->key.nblocks * sizeof(int));
    return 1;
}

int MPIR_Tnbc_site_set_reader_pos(MPIR_Tnbc_site_t * s, const int32_t * in, int rank)
{
    int n = s->key.comm_size, known = 0;
    if (!s->reader_pos) {
        if (!(s->reader_pos = malloc(((size_t) n + 1) * sizeof(int))))
            return 0;
        for (int p = 0; p < n; p++)
            s->reader_pos[p] = -1;
    }
    for (int p = 0; p < n; p++) {
        if (p == rank)
            s->reader_pos[p] = -1;
        else if (in[p] >= 0 && in[p] < s->key.nblocks)
            s->reader_pos[p] = in[p];
        else if (in[p] != -1)   /* -1 keeps the last report */
            s->reader_pos[p] = -1;
        known += s->reader_pos[p] >= 0;
    }
    s->nreaders = known;
    return known;
}

const int *MPIR_Tnbc_site_reader_pos(const MPIR_Tnbc_site_t * s)
{
    return s->nreaders > 0 ? s->reader_pos : NULL;
}

typedef struct {
    int pos, dist, peer;
} MPII_reader_t;

static int cmp_readers(const void *a, const void *b)
{
    const MPII_reader_t *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->dist < y->dist ? -1 : x->dist > y->dist;
}

void MPIR_Tnbc_send_order_by_readers(const int *reader_pos, int rank, int size, int *send_pos)
{
    MPII_reader_t *r = malloc(((size_t) size + 1) * sizeof(*r));
    int n = 0;
    for (int p = 0; p < size; p++) {
        send_pos[p] = (p - rank + size) % size;        /* ring order, if no memory */
        if (p != rank && r) {
            r[n].pos = reader_pos[p] >= 0 ? reader_pos[p] : INT_MAX;
            r[n].dist = send_pos[p];
            r[n++].peer = p;
        }
    }
    if (!r)
        return;
    qsort(r, n, sizeof(*r), cmp_readers);
    for (int i = 0; i < n; i++)
        send_pos[r[i].peer] = i;
    free(r);
}

void MPIR_Tnbc_site_order(const MPIR_Tnbc_site_t * s, int *blocks)
{
    for (int b = 0; b < s->key.nblocks; b++)
        blocks[s->rank[b]] = b;
}

static int cmp_by_key(const void *a, const void *b, void *key)
{
    int x = ((int *) key)[*(const int *) a], y = ((int *) key)[*(const int *) b];
    if (x != y)
        return x < y ? -1 : 1;
    return *(const int *) a - *(const int *) b;
}

/* blocks (indices) by key[block], then by index */
static void sort_blocks(int *blocks, int n, int *key)
{
    qsort_r(blocks, n, sizeof(int), cmp_by_key, key);
}

void MPIR_Tnbc_touch_ranks(int *touch, int n)
{
    int *blocks = malloc(((size_t) n + 1) * sizeof(int));
    int m = 0;
    if (!blocks)
        return;
    for (int b = 0; b < n; b++)
        if (touch[b] > 0)
            blocks[m++] = b;
    sort_blocks(blocks, m, touch);
    for (int i = 0; i < m; i++)
        touch[blocks[i]] = i + 1;
    free(blocks);
}

int MPIR_Tnbc_site_observe(MPIR_Tnbc_site_t * s, const int *touch, int complete)
{
    int n = s->key.nblocks, changed = 0, m = 0;
    size_t bytes = ((size_t) n + 1) * sizeof(int);
    int *touched = malloc(bytes), *slots = malloc(bytes), *key = malloc(bytes);
    int *ranks = malloc(bytes);

    s->observations++;
    if (!touched || !slots || !key || !ranks)
        goto fn_exit;
    memcpy(ranks, touch, n * sizeof(int));
    MPIR_Tnbc_touch_ranks(ranks, n);
    for (int b = 0; b < n; b++)
        if (ranks[b] > 0)
            touched[m++] = b;
    if (m == 0)
        goto fn_exit;

    if (complete) {
        /* touched blocks in touch order, then the others in their previous order */
        for (int b = 0; b < n; b++) {
            key[b] = ranks[b] > 0 ? ranks[b] - 1 : n + s->rank[b];
            slots[b] = b;
        }
        sort_blocks(slots, n, key);
        for (int i = 0; i < n; i++) {
            changed |= (s->rank[slots[i]] != i);
            s->rank[slots[i]] = i;
        }
    } else {
        /* the positions the touched blocks held, handed out again in touch order */
        for (int i = 0; i < m; i++)
            slots[i] = s->rank[touched[i]];
        for (int b = 0; b < n; b++)
            key[b] = b;
        sort_blocks(slots, m, key);     /* ascending positions */
        sort_blocks(touched, m, ranks);
        for (int i = 0; i < m; i++) {
            changed |= (s->rank[touched[i]] != slots[i]);
            s->rank[touched[i]] = slots[i];
        }
    }
    s->changes += changed && s->known;
    s->known = 1;
    if (complete) {
        s->confirmed = !changed;
        s->want_sample = 0;
        /* early calls so far ran the old order; faults (incomplete) move blocks on every
         * early call of a site read at random, and must not keep the site trying */
        if (changed)
            MPIR_Tnbc_gain_forget_early(&s->gain);
    } else if (changed) {
        s->confirmed = 0;
    } else if (!s->confirmed) {
        s->want_sample = 1;
    }

  fn_exit:
    free(touched);
    free(slots);
    free(key);
    free(ranks);
    return changed;
}

int MPIR_Tnbc_order_is_natural(const int *pos, int first, int n)
{
    for (int b = first; pos && b + 1 < n; b++)
        if (pos[b] > pos[b + 1])
            return 0;
    return 1;
}

int MPIR_Tnbc_coll_of_name(const char *name)
{
    for (int c = 0; c < MPIR_TNBC_COLL_COUNT; c++)
        if (strcmp(name, MPIR_Tnbc_coll_name((MPIR_Tnbc_coll_t) c)) == 0)
            return c;
    return -1;
}

/* One line without its newline into buf (truncated lines are syntax errors). */
static const char *next_line(const char *p, char *buf, size_t len, int *too_long)
{
    size_t n = 0;
    *too_long = 0;
    for (; *p && *p != '\n'; p++) {
        if (n + 1 < len)
            buf[n++] = *p;
        else
            *too_long = 1;
    }
    buf[n] = '\0';
    char *hash = strchr(buf, '#');
    if (hash)
        *hash = '\0';
    return *p ? p + 1 : p;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char) *s))
            return 0;
    return 1;
}

static int parse_site(const char *line, MPIR_Tnbc_site_key_t * key)
{
    char coll[64], caller[32];
    unsigned long long bytes;
    char extra;
    if (sscanf(line, " site %63s %d %llu %d %31s %c", coll, &key->comm_size, &bytes,
               &key->nblocks, caller, &extra) != 5)
        return -1;
    key->coll = MPIR_Tnbc_coll_of_name(coll);
    key->recv_bytes = bytes;
    if (key->coll < 0 || key->comm_size < 1 || key->nblocks < 1)
        return -1;
    if (strcmp(caller, "*") == 0) {
        key->caller = MPIR_TNBC_ANY_CALLER;
        return 0;
    }
    char *end;
    if (strncmp(caller, "0x", 2) != 0)
        return -1;
    key->caller = strtoull(caller + 2, &end, 16);
    return (*end || end == caller + 2) ? -1 : 0;
}

/* "order b0 b1 ...": a permutation of the site's blocks. */
static int parse_order(const char *p, MPIR_Tnbc_site_t * s)
{
    int n = s->key.nblocks, i = 0;
    unsigned char *seen = calloc((size_t) n + 1, 1);
    if (!seen)
        return MPIR_TNBC_PRIORITY_ERR_NOMEM;
    while (isspace((unsigned char) *p))
        p++;
    if (strncmp(p, "order", 5) != 0 || !isspace((unsigned char) p[5]))
        goto fn_fail;
    p += 5;
    for (;;) {
        char *end;
        while (isspace((unsigned char) *p))
            p++;
        if (!*p)
            break;
        long b = strtol(p, &end, 10);
        if (end == p || (*end && !isspace((unsigned char) *end)) || b < 0 || b >= n || seen[b] ||
            i == n)
            goto fn_fail;
        seen[b] = 1;
        s->rank[b] = i++;
        p = end;
    }
    if (i != n)
        goto fn_fail;
    free(seen);
    return MPIR_TNBC_PRIORITY_OK;
  fn_fail:
    free(seen);
    return MPIR_TNBC_PRIORITY_ERR_SYNTAX;
}

int MPIR_Tnbc_profile_parse(const char *text, MPIR_Tnbc_sites_t * t, int *bad_line)
{
    int lineno = 0, rc = MPIR_TNBC_PRIORITY_OK, too_long;
    size_t cap = strlen(text) + 1;
    char *line = malloc(cap);
    MPIR_Tnbc_site_t *pending = NULL;   /* a site line waiting for its order line */

    *bad_line = 0;
    if (!line)
        return MPIR_TNBC_PRIORITY_ERR_NOMEM;
    for (const char *p = text; *p;) {
        p = next_line(p, line, cap, &too_long);
        lineno++;
        if (blank(line))
            continue;
        if (pending) {
            rc = parse_order(line, pending);
            if (rc != MPIR_TNBC_PRIORITY_OK)
                goto fn_fail;
            pending->known = pending->from_profile = 1;
            pending = NULL;
            continue;
        }
        MPIR_Tnbc_site_key_t key;
        rc = MPIR_TNBC_PRIORITY_ERR_SYNTAX;
        if (too_long || parse_site(line, &key) != 0)
            goto fn_fail;
        MPIR_Tnbc_site_t *twin = MPIR_Tnbc_sites_get(t, &key, 0);
        if (twin && twin->key.caller == key.caller)
            goto fn_fail;       /* the same site twice */
        rc = MPIR_TNBC_PRIORITY_ERR_LIMIT;
        if (!within_bounds(t, &key))
            goto fn_fail;
        pending = add_site(t, &key);
        rc = MPIR_TNBC_PRIORITY_ERR_NOMEM;
        if (!pending)
            goto fn_fail;
    }
    rc = MPIR_TNBC_PRIORITY_OK;
    if (pending) {
        lineno++;
        rc = MPIR_TNBC_PRIORITY_ERR_SYNTAX;
        goto fn_fail;
    }

  fn_exit:
    free(line);
    return rc;
  fn_fail:
    if (rc == MPIR_TNBC_PRIORITY_ERR_SYNTAX || rc == MPIR_TNBC_PRIORITY_ERR_LIMIT)
        *bad_line = lineno;
    goto fn_exit;
}

size_t MPIR_Tnbc_profile_format(const MPIR_Tnbc_sites_t * t, char *buf, size_t len)
{
    size_t need = 0;
#define MPII_EMIT(...)                                                          \
    do {                                                                        \
        int w_ = snprintf(buf + (need < len ? need : len),                      \
                          need < len ? len - need : 0, __VA_ARGS__);            \
        need += (w_ > 0 ? (size_t) w_ : 0);                                     \
    } while (0)

    if (len)
        buf[0] = '\0';
    MPII_EMIT("# mpich-tnbc access profile: site <collective> <comm size> <receive bytes> "
              "<blocks> <caller>, then the blocks in the order they are read\n");
    for (int i = 0; i < t->n; i++) {
        const MPIR_Tnbc_site_t *s = t->sites[i];
        if (!s->known)
            continue;
        MPII_EMIT("site %s %d %" PRIu64 " %d ", MPIR_Tnbc_coll_name(s->key.coll),
                  s->key.comm_size, s->key.recv_bytes, s->key.nblocks);
        if (s->key.caller == MPIR_TNBC_ANY_CALLER)
            MPII_EMIT("*\norder");
        else
            MPII_EMIT("0x%" PRIx64 "\norder", s->key.caller);
        int *blocks = malloc(((size_t) s->key.nblocks + 1) * sizeof(int));
        if (!blocks)
            return 0;
        MPIR_Tnbc_site_order(s, blocks);
        for (int pos = 0; pos < s->key.nblocks; pos++)
            MPII_EMIT(" %d", blocks[pos]);
        free(blocks);
        MPII_EMIT("\n");
    }
#undef MPII_EMIT
    return need;
}
