/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* What the T-NBC family (src/mpi/coll/tnbc) needs from the device: a descriptor on which its
 * helper can sleep until the network has news, a word before memory goes away or changes
 * pages, the buffer of a request made earlier, and a segment of memory the processes of a
 * node share. src/mpi reaches the device for these through this interface alone; ch4
 * implements it (src/mpid/ch4/src/ch4_tnbc.c), passing the network's part to its netmod
 * (netmod_tnbc.h). */

#ifndef MPID_TNBC_H_INCLUDED
#define MPID_TNBC_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

/* 1 when the device can carry T-NBC's messages; 0 with *why (T-NBC is then off for the job). */
int MPID_Tnbc_available(const char **why);

/* The descriptor that becomes readable when the network has news for this process after
 * MPID_Tnbc_arm returned 1, or -1 when the network cannot wake a sleeper (the caller then
 * polls). Under the global lock. */
int MPID_Tnbc_event_fd(void);

/* Under the global lock: progress the network once; returns how many events it handled (0:
 * nothing was pending). T-NBC's messages complete here. */
int MPID_Tnbc_progress(void);

/* Under the global lock, once a progress round found nothing to do: 1 when nothing is pending
 * and the event descriptor is armed (the caller may release the lock and sleep on it), 0 when
 * events are pending (another progress round first). drained: the caller's last
 * MPID_Tnbc_progress returned 0 and nothing progressed the network since. */
int MPID_Tnbc_arm(int drained);

/* cb(addr, len) runs before [addr, addr + len) is unmapped by anyone in the process (munmap,
 * a heap trim, mremap's old range). Returns 1 when the device can report this. */
int MPID_Tnbc_watch_unmaps(void (*cb) (void *addr, size_t len));

/* [addr, addr + len) holds other physical pages from now on: what the device cached about
 * that memory (registrations) must go. Returns 0 when it cannot be told. */
int MPID_Tnbc_pages_replaced(void *addr, size_t len);

/* 1 when the shared object at path (as the dynamic linker names it) is part of the device: its
 * calls to the C library are the device's own, never the program's, and stay unhooked. */
int MPID_Tnbc_owns_object(const char *path);

/* The buffer a persistent point-to-point or partitioned request was made with: 1 and the
 * arguments, or 0 for other requests. */
int MPID_Tnbc_request_buffer(MPIR_Request * req, const void **buf, MPI_Aint * count,
                             MPI_Datatype * datatype);

/* Collective over node_comm: len bytes every process of the node maps, zeroed; *failed when
 * there is no shared memory (not an error). Free with MPID_Tnbc_node_segment_free. */
int MPID_Tnbc_node_segment_alloc(MPIR_Comm * node_comm, size_t len, void **seg, bool * failed);
void MPID_Tnbc_node_segment_free(void *seg);

#endif /* MPID_TNBC_H_INCLUDED */
