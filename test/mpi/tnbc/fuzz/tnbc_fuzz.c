/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The differential fuzzer's program (maint/tnbc-fuzz runs it with T-NBC off and on and compares
 * what it prints). A seed makes one random program, the same on every process: a sequence of
 * the collectives T-NBC takes -- random counts (0, small, across the thresholds, many pages),
 * datatypes with holes and a negative lower bound, in-place forms, roots -- on buffers of every
 * kind (heap, page-aligned heap, mmap, .bss, stack, MPI_Alloc_mem), between which the program
 * uses results late and in random page order, feeds one call's pending result to the next as
 * input or output, overwrites, frees and reallocates pending buffers, hands them to the kernel
 * (write, read), reads them from a second thread and from a signal handler, forks, and dups,
 * splits and frees communicators; one process at a time arrives late. The timer's handler reads
 * a result while the program computes and inside MPI calls. Every byte the program
 * reads, holes included, goes into a digest.
 *
 * Usage: tnbc_fuzz [-seeds=FIRST:COUNT] [-steps=N] [-trace]
 *   prints, per seed, "seed S rank R digest D"; with -trace, each step and its running digest;
 *   -steps=N runs only the first N steps of each program (a replay of a prefix). */

#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tnbc_test_timer.h"

#define MAX_STEPS 14
#define MAX_LIVE 6
#define MAX_COMMS 4
#define BSS_SIZE (1 << 20)
#define MAX_BYTES (BSS_SIZE / 2)        /* the most bytes any one buffer spans */

static int world_rank, world_size, trace, step_limit = MAX_STEPS;
static uint64_t digest;

/* ---- random numbers: the program's stream (every process draws the same numbers in the same
 * order: what all must agree on), the process's own stream (buffers, what it does with its
 * results), and hashes for data ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t program_state, local_state;

static int below(int n)
{
    uint64_t x = mix(program_state++);
    return n > 0 ? (int) (x % (uint64_t) n) : 0;
}

static int chance(int percent)
{
    return below(100) < percent;
}

static int local_below(int n)
{
    uint64_t x = mix(local_state++);
    return n > 0 ? (int) (x % (uint64_t) n) : 0;
}

static int local_chance(int percent)
{
    return local_below(100) < percent;
}

/* a value every process computes alike from the program's state and its arguments */
static uint64_t agreed(uint64_t salt, uint64_t a, uint64_t b)
{
    return mix(program_state * 0x100000001b3ULL ^ mix(salt ^ mix(a * 131 + b)));
}

static void absorb(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = digest ^ len;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    digest = mix(h);
}

/* ---- datatypes: the same menu on every process ---- */

enum { T_INT, T_CHAR, T_HOLES, T_NEG_LB, T_PADDED, T_LONG, T_PAIR, NTYPES };
static MPI_Datatype types[NTYPES];
static MPI_Aint type_lb[NTYPES], type_extent[NTYPES], true_lb[NTYPES], true_extent[NTYPES];
static const char *type_names[NTYPES] = {
    "int", "char", "holes", "neglb", "padded", "long", "2int"
};

static void make_types(void)
{
    MPI_Datatype vec, two;
    types[T_INT] = MPI_INT;
    types[T_CHAR] = MPI_CHAR;
    types[T_LONG] = MPI_LONG;
    /* 2 blocks of 3 ints 5 apart, extent 10 ints: holes inside and after */
    MPI_Type_vector(2, 3, 5, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 10 * sizeof(int), &types[T_HOLES]);
    MPI_Type_free(&vec);
    /* for MAXLOC and MINLOC (MPICH's predefined operations take no derived type) */
    types[T_PAIR] = MPI_2INT;
    /* an int 8 bytes before the origin and one 4 after it */
    int len[2] = { 1, 1 };
    MPI_Aint disp[2] = { -8, 4 };
    MPI_Type_create_hindexed(2, len, disp, MPI_INT, &two);
    MPI_Type_create_resized(two, -8, 16, &types[T_NEG_LB]);
    MPI_Type_free(&two);
    /* {int, double} with the 4 bytes between them a hole */
    MPI_Aint sdisp[2] = { 0, 8 };
    MPI_Datatype stypes[2] = { MPI_INT, MPI_DOUBLE };
    MPI_Type_create_struct(2, len, sdisp, stypes, &types[T_PADDED]);
    for (int t = 0; t < NTYPES; t++) {
        if (t == T_HOLES || t == T_NEG_LB || t == T_PADDED)
            MPI_Type_commit(&types[t]);
        MPI_Type_get_extent(types[t], &type_lb[t], &type_extent[t]);
        MPI_Type_get_true_extent(types[t], &true_lb[t], &true_extent[t]);
    }
}

/* bytes from the lowest to the highest byte count elements touch, and where element 0 goes */
static size_t span_of(int t, long count)
{
    return count > 0 ? (size_t) (true_extent[t] + (count - 1) * type_extent[t]) : 0;
}

/* ---- buffers ---- */

enum { B_HEAP, B_ALIGNED, B_MMAP, B_BSS, B_ALLOC_MEM, NKINDS };
static char bss_pool[BSS_SIZE] __attribute__ ((aligned(4096)));
static int bss_used;            /* the pool holds one buffer at a time */

typedef struct {
    char *mem;                  /* what was allocated */
    size_t len;
    int kind;
} buffer_t;

static int buffer_new(buffer_t * b, size_t len, int kind)
{
    len = len ? len : 1;
    if (kind == B_BSS && (bss_used || len > BSS_SIZE))
        kind = B_HEAP;
    b->len = len;
    b->kind = kind;
    switch (kind) {
        case B_HEAP:
            b->mem = malloc(len);
            break;
        case B_ALIGNED:
            if (posix_memalign((void **) &b->mem, 4096, len) != 0)
                b->mem = NULL;
            break;
        case B_MMAP:
            b->mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (b->mem == MAP_FAILED)
                b->mem = NULL;
            break;
        case B_BSS:
            b->mem = bss_pool;
            bss_used = 1;
            break;
        case B_ALLOC_MEM:
            if (MPI_Alloc_mem((MPI_Aint) len, MPI_INFO_NULL, &b->mem) != MPI_SUCCESS)
                b->mem = NULL;
            break;
    }
    return b->mem != NULL;
}

static void forget_signal_target(const char *mem);

static void buffer_free(buffer_t * b)
{
    forget_signal_target(b->mem);
    switch (b->kind) {
        case B_HEAP:
        case B_ALIGNED:
            free(b->mem);
            break;
        case B_MMAP:
            munmap(b->mem, b->len);
            break;
        case B_BSS:
            bss_used = 0;
            break;
        case B_ALLOC_MEM:
            MPI_Free_mem(b->mem);
            break;
    }
    b->mem = NULL;
}

/* fill with bytes that depend on the program, the step, the process and the position */
static void fill(char *p, size_t len, uint64_t salt)
{
    uint64_t v = mix(salt ^ (uint64_t) world_rank << 40);
    for (size_t i = 0; i < len; i++) {
        if (i % 8 == 0)
            v = mix(v + i);
        p[i] = (char) (v >> (8 * (i % 8)));
    }
}

/* Results not read yet: a buffer that came out of a collective, and the bytes it spans. */
typedef struct {
    buffer_t buf;
    size_t len;
} live_t;
static live_t live[MAX_LIVE];
static int nlive;

static char *volatile signal_target;    /* a result the timer's handler reads */
static volatile unsigned char signal_sink;
static timer_t alarm_timer;

static void forget_signal_target(const char *mem)
{
    if (signal_target == mem)
        signal_target = NULL;
}

static void read_live(live_t * l)
{
    absorb(l->buf.mem, l->len);
}

/* use the result: its pages in a random order first, then all of it */
static void consume(int i)
{
    live_t *l = &live[i];
    size_t pages = (l->len + 4095) / 4096;
    for (int k = 0; k < 3 && pages; k++) {
        volatile char *p = l->buf.mem + (size_t) local_below((int) pages) * 4096;
        (void) *p;
    }
    read_live(l);
    buffer_free(&l->buf);
    live[i] = live[--nlive];
}

/* give the result up unread (the data may still be coming) */
static void drop(int i)
{
    buffer_free(&live[i].buf);
    live[i] = live[--nlive];
}

static void keep(buffer_t * b, size_t len)
{
    while (nlive >= MAX_LIVE)
        consume(0);
    live[nlive].buf = *b;
    live[nlive].len = len;
    nlive++;
}

/* ---- things the program does with results between collectives ---- */

static void *thread_reader(void *arg)
{
    live_t *l = arg;
    uint64_t *out = malloc(sizeof(uint64_t));
    const unsigned char *b = (const unsigned char *) l->buf.mem;
    uint64_t h = 7;
    for (size_t i = 0; i < l->len; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    *out = h;
    return out;
}

static void on_alarm(int sig)
{
    (void) sig;
    char *p = signal_target;
    /* while the program computes, or inside an MPI call */
    if (p)
        signal_sink ^= (unsigned char) *p;
}

static void between_steps(int step)
{
    if (nlive == 0)
        return;
    int i = local_below(nlive), what = local_below(100);
    live_t *l = &live[i];
    if (what < 30) {
        consume(i);
    } else if (what < 38) {
        drop(i);
    } else if (what < 46) {
        /* the kernel reads it */
        FILE *f = tmpfile();
        if (f && (size_t) write(fileno(f), l->buf.mem, l->len) == l->len) {
            char *back = malloc(l->len ? l->len : 1);
            if (pread(fileno(f), back, l->len, 0) == (ssize_t) l->len)
                absorb(back, l->len);
            free(back);
        }
        if (f)
            fclose(f);
    } else if (what < 52) {
        /* the kernel writes part of it, over data that may still be coming */
        FILE *f = tmpfile();
        size_t n = l->len / 2;
        char *src = malloc(n ? n : 1);
        fill(src, n, (uint64_t) step * 77);
        if (f && (size_t) write(fileno(f), src, n) == n &&
            pread(fileno(f), l->buf.mem + l->len / 4, n, 0) != (ssize_t) n)
            absorb("short", 5);
        free(src);
        if (f)
            fclose(f);
    } else if (what < 58) {
        /* the program writes part of it */
        memset(l->buf.mem + l->len / 3, 0x3c, l->len / 3);
    } else if (what < 64 && (l->buf.kind == B_HEAP || l->buf.kind == B_ALIGNED)) {
        /* moved: the data goes with it */
        forget_signal_target(l->buf.mem);
        char *moved = realloc(l->buf.mem, l->len * 2 + 4096);
        if (moved) {
            l->buf.mem = moved;
            l->buf.kind = B_HEAP;
            l->buf.len = l->len * 2 + 4096;
        }
    } else if (what < 70) {
        pthread_t t;
        void *h;
        if (pthread_create(&t, NULL, thread_reader, l) == 0) {
            pthread_join(t, &h);
            absorb(h, sizeof(uint64_t));
            free(h);
        }
    } else if (what < 72) {
        pid_t child = fork();
        if (child == 0)
            _exit(0);
        if (child > 0)
            waitpid(child, NULL, 0);
    }
}

/* ---- the collectives ---- */

enum {
    C_ALLTOALL, C_ALLTOALLV, C_ALLTOALLW, C_BCAST, C_ALLGATHER, C_ALLGATHERV, C_GATHER,
    C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLREDUCE, C_REDUCE, C_REDUCE_SCATTER,
    C_REDUCE_SCATTER_BLOCK, C_SCAN, C_EXSCAN, C_NEIGHBOR_ALLTOALL, C_NEIGHBOR_ALLGATHER,
    C_NEIGHBOR_ALLTOALLV, C_BARRIER, NCOLLS
};
static const char *coll_names[NCOLLS] = {
    "alltoall", "alltoallv", "alltoallw", "bcast", "allgather", "allgatherv", "gather",
    "gatherv", "scatter", "scatterv", "allreduce", "reduce", "reduce_scatter",
    "reduce_scatter_block", "scan", "exscan", "neighbor_alltoall", "neighbor_allgather",
    "neighbor_alltoallv", "barrier"
};

static MPI_Comm comms[MAX_COMMS];
static int ncomms;
static MPI_Comm ring;           /* a periodic 1-D Cartesian communicator over world */

/* elements per block: none, a few, around the 4 KiB threshold, or many pages */
static long random_count(int t, int blocks)
{
    int r = below(100);
    long bytes = r < 12 ? 0 : r < 45 ? 1 + below(64) : r < 75 ? 3000 + below(2200) :
        8192 + below(60000);
    long count = bytes / (long) type_extent[t];
    while (count > 0 && span_of(t, count * blocks) > MAX_BYTES)
        count /= 2;
    return count;
}

/* an output (or input) buffer of len bytes: a pending result of an earlier call, when one is
 * large enough and the dice say so (its data may still be coming), else a new one */
static int take_buffer(buffer_t * b, size_t len, int reuse_percent, uint64_t salt)
{
    for (int i = 0; i < nlive && local_chance(reuse_percent); i++) {
        if (live[i].len >= len) {
            *b = live[i].buf;
            forget_signal_target(b->mem);
            live[i] = live[--nlive];
            return 1;
        }
    }
    if (!buffer_new(b, len, local_below(NKINDS)))
        return 0;
    fill(b->mem, len, salt);
    return 1;
}

/* where element 0 of a buffer goes, for a type with a negative lower bound */
static char *origin(buffer_t * b, int t)
{
    return b->mem - true_lb[t];
}

static void vcounts(int n, int t, long *counts, long *displs, uint64_t salt, int who,
                    int as_sender)
{
    long at = 0;
    for (int j = 0; j < n; j++) {
        uint64_t h = as_sender ? agreed(salt, (uint64_t) who, (uint64_t) j) :
            agreed(salt, (uint64_t) j, (uint64_t) who);
        counts[j] = h % 5 == 0 ? 0 : (long) (h % 2500) / (long) type_extent[t] + (h % 3 == 0);
        displs[j] = at + (long) (h % 7);        /* gaps between the blocks */
        at = displs[j] + counts[j];
    }
}

static long total(const long *displs, const long *counts, int n)
{
    long end = 0;
    for (int j = 0; j < n; j++)
        if (displs[j] + counts[j] > end)
            end = displs[j] + counts[j];
    return end;
}

static void to_int(const long *a, int *b, int n)
{
    for (int j = 0; j < n; j++)
        b[j] = (int) a[j];
}

/* The arguments of one call as this process passes them */
typedef struct {
    int c, t, root, cnt, in_place;
    MPI_Op op;
    size_t slen, rlen;          /* bytes the send and receive buffers span (0: none) */
    int *sc, *sd, *rc, *rd;     /* v-forms: counts and displacements (elements) */
    int *wsd, *wrd;             /* w-form: displacements in bytes */
    MPI_Datatype *wt;
    int nsc[2], nsd[2], nrc[2], nrd[2]; /* the ring's neighbours */
} args_t;

static void draw_counts(args_t * a, int n, int rank, uint64_t salt)
{
    int t = a->t;
    long sc[n], sd[n], rc[n], rd[n];
    if (a->c == C_ALLTOALLV || a->c == C_ALLTOALLW) {
        vcounts(n, t, sc, sd, salt, rank, 1);
        vcounts(n, t, rc, rd, salt, rank, 0);
        a->slen = span_of(t, total(sd, sc, n));
        a->rlen = span_of(t, total(rd, rc, n));
        to_int(sc, a->sc, n), to_int(sd, a->sd, n), to_int(rc, a->rc, n), to_int(rd, a->rd, n);
        for (int j = 0; j < n; j++) {
            a->wsd[j] = (int) (sd[j] * type_extent[t]);
            a->wrd[j] = (int) (rd[j] * type_extent[t]);
            a->wt[j] = types[t];
        }
        return;
    }
    /* one count per process, the same everywhere (gatherv, scatterv, allgatherv,
     * reduce_scatter) */
    long at = 0;
    for (int j = 0; j < n; j++) {
        uint64_t h = agreed(salt, 1, (uint64_t) j);
        rc[j] = h % 4 == 0 ? 0 : (long) (h % 3000) / (long) type_extent[t];
        rd[j] = at + (a->c == C_REDUCE_SCATTER ? 0 : (long) (h % 5));
        at = rd[j] + rc[j];
    }
    to_int(rc, a->rc, n), to_int(rd, a->rd, n);
    size_t all = span_of(t, total(rd, rc, n)), mine = span_of(t, rc[rank]);
    switch (a->c) {
        case C_ALLGATHERV:
            a->slen = mine, a->rlen = all;
            break;
        case C_GATHERV:
            a->slen = mine, a->rlen = rank == a->root ? all : 0;
            break;
        case C_SCATTERV:
            a->slen = rank == a->root ? all : 0, a->rlen = mine;
            break;
        default:       /* reduce_scatter: in place, the input fills the receive buffer */
            a->slen = all, a->rlen = a->in_place ? all : mine;
            break;
    }
}

/* A ring of at least 3 processes: left and right differ. What one sends right, the right one
 * receives from its left. */
static void draw_ring(args_t * a, uint64_t salt)
{
    int left = (world_rank + world_size - 1) % world_size, right = (world_rank + 1) % world_size;
    long unit = 1 + (long) (agreed(salt, 5, 0) % 900) / (long) type_extent[a->t];
    a->nsc[0] = (int) (unit * (world_rank % 3));
    a->nsc[1] = (int) (unit * ((world_rank + 1) % 3));
    a->nrc[0] = (int) (unit * ((left + 1) % 3));
    a->nrc[1] = (int) (unit * (right % 3));
    a->nsd[0] = 0, a->nsd[1] = a->nsc[0] + 1;
    a->nrd[0] = 0, a->nrd[1] = a->nrc[0] + 2;
    a->slen = span_of(a->t, a->nsd[1] + a->nsc[1]);
    a->rlen = span_of(a->t, a->nrd[1] + a->nrc[1]);
}

/* the bytes each buffer spans, for this process */
static void draw_sizes(args_t * a, int n, int rank, uint64_t salt)
{
    int t = a->t;
    long count = a->cnt;
    switch (a->c) {
        case C_ALLTOALL:
            a->slen = a->in_place ? 0 : span_of(t, count * n), a->rlen = span_of(t, count * n);
            break;
        case C_NEIGHBOR_ALLTOALL:
            a->slen = a->rlen = span_of(t, count * 2);
            break;
        case C_ALLGATHER:
            a->slen = span_of(t, count), a->rlen = span_of(t, count * n);
            break;
        case C_NEIGHBOR_ALLGATHER:
            a->slen = span_of(t, count), a->rlen = span_of(t, count * 2);
            break;
        case C_GATHER:
            a->slen = span_of(t, count), a->rlen = rank == a->root ? span_of(t, count * n) : 0;
            break;
        case C_SCATTER:
            a->slen = rank == a->root ? span_of(t, count * n) : 0, a->rlen = span_of(t, count);
            break;
        case C_BCAST:
            a->slen = 0, a->rlen = span_of(t, count);
            break;
        case C_ALLREDUCE:
        case C_REDUCE:
        case C_SCAN:
        case C_EXSCAN:
            a->slen = a->rlen = span_of(t, count);
            break;
        case C_REDUCE_SCATTER_BLOCK:
            a->slen = span_of(t, count * n);
            a->rlen = a->in_place ? a->slen : span_of(t, count);
            break;
        case C_NEIGHBOR_ALLTOALLV:
            draw_ring(a, salt);
            break;
        case C_BARRIER:
            break;
        default:
            draw_counts(a, n, rank, salt);
            break;
    }
    if (a->in_place && a->c != C_SCATTER && a->c != C_SCATTERV)
        a->slen = 0;    /* the input is in the receive buffer */
    if (a->in_place && (a->c == C_SCATTER || a->c == C_SCATTERV))
        a->rlen = 0;    /* the root keeps its own block where it is */
}

/* What every process agrees on (drawn from the program's stream in a fixed order), then what
 * this process decides alone. */
static void draw_call(args_t * a, int n, int rank)
{
    a->c = below(NCOLLS);
    a->root = below(n);
    a->in_place = chance(25);
    a->t = below(NTYPES);
    int r = below(4), o = below(3);
    long count = random_count(a->t, n);
    int reducing = a->c == C_ALLREDUCE || a->c == C_REDUCE || a->c == C_REDUCE_SCATTER ||
        a->c == C_REDUCE_SCATTER_BLOCK || a->c == C_SCAN || a->c == C_EXSCAN;
    if (reducing) {
        /* predefined operations (integers: the order of the terms cannot change a result) */
        a->t = r == 0 ? T_INT : r == 1 ? T_LONG : T_PAIR;
        a->op = a->t == T_PAIR ? (o == 0 ? MPI_MAXLOC : MPI_MINLOC) :
            o == 0 ? MPI_SUM : o == 1 ? MPI_MAX : MPI_BXOR;
        while (count > 0 && span_of(a->t, count * n) > MAX_BYTES)
            count /= 2;
    }
    /* the ring's two neighbours are one process when there are two */
    if (a->c >= C_NEIGHBOR_ALLTOALL && a->c <= C_NEIGHBOR_ALLTOALLV && world_size < 3)
        a->c = C_BARRIER;
    if (a->c == C_REDUCE_SCATTER_BLOCK)
        count /= n;
    a->cnt = (int) count;
    /* in place where the standard has it (at the root only for rooted calls), never with a
     * negative lower bound (the data would start before the buffer) */
    int everywhere = a->c == C_ALLTOALL || a->c == C_ALLGATHER || a->c == C_ALLGATHERV ||
        a->c == C_ALLREDUCE || a->c == C_SCAN || a->c == C_EXSCAN ||
        a->c == C_REDUCE_SCATTER_BLOCK || a->c == C_REDUCE_SCATTER;
    int at_root = (a->c == C_GATHER || a->c == C_GATHERV || a->c == C_REDUCE ||
                   a->c == C_SCATTER || a->c == C_SCATTERV) && rank == a->root;
    a->in_place = a->in_place && (everywhere || at_root) && a->t != T_NEG_LB;
}

/* A buffer for one side of the call, filled with this step's bytes unless it is a pending
 * result taken over */
static int side_buffer(buffer_t * b, size_t len, int reuse, uint64_t salt, char *stack,
                       size_t stack_len, int *on_stack)
{
    if (on_stack && len <= stack_len && local_chance(15)) {
        b->mem = stack;
        b->len = len;
        b->kind = -1;
        fill(stack, len, salt);
        *on_stack = 1;
        return 1;
    }
    return take_buffer(b, len, reuse, salt);
}

static void call(const args_t * a, char *s, char *r, MPI_Comm comm)
{
    MPI_Datatype ty = types[a->t];
    int cnt = a->cnt, root = a->root;
    switch (a->c) {
        case C_ALLTOALL:
            MPI_Alltoall(s, cnt, ty, r, cnt, ty, comm);
            break;
        case C_ALLTOALLV:
            MPI_Alltoallv(s, a->sc, a->sd, ty, r, a->rc, a->rd, ty, comm);
            break;
        case C_ALLTOALLW:
            MPI_Alltoallw(s, a->sc, a->wsd, a->wt, r, a->rc, a->wrd, a->wt, comm);
            break;
        case C_BCAST:
            MPI_Bcast(r, cnt, ty, root, comm);
            break;
        case C_ALLGATHER:
            MPI_Allgather(s, cnt, ty, r, cnt, ty, comm);
            break;
        case C_ALLGATHERV:{
                int rank;
                MPI_Comm_rank(comm, &rank);
                MPI_Allgatherv(s, a->rc[rank], ty, r, a->rc, a->rd, ty, comm);
                break;
            }
        case C_GATHER:
            MPI_Gather(s, cnt, ty, r, cnt, ty, root, comm);
            break;
        case C_GATHERV:{
                int rank;
                MPI_Comm_rank(comm, &rank);
                MPI_Gatherv(s, a->rc[rank], ty, r, a->rc, a->rd, ty, root, comm);
                break;
            }
        case C_SCATTER:
            MPI_Scatter(s, cnt, ty, r, cnt, ty, root, comm);
            break;
        case C_SCATTERV:{
                int rank;
                MPI_Comm_rank(comm, &rank);
                MPI_Scatterv(s, a->rc, a->rd, ty, r, a->rc[rank], ty, root, comm);
                break;
            }
        case C_ALLREDUCE:
            MPI_Allreduce(s, r, cnt, ty, a->op, comm);
            break;
        case C_REDUCE:
            MPI_Reduce(s, r, cnt, ty, a->op, root, comm);
            break;
        case C_REDUCE_SCATTER:
            MPI_Reduce_scatter(s, r, a->rc, ty, a->op, comm);
            break;
        case C_REDUCE_SCATTER_BLOCK:
            MPI_Reduce_scatter_block(s, r, cnt, ty, a->op, comm);
            break;
        case C_SCAN:
            MPI_Scan(s, r, cnt, ty, a->op, comm);
            break;
        case C_EXSCAN:
            MPI_Exscan(s, r, cnt, ty, a->op, comm);
            break;
        case C_NEIGHBOR_ALLTOALL:
            MPI_Neighbor_alltoall(s, cnt, ty, r, cnt, ty, ring);
            break;
        case C_NEIGHBOR_ALLGATHER:
            MPI_Neighbor_allgather(s, cnt, ty, r, cnt, ty, ring);
            break;
        case C_NEIGHBOR_ALLTOALLV:
            MPI_Neighbor_alltoallv(s, a->nsc, a->nsd, ty, r, a->nrc, a->nrd, ty, ring);
            break;
        case C_BARRIER:
            MPI_Barrier(comm);
            break;
    }
}

/* One collective: its arguments drawn, its result kept (pending) or read at once. */
static void one_collective(int step, MPI_Comm comm)
{
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    int late = below(n + 2);
    uint64_t salt = (uint64_t) step * 1000003;
    args_t a;
    memset(&a, 0, sizeof(a));
    int ints[6][n];
    MPI_Datatype wt[n];
    a.sc = ints[0], a.sd = ints[1], a.rc = ints[2], a.rd = ints[3];
    a.wsd = ints[4], a.wrd = ints[5], a.wt = wt;
    draw_call(&a, n, rank);
    if (a.c >= C_NEIGHBOR_ALLTOALL && a.c <= C_NEIGHBOR_ALLTOALLV)
        rank = world_rank, n = world_size;
    draw_sizes(&a, n, rank, salt);

    buffer_t sb = { 0 }, rb = { 0 };
    char stack_out[4096];
    int on_stack = 0;
    /* a pending result may become this call's output, or its input (in place: both) */
    if (a.rlen && !side_buffer(&rb, a.rlen, 30, salt + 1, stack_out, sizeof(stack_out),
                               a.in_place ? NULL : &on_stack))
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (a.slen && !take_buffer(&sb, a.slen, 40, salt + 2))
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (a.in_place && rb.mem)
        fill(rb.mem, a.rlen, salt + 3);
    if (a.c == C_BCAST && rank == a.root)
        fill(rb.mem, a.rlen, salt + 4);
    char *s = sb.mem ? origin(&sb, a.t) : NULL, *r = rb.mem ? origin(&rb, a.t) : NULL;
    if (a.in_place)
        *(a.c == C_SCATTER || a.c == C_SCATTERV ? &r : &s) = MPI_IN_PLACE;
    if (trace)
        printf("step %d rank %d: %s %s count %d root %d%s late %d\n", step, world_rank,
               coll_names[a.c], type_names[a.t], a.cnt, a.root, a.in_place ? " in-place" : "",
               late);
    if (late == rank)
        usleep((useconds_t) (200 + 2000 * (step % 3)));
    call(&a, s, r, comm);

    /* Exscan leaves rank 0's result undefined */
    if (a.c == C_EXSCAN && rank == 0 && rb.mem)
        memset(rb.mem, 0, a.rlen);
    if (sb.mem) {
        /* the send buffer is the program's again: overwritten or given back at once */
        if (local_chance(50))
            memset(sb.mem, 0x5e, a.slen);
        buffer_free(&sb);
    }
    if (on_stack) {
        absorb(rb.mem, a.rlen);
    } else if (rb.mem) {
        keep(&rb, a.rlen);
        if (local_chance(30))
            consume(nlive - 1);
        else if (local_chance(30))
            signal_target = live[nlive - 1].buf.mem;
    }
}

static void communicator_step(void)
{
    int what = below(3);
    if (what == 0 && ncomms < MAX_COMMS) {
        MPI_Comm_dup(comms[below(ncomms)], &comms[ncomms]);
        ncomms++;
    } else if (what == 1 && ncomms < MAX_COMMS) {
        int parts = 1 + below(2);
        MPI_Comm_split(MPI_COMM_WORLD, world_rank % parts, world_size - world_rank,
                       &comms[ncomms]);
        ncomms++;
    } else if (ncomms > 1) {
        int i = 1 + below(ncomms - 1);
        MPI_Comm_free(&comms[i]);
        comms[i] = comms[--ncomms];
    }
}

static void run_program(uint64_t seed)
{
    program_state = mix(seed);
    local_state = mix(seed ^ ((uint64_t) world_rank << 48) ^ 0x5eed);
    digest = seed;
    nlive = 0;
    ncomms = 1;
    comms[0] = MPI_COMM_WORLD;
    int steps = 4 + below(MAX_STEPS - 3), with_timer = chance(15);
    struct itimerspec every = { {0, 700000}, {0, 700000} }, off = { {0, 0}, {0, 0} };
    if (trace)
        printf("seed %llu rank %d: %d steps, %s\n", (unsigned long long) seed, world_rank,
               steps, with_timer ? "a handler reads results every 0.7 ms" : "no timer");
    if (with_timer)
        timer_settime(alarm_timer, 0, &every, NULL);
    for (int step = 0; step < steps && step < step_limit; step++) {
        if (chance(12))
            communicator_step();
        else
            one_collective(step, comms[below(ncomms)]);
        between_steps(step);
        if (trace)
            printf("seed %llu step %d rank %d digest %016llx\n", (unsigned long long) seed,
                   step, world_rank, (unsigned long long) digest);
    }
    if (with_timer)
        timer_settime(alarm_timer, 0, &off, NULL);
    signal_target = NULL;
    while (nlive)
        consume(nlive - 1);
    for (int i = 1; i < ncomms; i++)
        MPI_Comm_free(&comms[i]);
    printf("seed %llu rank %d digest %016llx\n", (unsigned long long) seed, world_rank,
           (unsigned long long) digest);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    unsigned long long first = 1, count = 1;
    for (int i = 1; i < argc; i++) {
        if (sscanf(argv[i], "-seeds=%llu:%llu", &first, &count) == 2)
            continue;
        if (sscanf(argv[i], "-steps=%d", &step_limit) == 1)
            continue;
        if (strcmp(argv[i], "-trace") == 0) {
            trace = 1;
            continue;
        }
        fprintf(stderr, "tnbc_fuzz: unknown argument %s\n", argv[i]);
        return 2;
    }
    int provided;     /* a second thread reads buffers; only this one calls MPI */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int dims = world_size, periods = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &ring);
    make_types();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    /* the timer's signal goes to this thread, which alone frees the buffers it reads */
    if (tnbc_timer_to_this_thread(SIGALRM, &alarm_timer) != 0)
        MPI_Abort(MPI_COMM_WORLD, 3);
    for (unsigned long long s = first; s < first + count; s++)
        run_program(s);
    for (int t = 0; t < NTYPES; t++)
        if (t == T_HOLES || t == T_NEG_LB || t == T_PADDED)
            MPI_Type_free(&types[t]);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
