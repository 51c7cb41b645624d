/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The forwarder and receiving side of merged streams. A forwarder receives the streams of the
 * senders it serves, unpacks its own messages and sends each other process of its node one
 * message (a directory, then the data); every receiver reconciles what came with what it
 * posted. */

#include "mpiimpl.h"
#include "rm_impl.h"

typedef struct {
    char *buf;                  /* assembled message for a process of my node */
    size_t total, got;
    int64_t direct;             /* announced direct message: its bytes + 1 */
} MPII_Rm_slot_t;

typedef struct {
    int src, done;
    char *buf;
    MPIR_Request *req;
    MPII_Rm_slot_t *slots;      /* per local process */
} MPII_Rm_source_t;

static void post_aggregate_recv(MPII_Rm_call_t * c, MPII_Rm_source_t * s)
{
    s->buf = MPL_malloc(c->hdr_max + c->cap, MPL_MEM_COLL);
    if (!s->buf) {
        MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
        s->done = 1;
        return;
    }
    int rc = MPIC_Irecv(s->buf, (MPI_Aint) (c->hdr_max + c->cap), MPI_BYTE, s->src,
                        c->tag_aggregate, c->comm, &s->req);
    if (rc) {
        MPII_Rm_note_error(c, rc);
        s->done = 1;
    }
}

/* Takes back a receive no message will match; 1 if it was indeed cancelled. */
static int withdraw_recv(MPIR_Request * r)
{
    MPID_Cancel_recv(r);
    MPIR_Wait_impl(r, MPI_STATUS_IGNORE);       /* fills r->status, not the one it is given */
    int cancelled = MPIR_STATUS_GET_CANCEL_BIT(r->status);
    MPIR_Request_free(r);
    return cancelled;
}

static void unpack_mine(MPII_Rm_call_t * c, int src, const char *data, size_t bytes)
{
    MPI_Aint actual;
    MPII_Rm_note_error(c, MPIR_Typerep_unpack(data, bytes,
                                              c->recvbuf + c->rdispls[src] * c->rext,
                                              c->recvcounts[src], c->recvtype, 0, &actual));
}

/* A whole merged message of `bytes` from src that I can take at once: it fits, and I posted no
 * direct receive for it (else reconcile() decides, after the stream). */
static int expected_merged(MPII_Rm_call_t * c, int src, size_t bytes)
{
    return bytes <= c->rbytes[src] && c->direct_req[src] < 0;
}

/* One aggregate of source s arrived: my own messages are unpacked when whole and expected,
 * the others assembled for forwarding; announcements of direct messages are noted. */
static void take_aggregate(MPII_Rm_call_t * c, MPII_Rm_source_t * s, const char *buf, size_t len)
{
    int nfrag, final;
    const MPIR_Rm_wire_frag_t *wf;
    const char *payload;

    if (MPIR_Rm_read_header(buf, len, c->nlocal, &nfrag, &final, &wf, &payload)) {
        MPII_Rm_note_malformed(c);
        s->done = 1;
        return;
    }
    for (int k = 0; k < nfrag; k++) {
        const char *data = payload;
        payload += wf[k].len;
        int in_comm = wf[k].dst >= 0 && wf[k].dst < c->size;
        int l = in_comm ? MPII_Rm_local_index(c, (int) wf[k].dst) : -1;
        if (l < 0) {
            MPII_Rm_note_malformed(c);
            continue;
        }
        MPII_Rm_slot_t *m = &s->slots[l];
        int mine = (l == c->my_local);
        if (wf[k].off == MPIR_RM_DIRECT_OFF) {
            m->direct = (int64_t) wf[k].total + 1;
            if (mine)
                c->own[s->src] = MPII_RM_DIRECT;
            continue;
        }
        if (mine && wf[k].len == wf[k].total && expected_merged(c, s->src, wf[k].total)) {
            unpack_mine(c, s->src, data, wf[k].len);
            c->own[s->src] = MPII_RM_TAKEN;
            continue;
        }
        if (!m->buf) {
            m->buf = MPII_Rm_new_buf(c, wf[k].total);
            m->total = wf[k].total;
            if (!m->buf) {
                MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
                continue;
            }
        }
        if (wf[k].total != m->total || wf[k].off + wf[k].len > m->total) {
            MPII_Rm_note_malformed(c);
            continue;
        }
        memcpy(m->buf + wf[k].off, data, wf[k].len);
        m->got += wf[k].len;
        if (mine)
            c->own[s->src] = MPII_RM_MERGED;
        /* a fragment may end inside an element: mine are unpacked whole */
        if (mine && m->got == m->total && expected_merged(c, s->src, m->total)) {
            unpack_mine(c, s->src, m->buf, m->total);
            c->own[s->src] = MPII_RM_TAKEN;
        }
    }
    if (final)
        s->done = 1;
}

/* What came for me from remote source i (merged data, an announcement, or nothing) against
 * what I posted for it (a direct receive when it is above the merge limit). Legal programs
 * agree; otherwise the result is the error stock MPICH gives (a truncation), or an error where
 * stock would wait for ever, never a hang. */
static void reconcile(MPII_Rm_call_t * c, int i, int kind, size_t bytes, const char *data)
{
    int posted = c->direct_req[i];

    if (kind == MPII_RM_TAKEN)
        return;
    if (kind == MPII_RM_DIRECT) {
        if (posted < 0)
            MPII_Rm_post_direct_recv(c, i);        /* it completes as a truncation */
        return;
    }
    if (posted >= 0 && c->reqs[posted]) {
        /* a direct receive no message of this call will match (its tag is this call's) */
        if (!withdraw_recv(c->reqs[posted]))
            MPII_Rm_note_malformed(c);
        c->reqs[posted] = NULL;
    }
    c->direct_req[i] = -1;
    if (kind == MPII_RM_NONE) {
        if (c->rbytes[i])
            MPII_Rm_note_missing(c);
    } else if (bytes > c->rbytes[i]) {
        MPII_Rm_note_truncated(c);
    } else {
        unpack_mine(c, i, data, bytes);
    }
}

/* An announcement, or a message whose stream delivered all of it (one that failed midway is
 * left out: its receiver reports it missing). */
static int forwardable(const MPII_Rm_slot_t * m)
{
    return m->buf ? m->got == m->total : m->direct != 0;
}

/* Each other process of my node gets one message: the directory of what my sources sent it,
 * then the data, in ascending source order. */
static void forward(MPII_Rm_call_t * c, MPII_Rm_source_t * src, int nsrc)
{
    for (int l = 0; l < c->nlocal; l++) {
        if (l == c->my_local)
            continue;
        int n = 0;
        size_t bytes = 0;
        for (int k = 0; k < nsrc; k++) {
            if (forwardable(&src[k].slots[l])) {
                n++;
                bytes += src[k].slots[l].buf ? src[k].slots[l].total : 0;
            }
        }
        char *buf = MPII_Rm_new_buf(c, MPIR_Rm_directory_bytes(n) + bytes);
        MPIR_Request **r = MPII_Rm_new_req(c);
        if (!buf || !r) {
            MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
            continue;
        }
        int64_t *dir = (int64_t *) buf;
        char *p = buf + MPIR_Rm_directory_bytes(n);
        dir[0] = n;
        n = 0;
        for (int k = 0; k < nsrc; k++) {
            MPII_Rm_slot_t *m = &src[k].slots[l];
            if (!forwardable(m)) {
                if (m->buf)
                    MPII_Rm_note_malformed(c);
                continue;
            }
            dir[1 + 2 * n] = src[k].src;
            if (!m->buf) {
                dir[2 + 2 * n++] = -m->direct;  /* -(bytes + 1) */
                continue;
            }
            dir[2 + 2 * n++] = (int64_t) m->total;
            memcpy(p, m->buf, m->total);
            p += m->total;
        }
        MPII_Rm_note_error(c, MPIC_Isend(buf, (MPI_Aint) (p - buf), MPI_BYTE, c->local[l],
                                 c->tag_forward, c->comm, r, c->errflag));
    }
}

/* The sources whose streams come to me, in ascending rank order. */
static int my_sources(MPII_Rm_call_t * c, MPII_Rm_source_t ** out)
{
    int n = 0;
    MPII_Rm_source_t *s = MPL_calloc(c->size + 1, sizeof(*s), MPL_MEM_COLL);
    if (!s)
        return -1;
    for (int i = 0; i < c->size; i++)
        if (MPII_Rm_forwards_for(c, c->rank, i))
            s[n++].src = i;
    *out = s;
    return n;
}

/* One aggregate of source s has arrived (or failed): take it, and post the next one unless
 * the stream has ended. */
static void next_aggregate(MPII_Rm_call_t * c, MPII_Rm_source_t * s)
{
    MPI_Status *status = &s->req->status;
    char *buf = s->buf;
    int err = status->MPI_ERROR;

    MPIR_Process_status(status, c->errflag);
    size_t len = MPIR_STATUS_GET_COUNT(*status);
    MPIR_Request_free(s->req);
    s->req = NULL;
    s->buf = NULL;
    if (err) {
        MPII_Rm_note_error(c, err);
        s->done = 1;
    } else {
        take_aggregate(c, s, buf, len);
        if (!s->done)
            post_aggregate_recv(c, s);
    }
    MPL_free(buf);
}

/* Every stream sent to me, aggregate by aggregate in the order they arrive. */
static void receive_streams(MPII_Rm_call_t * c, MPII_Rm_source_t * src, int nsrc)
{
    MPID_Progress_state progress_state;

    for (int k = 0; k < nsrc; k++)
        if (src[k].slots)
            post_aggregate_recv(c, &src[k]);
    MPID_Progress_start(&progress_state);
    for (;;) {
        int open = 0, made = 0;
        for (int k = 0; k < nsrc; k++) {
            if (src[k].req && MPIR_Request_is_complete(src[k].req)) {
                next_aggregate(c, &src[k]);
                made = 1;
            }
            open += src[k].req != NULL;
        }
        if (!open)
            break;
        if (!made) {
            int rc = MPID_Progress_wait(&progress_state);
            if (rc) {
                MPII_Rm_note_error(c, rc);
                break;
            }
        }
    }
    MPID_Progress_end(&progress_state);
}

/* My own messages from the streams, as any receiver reconciles its forwarder's directory. */
static void reconcile_own(MPII_Rm_call_t * c, MPII_Rm_source_t * src, int nsrc)
{
    for (int k = 0; k < nsrc; k++) {
        MPII_Rm_slot_t *m = src[k].slots ? &src[k].slots[c->my_local] : NULL;
        int kind = c->own[src[k].src];
        if (kind == MPII_RM_MERGED && m && m->got != m->total)
            kind = MPII_RM_NONE;        /* an incomplete stream: already an error */
        reconcile(c, src[k].src, kind, m ? m->total : 0, m ? m->buf : NULL);
    }
}

static void free_sources(MPII_Rm_source_t * src, int nsrc)
{
    for (int k = 0; k < nsrc; k++) {
        if (src[k].req) {       /* only after a progress error */
            withdraw_recv(src[k].req);
            MPL_free(src[k].buf);
        }
        MPL_free(src[k].slots);
    }
    MPL_free(src);
}

/* Receive every stream sent to me, forward, and take my own messages. */
void MPII_Rm_forward(MPII_Rm_call_t * c)
{
    MPII_Rm_source_t *src = NULL;
    int nsrc = my_sources(c, &src);

    if (nsrc < 0) {
        MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
        return;
    }
    for (int k = 0; k < nsrc; k++) {
        src[k].slots = MPL_calloc(c->nlocal, sizeof(MPII_Rm_slot_t), MPL_MEM_COLL);
        if (!src[k].slots) {
            MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
            src[k].done = 1;
        }
    }
    receive_streams(c, src, nsrc);
    if (nsrc > 0)
        forward(c, src, nsrc);
    reconcile_own(c, src, nsrc);
    free_sources(src, nsrc);
}

/* One message from every other process of my node that forwards for some remote sender. */
int MPII_Rm_post_inboxes(MPII_Rm_call_t * c, MPII_Rm_inbox_t ** out)
{
    int n = 0;
    MPII_Rm_inbox_t *in = MPL_calloc(c->nlocal + 1, sizeof(*in), MPL_MEM_COLL);
    if (!in)
        return -1;
    for (int l = 0; l < c->nlocal; l++) {
        int f = c->local[l], nsrc = 0;
        size_t bytes = 0;
        if (l == c->my_local)
            continue;
        /* room for the most any sender merges, so that a message longer than I take is
         * judged on its own, not by truncating the whole inbox */
        for (int i = 0; i < c->size; i++) {
            if (MPII_Rm_forwards_for(c, f, i)) {
                nsrc++;
                bytes += c->merge_max;
            }
        }
        if (nsrc == 0)
            continue;
        in[n].fwd = f;
        in[n].cap = MPIR_Rm_directory_bytes(nsrc) + bytes;
        in[n].buf = MPII_Rm_new_buf(c, in[n].cap);
        MPIR_Request **r = MPII_Rm_new_req(c);
        if (!in[n].buf || !r) {
            MPII_Rm_note_error(c, MPI_ERR_NO_MEM);
            continue;
        }
        in[n].req = (int) (r - c->reqs);
        MPII_Rm_note_error(c, MPIC_Irecv(in[n].buf, (MPI_Aint) in[n].cap, MPI_BYTE, f,
                                 c->tag_forward, c->comm, r));
        n++;
    }
    *out = in;
    return n;
}

/* Unpacks a forwarder's message: every source it forwards for and I expect data from must be
 * there, with no more than I can take. */
void MPII_Rm_take_inbox(MPII_Rm_call_t * c, MPII_Rm_inbox_t * in, const MPI_Status * status)
{
    int n;
    const int64_t *dir;
    const char *payload;
    size_t len = MPIR_STATUS_GET_COUNT(*status);

    if (status->MPI_ERROR)
        return; /* reported with its request */
    if (MPIR_Rm_read_directory(in->buf, len, &n, &dir, &payload)) {
        MPII_Rm_note_malformed(c);
        return;
    }
    int k = 0;
    for (int i = 0; i < c->size; i++) {
        if (!MPII_Rm_forwards_for(c, in->fwd, i))
            continue;
        int have = (k < n && dir[2 * k] == i);
        int64_t b = have ? dir[2 * k + 1] : 0;
        int kind = !have ? MPII_RM_NONE : (b < 0) ? MPII_RM_DIRECT : MPII_RM_MERGED;
        reconcile(c, i, kind, b > 0 ? (size_t) b : 0, payload);
        if (b > 0)
            payload += b;
        k += have;
    }
    if (k != n)
        MPII_Rm_note_malformed(c);
}
