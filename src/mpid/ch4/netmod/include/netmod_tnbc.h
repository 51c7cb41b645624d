/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What ch4's side of T-NBC's device interface (src/mpid/ch4/src/ch4_tnbc.c, for mpid_tnbc.h)
 * needs from the network module: a file descriptor on which T-NBC's helper thread can sleep
 * until the network has news, and a word before memory goes away or changes pages.
 * Implemented by the UCX netmod (ucx_tnbc.c). */

#ifndef NETMOD_TNBC_H_INCLUDED
#define NETMOD_TNBC_H_INCLUDED

#include <stddef.h>

/* The descriptor that becomes readable when the network has news for this process after
 * MPIDI_NM_tnbc_arm returned 1, or -1 when the network cannot wake a sleeper (the caller then
 * polls). Under the global lock. */
int MPIDI_NM_tnbc_event_fd(void);

/* Under the global lock: progress the network once; returns how many events it handled (0:
 * nothing was pending). T-NBC's messages complete here: its helper needs nothing else of
 * MPICH's progress engine. */
int MPIDI_NM_tnbc_progress(void);

/* Under the global lock, once a progress round found nothing to do: returns 1 when nothing is
 * pending and the event descriptor is armed (the caller may release the lock and sleep on it),
 * 0 when events are pending (the caller must run another progress round first). drained: the
 * caller's last MPIDI_NM_tnbc_progress returned 0 and nothing progressed the network since. */
int MPIDI_NM_tnbc_arm(int drained);

/* cb(addr, len) runs before [addr, addr + len) is unmapped by anyone in the process (munmap,
 * a heap trim, mremap's old range). Returns 1 when the network layer can report this. */
int MPIDI_NM_tnbc_watch_unmaps(void (*cb) (void *addr, size_t len));

/* [addr, addr + len) holds other physical pages from now on (T-NBC moved received pages
 * there): what the network layer cached about that memory (registrations) must go. Raised as
 * an unmap event, so the callback of MPIDI_NM_tnbc_watch_unmaps sees it too. Returns 0 when
 * the network layer cannot be told. */
int MPIDI_NM_tnbc_pages_replaced(void *addr, size_t len);

#endif /* NETMOD_TNBC_H_INCLUDED */
