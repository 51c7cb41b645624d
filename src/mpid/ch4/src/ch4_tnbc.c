/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* ch4's side of T-NBC's device interface (mpid_tnbc.h): the network's part goes to the netmod
 * (netmod_tnbc.h; the UCX netmod has it, other netmods get answers that turn T-NBC off), the
 * request buffers and the node segment are ch4's own. Built by a patch in maint/patches. */

#include "mpidimpl.h"
#include "mpid_tnbc.h"
#ifdef HAVE_CH4_NETMOD_UCX
#include "netmod_tnbc.h"
#endif
#include "mpidu_shm.h"

#ifdef HAVE_CH4_NETMOD_UCX
int MPID_Tnbc_available(const char **why)
{
    return 1;
}

int MPID_Tnbc_event_fd(void)
{
    return MPIDI_NM_tnbc_event_fd();
}

int MPID_Tnbc_progress(void)
{
    return MPIDI_NM_tnbc_progress();
}

int MPID_Tnbc_arm(int drained)
{
    return MPIDI_NM_tnbc_arm(drained);
}

int MPID_Tnbc_watch_unmaps(void (*cb) (void *addr, size_t len))
{
    return MPIDI_NM_tnbc_watch_unmaps(cb);
}

int MPID_Tnbc_pages_replaced(void *addr, size_t len)
{
    return MPIDI_NM_tnbc_pages_replaced(addr, len);
}

int MPID_Tnbc_owns_object(const char *path)
{
    return MPIDI_NM_tnbc_owns_object(path);
}

#else
/* A netmod without the network's part (ch4:ofi): T-NBC is off for the job (it never calls the
 * rest; they answer as a network that can do nothing would). */
int MPID_Tnbc_available(const char **why)
{
    *why = "this build's netmod has no T-NBC support (ch4:ucx has)";
    return 0;
}

int MPID_Tnbc_event_fd(void)
{
    return -1;
}

int MPID_Tnbc_progress(void)
{
    return 0;
}

int MPID_Tnbc_arm(int drained)
{
    return 0;
}

int MPID_Tnbc_watch_unmaps(void (*cb) (void *addr, size_t len))
{
    return 0;
}

int MPID_Tnbc_pages_replaced(void *addr, size_t len)
{
    return 0;
}

int MPID_Tnbc_owns_object(const char *path)
{
    return 0;
}
#endif

int MPID_Tnbc_request_buffer(MPIR_Request * req, const void **buf, MPI_Aint * count,
                             MPI_Datatype * datatype)
{
    switch (req->kind) {
        case MPIR_REQUEST_KIND__PREQUEST_SEND:
        case MPIR_REQUEST_KIND__PREQUEST_RECV:
            *buf = MPIDI_PREQUEST(req, buffer);
            *count = MPIDI_PREQUEST(req, count);
            *datatype = MPIDI_PREQUEST(req, datatype);
            return 1;
        case MPIR_REQUEST_KIND__PART_SEND:
        case MPIR_REQUEST_KIND__PART_RECV:
            /* the count is per partition */
            *buf = MPIDI_PART_REQUEST(req, buffer);
            *count = MPIDI_PART_REQUEST(req, count) * req->u.part.partitions;
            *datatype = MPIDI_PART_REQUEST(req, datatype);
            return 1;
        default:
            return 0;
    }
}

int MPID_Tnbc_node_segment_alloc(MPIR_Comm * node_comm, size_t len, void **seg, bool * failed)
{
    return MPIDU_shm_alloc(node_comm, len, seg, failed);
}

void MPID_Tnbc_node_segment_free(void *seg)
{
    MPIDU_shm_free(seg);
}
