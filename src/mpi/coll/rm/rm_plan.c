/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Reorder + merge planning (see rm_plan.h). */

#include "rm_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t nfrag, final;
} MPII_Rm_header_t;

static int MPII_Rm_order_kind;
static int MPII_Rm_my_node, MPII_Rm_my_rank, MPII_Rm_size;

static int ring_distance(int peer)
{
    return (peer - MPII_Rm_my_rank + MPII_Rm_size) % MPII_Rm_size;
}

static int compare_msgs(const void *pa, const void *pb)
{
    const MPIR_Rm_msg_t *a = pa, *b = pb;

    if (MPII_Rm_order_kind != MPIR_RM_ORDER_RING) {
        int da = abs(a->node - MPII_Rm_my_node), db = abs(b->node - MPII_Rm_my_node);
        if (da != db)
            return (MPII_Rm_order_kind == MPIR_RM_ORDER_NEAR_FIRST) ? da - db : db - da;
        /* one node pair's messages stay adjacent even when two nodes are equally far */
        if (a->node != b->node)
            return ((a->node - MPII_Rm_my_node + MPII_Rm_size) % MPII_Rm_size) -
                ((b->node - MPII_Rm_my_node + MPII_Rm_size) % MPII_Rm_size);
        if (a->weight != b->weight)
            return a->weight > b->weight ? -1 : 1;
    }
    return ring_distance(a->peer) - ring_distance(b->peer);
}

void MPIR_Rm_order(MPIR_Rm_msg_t * msgs, int n, int my_node, int my_rank,
                   int comm_size, MPIR_Rm_order_t order)
{
    /* qsort has no context argument in C99; the callers hold MPICH's lock or are tests */
    MPII_Rm_order_kind = order;
    MPII_Rm_my_node = my_node;
    MPII_Rm_my_rank = my_rank;
    MPII_Rm_size = comm_size;
    qsort(msgs, n, sizeof(*msgs), compare_msgs);
}

double MPIR_Rm_alpha(const int64_t * node_bytes, int nnodes, int a, int b)
{
    int outdeg = 0, indeg = 0;

    for (int c = 0; c < nnodes; c++) {
        if (c != a && node_bytes[(size_t) a * nnodes + c] > 0)
            outdeg++;
        if (c != b && node_bytes[(size_t) c * nnodes + b] > 0)
            indeg++;
    }
    int deg = outdeg > indeg ? outdeg : indeg;
    return 1.5 + log2(deg > 1 ? deg : 1);
}

/* The next aggregate's payload: alpha times this one, at least one byte more, at most cap. */
static size_t grow(size_t t, double alpha, size_t cap)
{
    double next = (double) t * (alpha > 1.0 ? alpha : 1.0);
    if (next < (double) t + 1)
        next = (double) t + 1;
    return next >= (double) cap ? cap : (size_t) next;
}

int MPIR_Rm_split(const size_t * bytes, int n, size_t first_bytes, double alpha, size_t cap,
                  MPIR_Rm_split_t * split)
{
    size_t total = 0, target = first_bytes ? first_bytes : 1;
    int maxagg = 1, maxfrag = 0;

    memset(split, 0, sizeof(*split));
    if (cap == 0)
        cap = 1;
    if (target > cap)
        target = cap;
    for (int i = 0; i < n; i++)
        total += bytes[i];
    /* bound the number of aggregates: each one but the last is at least min(target_a, cap) */
    for (size_t t = target, left = total; left > 0; maxagg++) {
        left -= (left < t) ? left : t;
        t = grow(t, alpha, cap);
    }
    maxfrag = n + maxagg;
    split->first = malloc((maxagg + 1) * sizeof(int));
    split->frags = malloc((maxfrag + 1) * sizeof(MPIR_Rm_frag_t));
    if (!split->first || !split->frags) {
        MPIR_Rm_split_free(split);
        return MPIR_RM_ERR_NOMEM;
    }

    size_t room = target, off = 0;
    int msg = 0;
    split->first[0] = 0;
    while (msg < n && bytes[msg] == 0)
        msg++;
    while (msg < n) {
        size_t len = bytes[msg] - off;
        if (len > room)
            len = room;
        split->frags[split->nfrag++] = (MPIR_Rm_frag_t) {.msg = msg,.off = off,.len = len};
        off += len;
        room -= len;
        if (off == bytes[msg]) {
            off = 0;
            do
                msg++;
            while (msg < n && bytes[msg] == 0);
        }
        if (room == 0 && msg < n) {
            split->first[++split->nagg] = split->nfrag;
            target = grow(target, alpha, cap);
            room = target;
        }
    }
    split->first[++split->nagg] = split->nfrag;
    return MPIR_RM_OK;
}

void MPIR_Rm_split_free(MPIR_Rm_split_t * split)
{
    free(split->first);
    free(split->frags);
    memset(split, 0, sizeof(*split));
}

size_t MPIR_Rm_header_bytes(int nfrag)
{
    return sizeof(MPII_Rm_header_t) + (size_t) nfrag * sizeof(MPIR_Rm_wire_frag_t);
}

char *MPIR_Rm_write_header(char *buf, int nfrag, int final,
                           const MPIR_Rm_wire_frag_t * frags)
{
    MPII_Rm_header_t h = {.nfrag = (uint32_t) nfrag,.final = (uint32_t) final };
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), frags, (size_t) nfrag * sizeof(*frags));
    return buf + MPIR_Rm_header_bytes(nfrag);
}

int MPIR_Rm_read_header(const char *buf, size_t len, int max_frag, int *nfrag, int *final,
                        const MPIR_Rm_wire_frag_t ** frags, const char **payload)
{
    MPII_Rm_header_t h;

    if (len < sizeof(h))
        return MPIR_RM_ERR_FORMAT;
    memcpy(&h, buf, sizeof(h));
    if (h.nfrag > (uint32_t) max_frag || h.final > 1 || len < MPIR_Rm_header_bytes(h.nfrag))
        return MPIR_RM_ERR_FORMAT;
    /* the sender wrote the descriptors at an 8-byte aligned offset of a malloc'ed buffer */
    const MPIR_Rm_wire_frag_t *f = (const void *) (buf + sizeof(h));
    size_t sum = MPIR_Rm_header_bytes(h.nfrag);
    for (uint32_t k = 0; k < h.nfrag; k++) {
        if (f[k].off == MPIR_RM_DIRECT_OFF && f[k].len == 0)
            continue;
        if (f[k].len > len - sum || f[k].off > f[k].total || f[k].len > f[k].total - f[k].off)
            return MPIR_RM_ERR_FORMAT;
        sum += f[k].len;
    }
    if (sum != len)
        return MPIR_RM_ERR_FORMAT;
    *nfrag = (int) h.nfrag;
    *final = (int) h.final;
    *frags = f;
    *payload = buf + MPIR_Rm_header_bytes(h.nfrag);
    return MPIR_RM_OK;
}

size_t MPIR_Rm_directory_bytes(int n)
{
    return sizeof(int64_t) * (1 + 2 * (size_t) n);
}

int MPIR_Rm_read_directory(const char *buf, size_t len, int *n, const int64_t ** entries,
                           const char **payload)
{
    int64_t count;

    if (len < sizeof(count))
        return MPIR_RM_ERR_FORMAT;
    memcpy(&count, buf, sizeof(count));
    if (count < 0 || (uint64_t) count > (len - sizeof(count)) / (2 * sizeof(int64_t)))
        return MPIR_RM_ERR_FORMAT;
    const int64_t *e = (const void *) (buf + sizeof(count));
    size_t sum = MPIR_Rm_directory_bytes((int) count);
    for (int64_t k = 0; k < count; k++) {
        if (e[2 * k + 1] == INT64_MIN || (e[2 * k + 1] >= 0 && (uint64_t) e[2 * k + 1] > len - sum))
            return MPIR_RM_ERR_FORMAT;
        if (e[2 * k + 1] > 0)
            sum += (size_t) e[2 * k + 1];
    }
    if (sum != len)
        return MPIR_RM_ERR_FORMAT;
    *n = (int) count;
    *entries = e;
    *payload = buf + MPIR_Rm_directory_bytes((int) count);
    return MPIR_RM_OK;
}

uint64_t MPIR_Rm_signature(const size_t * send_bytes, const size_t * recv_bytes, int n)
{
    uint64_t h = 1469598103934665603ULL;        /* FNV-1a */
    for (int i = 0; i < n; i++) {
        uint64_t v[2] = { send_bytes[i], recv_bytes[i] };
        const unsigned char *p = (const unsigned char *) v;
        for (size_t k = 0; k < sizeof(v); k++)
            h = (h ^ p[k]) * 1099511628211ULL;
    }
    return h ^ (uint64_t) n;
}

int MPIR_Rm_cache_lookup(MPIR_Rm_cache_t * cache, uint64_t sig, uint64_t graph_gen,
                         const size_t * send_bytes, const size_t * recv_bytes, int n)
{
    size_t half = (size_t) n * sizeof(size_t);
    if (cache->valid && cache->sig == sig && cache->graph_gen == graph_gen && cache->n == n &&
        !memcmp(cache->counts, send_bytes, half) && !memcmp(cache->counts + n, recv_bytes, half)) {
        cache->hits++;
        return 1;
    }
    cache->misses++;
    cache->valid = 0;
    if (cache->n != n) {
        free(cache->counts);
        cache->counts = malloc(2 * half + 1);
        cache->n = cache->counts ? n : 0;
    }
    if (!cache->counts)
        return 0;
    memcpy(cache->counts, send_bytes, half);
    memcpy(cache->counts + n, recv_bytes, half);
    cache->valid = 1;
    cache->sig = sig;
    cache->graph_gen = graph_gen;
    return 0;
}

void MPIR_Rm_cache_free(MPIR_Rm_cache_t * cache)
{
    free(cache->counts);
    cache->counts = NULL;
    cache->n = 0;
    cache->valid = 0;
}
