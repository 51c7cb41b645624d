/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The network module's part of T-NBC's device interface: each MPIDI_NM_tnbc_<name> does what
 * MPID_Tnbc_<name> promises (src/mpid/ch4/include/mpid_tnbc.h, which ch4 passes on in
 * src/mpid/ch4/src/ch4_tnbc.c). Implemented by the UCX netmod (ucx_tnbc.c). */

#ifndef NETMOD_TNBC_H_INCLUDED
#define NETMOD_TNBC_H_INCLUDED

#include <stddef.h>

int MPIDI_NM_tnbc_event_fd(void);
int MPIDI_NM_tnbc_progress(void);
int MPIDI_NM_tnbc_arm(int drained);
int MPIDI_NM_tnbc_watch_unmaps(void (*cb) (void *addr, size_t len));
/* raised as an unmap event, so the callback of MPIDI_NM_tnbc_watch_unmaps sees it too */
int MPIDI_NM_tnbc_pages_replaced(void *addr, size_t len);
int MPIDI_NM_tnbc_owns_object(const char *path);

#endif /* NETMOD_TNBC_H_INCLUDED */
