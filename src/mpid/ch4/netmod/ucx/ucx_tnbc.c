/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* The UCX side of T-NBC (netmod_tnbc.h): UCX's worker wakeup, so that T-NBC's helper sleeps
 * on the network instead of polling, and libucm's memory events, which report unmaps.
 *
 * Wakeup needs UCP_FEATURE_WAKEUP, which ucx_init.c asks for when T-NBC is enabled (a patch
 * in maint/patches): then ucp_worker_get_efd gives a descriptor that becomes readable on new
 * worker events once ucp_worker_arm succeeded. Arming reports UCS_ERR_BUSY while events are
 * pending; events that come after a successful arm make the descriptor readable whoever
 * progresses the worker, so a sleeper cannot miss one. Only the first VNI's worker is watched:
 * with more, T-NBC's helper polls. */

#include "mpidimpl.h"
#include "ucx_impl.h"
#include "netmod_tnbc.h"

#include <dlfcn.h>
#include <ucm/api/ucm.h>

static int event_fd = -2;       /* -2: not asked yet */

int MPIDI_NM_tnbc_event_fd(void)
{
    if (event_fd == -2) {
        int fd = -1;
        if (MPIDI_UCX_global.num_vnis != 1 ||
            ucp_worker_get_efd(MPIDI_UCX_global.ctx[0].worker, &fd) != UCS_OK)
            fd = -1;
        event_fd = fd;
    }
    return event_fd;
}

int MPIDI_NM_tnbc_progress(void)
{
    return (int) ucp_worker_progress(MPIDI_UCX_global.ctx[0].worker);
}

int MPIDI_NM_tnbc_arm(int drained)
{
    ucp_worker_h worker = MPIDI_UCX_global.ctx[0].worker;

    if (MPIDI_NM_tnbc_event_fd() < 0)
        return 0;
    /* UCX's rule: the worker must be drained before it is armed (each progress call costs an
     * epoll_wait on TCP: skip it when the caller's last one found nothing) */
    if (!drained && ucp_worker_progress(worker) != 0)
        return 0;
    return ucp_worker_arm(worker) == UCS_OK;
}

/* ---- memory events ---- */

static void (*unmap_cb) (void *addr, size_t len);
/* libucm's call that raises an unmap event, looked up with the event handler (never later,
 * under T-NBC's locks: dlsym may allocate) */
static void (*vm_munmap) (void *addr, size_t len);

static void on_vm_unmapped(ucm_event_type_t event_type, ucm_event_t * event, void *arg)
{
    unmap_cb(event->vm_unmapped.address, event->vm_unmapped.size);
}

int MPIDI_NM_tnbc_watch_unmaps(void (*cb) (void *addr, size_t len))
{
    /* libucm comes with UCX (libucs depends on it) but libmpi does not link it by name */
    typedef ucs_status_t(*set_handler_fn) (int, int, ucm_event_callback_t, void *);
    set_handler_fn set = (set_handler_fn) dlsym(RTLD_DEFAULT, "ucm_set_event_handler");

    if (!set)
        return 0;
    vm_munmap = (void (*)(void *, size_t)) dlsym(RTLD_DEFAULT, "ucm_vm_munmap");
    unmap_cb = cb;
    /* negative priority: called before the memory goes away */
    return set(UCM_EVENT_VM_UNMAPPED, -1, on_vm_unmapped, NULL) == UCS_OK;
}

/* UCX's libraries (libucs, libucp, libuct, libucm) and its transport modules (libuct_*,
 * libucx_*, under lib/ucx) */
int MPIDI_NM_tnbc_owns_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libuc", 5) == 0 && base[5] != '\0' && strchr("mpstx", base[5]);
}

int MPIDI_NM_tnbc_pages_replaced(void *addr, size_t len)
{
    /* UCX's registration caches drop the range on this event */
    if (!vm_munmap)
        return 0;
    vm_munmap(addr, len);
    return 1;
}
