/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

#include "tnbc_policy.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const coll_names[MPIR_TNBC_COLL_COUNT] = {
    [MPIR_TNBC_COLL_BCAST] = "bcast",
    [MPIR_TNBC_COLL_GATHER] = "gather",
    [MPIR_TNBC_COLL_GATHERV] = "gatherv",
    [MPIR_TNBC_COLL_SCATTER] = "scatter",
    [MPIR_TNBC_COLL_SCATTERV] = "scatterv",
    [MPIR_TNBC_COLL_ALLGATHER] = "allgather",
    [MPIR_TNBC_COLL_ALLGATHERV] = "allgatherv",
    [MPIR_TNBC_COLL_ALLTOALL] = "alltoall",
    [MPIR_TNBC_COLL_ALLTOALLV] = "alltoallv",
    [MPIR_TNBC_COLL_ALLTOALLW] = "alltoallw",
    [MPIR_TNBC_COLL_REDUCE] = "reduce",
    [MPIR_TNBC_COLL_ALLREDUCE] = "allreduce",
    [MPIR_TNBC_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [MPIR_TNBC_COLL_REDUCE_SCATTER_BLOCK] = "reduce_scatter_block",
    [MPIR_TNBC_COLL_SCAN] = "scan",
    [MPIR_TNBC_COLL_EXSCAN] = "exscan",
    [MPIR_TNBC_COLL_NEIGHBOR_ALLGATHER] = "neighbor_allgather",
    [MPIR_TNBC_COLL_NEIGHBOR_ALLGATHERV] = "neighbor_allgatherv",
    [MPIR_TNBC_COLL_NEIGHBOR_ALLTOALL] = "neighbor_alltoall",
    [MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLV] = "neighbor_alltoallv",
    [MPIR_TNBC_COLL_NEIGHBOR_ALLTOALLW] = "neighbor_alltoallw",
};

static const char *const decision_names[MPIR_TNBC_DECISION_COUNT] = {
    [MPIR_TNBC_ACCEPT] = "handled",
    [MPIR_TNBC_DECLINE_DISABLED] = "disabled by MPIR_CVAR_TNBC_COLLECTIVES",
    [MPIR_TNBC_DECLINE_UNSUPPORTED] = "collective not supported yet",
    [MPIR_TNBC_DECLINE_NOT_READY] = "MPI not initialized",
    [MPIR_TNBC_DECLINE_INTERNAL] = "MPICH-internal call",
    [MPIR_TNBC_DECLINE_JOB_OFF] = "off for the job (MPI_Init said why), or no MPI_Init",
    [MPIR_TNBC_DECLINE_INTERCOMM] = "intercommunicator",
    [MPIR_TNBC_DECLINE_WORLDS] = "communicator spans several worlds (spawn, connect)",
    [MPIR_TNBC_DECLINE_DEVICE_BUFFER] = "GPU support on (device buffers)",
    [MPIR_TNBC_DECLINE_OP_TYPE] = "user-defined op or derived/padded datatype",
    [MPIR_TNBC_DECLINE_SMALL] = "below MPIR_CVAR_TNBC_MIN_BYTES",
    [MPIR_TNBC_DECLINE_NODE] = "within one node (MPIR_CVAR_TNBC_NODE_MIN_BYTES)",
};

static const char *const outcome_names[MPIR_TNBC_OUTCOME_COUNT] = {
    [MPIR_TNBC_EARLY] = "returned early",
    [MPIR_TNBC_SYNC_SMALL] = "waited in call: pieces below MPIR_CVAR_TNBC_MIN_BYTES",
    [MPIR_TNBC_SYNC_PACKED] = "waited in call: derived datatype or overlapping ranges",
    [MPIR_TNBC_SYNC_NO_PAGE] = "waited in call: receive buffer spans no whole page",
    [MPIR_TNBC_SYNC_GUARD] = "waited in call: page guards refused",
    [MPIR_TNBC_SYNC_NOMEM] = "waited in call: no memory for a send copy",
    [MPIR_TNBC_SYNC_TRACE] = "waited in call: trace run",
    [MPIR_TNBC_SYNC_NO_HELPER] = "waited in call: no helper thread (pthread_create failed)",
    [MPIR_TNBC_SYNC_PROT] = "waited in call: receive buffer not private read-write memory",
    [MPIR_TNBC_SYNC_WINDOW] = "waited in call: receive buffer in an RMA window",
    [MPIR_TNBC_SYNC_SAMPLE] = "waited in call: recording the access order",
    [MPIR_TNBC_SYNC_NO_GAIN] = "waited in call: returning early did not pay at this site",
};

const char *MPIR_Tnbc_outcome_name(MPIR_Tnbc_outcome_t outcome)
{
    if ((unsigned) outcome >= MPIR_TNBC_OUTCOME_COUNT)
        return "unknown";
    return outcome_names[outcome];
}

const char *MPIR_Tnbc_coll_name(MPIR_Tnbc_coll_t coll)
{
    if ((unsigned) coll >= MPIR_TNBC_COLL_COUNT)
        return "unknown";
    return coll_names[coll];
}

const char *MPIR_Tnbc_decision_name(MPIR_Tnbc_decision_t decision)
{
    if ((unsigned) decision >= MPIR_TNBC_DECISION_COUNT)
        return "unknown";
    return decision_names[decision];
}

/* Copy one comma-separated item, lower-cased and without blanks, into buf. Returns the
 * position after the item (at its comma or the terminating NUL). */
static const char *next_item(const char *p, char *buf, size_t buflen)
{
    size_t n = 0;
    for (; *p && *p != ','; p++) {
        if (isspace((unsigned char) *p))
            continue;
        if (n + 1 < buflen)
            buf[n] = (char) tolower((unsigned char) *p);
        n++;
    }
    buf[n < buflen ? n : buflen - 1] = '\0';
    return p;
}

static int lookup_coll(const char *name)
{
    for (int i = 0; i < MPIR_TNBC_COLL_COUNT; i++) {
        if (strcmp(name, coll_names[i]) == 0)
            return i;
    }
    return -1;
}

int MPIR_Tnbc_parse_coll_list(const char *spec, uint32_t * mask, char *err, size_t errlen)
{
    uint32_t result = 0;
    char item[64];
    const char *p = spec ? spec : "";

    while (1) {
        p = next_item(p, item, sizeof(item));
        if (item[0] != '\0') {
            int remove = (item[0] == '-');
            const char *name = remove ? item + 1 : item;
            uint32_t bits;
            if (strcmp(name, "all") == 0) {
                bits = MPIR_TNBC_COLL_ALL_MASK;
            } else if (strcmp(name, "none") == 0 && !remove) {
                result = 0;
                bits = 0;
            } else {
                int coll = lookup_coll(name);
                if (coll < 0) {
                    if (err && errlen)
                        snprintf(err, errlen, "%s", item);
                    return -1;
                }
                bits = MPIR_TNBC_COLL_BIT(coll);
            }
            result = remove ? (result & ~bits) : (result | bits);
        }
        if (*p == '\0')
            break;
        p++;    /* skip the comma */
    }
    *mask = result;
    return 0;
}

MPIR_Tnbc_decision_t MPIR_Tnbc_policy_decide(const MPIR_Tnbc_policy_t * policy,
                                             const MPIR_Tnbc_call_facts_t * facts)
{
    uint32_t bit = MPIR_TNBC_COLL_BIT(facts->coll);

    if (!(policy->enabled_colls & bit))
        return MPIR_TNBC_DECLINE_DISABLED;
    if (!(policy->supported_colls & bit))
        return MPIR_TNBC_DECLINE_UNSUPPORTED;
    if (!facts->ready)
        return MPIR_TNBC_DECLINE_NOT_READY;
    if (facts->internal)
        return MPIR_TNBC_DECLINE_INTERNAL;
    if (policy->job_off)
        return MPIR_TNBC_DECLINE_JOB_OFF;
    if (facts->is_intercomm)
        return MPIR_TNBC_DECLINE_INTERCOMM;
    if (facts->spans_worlds)
        return MPIR_TNBC_DECLINE_WORLDS;
    if (facts->device_buffer)
        return MPIR_TNBC_DECLINE_DEVICE_BUFFER;
    if (facts->op_type_unsupported)
        return MPIR_TNBC_DECLINE_OP_TYPE;
    /* Protecting and faulting costs more than it hides on small pieces (research brief §1).
     * Only a size every process sees alike may send the call to the stock algorithms. */
    if (facts->size_is_global &&
        (facts->largest_submsg_bytes < policy->min_bytes || facts->largest_submsg_bytes == 0))
        return MPIR_TNBC_DECLINE_SMALL;
    /* Within a node a CPU copies every byte, in the call or in the helper: with every core
     * computing there is nothing to overlap, and T-NBC's own schedule only adds its costs
     * (README.tnbc). Declining every call needs no size, so it holds for every collective. */
    if (facts->node_local && (policy->node_min_bytes == MPIR_TNBC_NODE_DECLINE_ALL ||
                              (facts->size_is_global &&
                               facts->largest_submsg_bytes < policy->node_min_bytes)))
        return MPIR_TNBC_DECLINE_NODE;
    return MPIR_TNBC_ACCEPT;
}
