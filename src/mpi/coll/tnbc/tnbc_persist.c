/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* Persistent collectives. MPI_<Coll>_init keeps the call's arguments with its request (the
 * generated MPIR_<Coll>_init, maint/patches), beside the schedule MPICH builds as always;
 * every MPI_Start offers the call to T-NBC as a nonblocking one (MPIR_Tnbc_<Coll> with a
 * request), and the start T-NBC declines runs MPICH's schedule. A start is decided like any
 * call: the same decision on every process, its own tags, early completion of its request. */

#include "mpiimpl.h"

struct MPIR_Tnbc_persist {
    MPIR_Tnbc_persist_start_t start;
    const void *caller;         /* where the application made the request: its call site */
    const MPIR_Tnbc_arg_t *kept;        /* the generated table (static) */
    int nkept;
    size_t *count;              /* per kept argument: array elements copied, or 1 for a type or
                                 * op referenced; 0 where it is not significant here */
    void *args;                 /* the argument struct, its arrays copied */
};

static void *arg_at(void *args, const MPIR_Tnbc_arg_t * a)
{
    return (char *) args + a->offset;
}

static int is_array(const MPIR_Tnbc_arg_t * a)
{
    return a->kind == MPIR_TNBC_ARG_AINTS || a->kind == MPIR_TNBC_ARG_TYPES;
}

/* An argument MPI says this process ignores (a root-only one elsewhere, a side given as
 * MPI_IN_PLACE) may hold anything: it is neither read nor referenced. */
static int significant(struct MPIR_Tnbc_persist *p, const MPIR_Tnbc_arg_t * a, int rank)
{
    for (int k = 0; k < p->nkept; k++) {
        const MPIR_Tnbc_arg_t *b = &p->kept[k];
        void *at = arg_at(p->args, b);
        if ((b->kind == MPIR_TNBC_ARG_ROOT && a->root_only && *(int *) at != rank) ||
            (b->kind == MPIR_TNBC_ARG_SENDBUF && a->side == MPIR_TNBC_SIDE_SEND &&
             *(const void **) at == MPI_IN_PLACE) ||
            (b->kind == MPIR_TNBC_ARG_RECVBUF && a->side == MPIR_TNBC_SIDE_RECV &&
             *(const void **) at == MPI_IN_PLACE))
            return 0;
    }
    return 1;
}

/* How many elements each kept argument has here; a neighbourhood collective without a
 * topology is left to MPICH (which reports it): *ok = 0. */
static int count_kept(struct MPIR_Tnbc_persist *p, MPIR_Comm * comm, int *ok)
{
    int mpi_errno = MPI_SUCCESS, indegree = 0, outdegree = 0, weighted, degrees = 0;

    *ok = 1;
    for (int k = 0; k < p->nkept; k++)
        degrees |= is_array(&p->kept[k]) && p->kept[k].len != MPIR_TNBC_LEN_COMM;
    if (degrees) {
        if (!MPIR_Topology_get(comm)) {
            *ok = 0;
            return MPI_SUCCESS;
        }
        mpi_errno = MPIR_Topo_canon_nhb_count(comm, &indegree, &outdegree, &weighted);
        MPIR_ERR_CHECK(mpi_errno);
    }
    for (int k = 0; k < p->nkept; k++) {
        const MPIR_Tnbc_arg_t *a = &p->kept[k];
        p->count[k] = 0;
        if (a->kind == MPIR_TNBC_ARG_SENDBUF || a->kind == MPIR_TNBC_ARG_RECVBUF ||
            a->kind == MPIR_TNBC_ARG_ROOT || !significant(p, a, comm->rank))
            continue;
        if (!is_array(a))
            p->count[k] = 1;
        else if (*(void **) arg_at(p->args, a))
            p->count[k] = a->len == MPIR_TNBC_LEN_INDEGREE ? indegree :
                a->len == MPIR_TNBC_LEN_OUTDEGREE ? outdegree : comm->local_size;
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The arrays this process reads become copies; the others NULL. On failure the ones not
 * copied yet are NULL too. */
static int copy_arrays(struct MPIR_Tnbc_persist *p)
{
    int mpi_errno = MPI_SUCCESS, k;
    for (k = 0; k < p->nkept; k++) {
        const MPIR_Tnbc_arg_t *a = &p->kept[k];
        void **array = arg_at(p->args, a);
        if (!is_array(a))
            continue;
        if (!p->count[k]) {
            *array = NULL;
            continue;
        }
        size_t bytes = p->count[k] * (a->kind == MPIR_TNBC_ARG_TYPES ? sizeof(MPI_Datatype) :
                                      sizeof(MPI_Aint));
        void *copy = MPL_malloc(bytes, MPL_MEM_COLL);
        MPIR_ERR_CHKANDJUMP(!copy, mpi_errno, MPI_ERR_OTHER, "**nomem");
        memcpy(copy, *array, bytes);
        *array = copy;
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    for (; k < p->nkept; k++)
        if (is_array(&p->kept[k]))
            *(void **) arg_at(p->args, &p->kept[k]) = NULL;
    goto fn_exit;
}

static void free_arrays(struct MPIR_Tnbc_persist *p)
{
    for (int k = 0; k < p->nkept; k++)
        if (is_array(&p->kept[k]))
            MPL_free(*(void **) arg_at(p->args, &p->kept[k]));
}

/* References on the significant datatypes and ops: +1 (add) or -1. */
static void reference(struct MPIR_Tnbc_persist *p, int add)
{
    for (int k = 0; k < p->nkept; k++) {
        const MPIR_Tnbc_arg_t *a = &p->kept[k];
        void *at = arg_at(p->args, a);
        if (a->kind == MPIR_TNBC_ARG_OP && p->count[k]) {
            MPI_Op op = *(MPI_Op *) at;
            if (add)
                MPIR_Op_add_ref_if_not_builtin(op);
            else
                MPIR_Op_release_if_not_builtin(op);
        } else if (a->kind == MPIR_TNBC_ARG_TYPE || a->kind == MPIR_TNBC_ARG_TYPES) {
            MPI_Datatype *types = a->kind == MPIR_TNBC_ARG_TYPE ? at : *(MPI_Datatype **) at;
            for (size_t i = 0; i < p->count[k]; i++) {
                /* an entry whose count is 0 need not hold a valid handle */
                if (HANDLE_GET_MPI_KIND(types[i]) != MPIR_DATATYPE ||
                    HANDLE_GET_KIND(types[i]) == HANDLE_KIND_INVALID)
                    continue;
                if (add)
                    MPIR_Datatype_add_ref_if_not_builtin(types[i]);
                else
                    MPIR_Datatype_release_if_not_builtin(types[i]);
            }
        }
    }
}

static void free_persist(struct MPIR_Tnbc_persist *p)
{
    if (p->args)
        free_arrays(p);
    MPL_free(p->args);
    MPL_free(p->count);
    MPL_free(p);
}

/* MPI-4.1's assertion that every process starts the persistent collectives in one order. */
static int ordered_starts(MPIR_Info * info)
{
    char value[16];
    int flag = 0;
    if (!info || MPIR_Info_get_impl(info, "mpi_assert_strict_persistent_collective_ordering",
                                    sizeof(value), value, &flag) != MPI_SUCCESS || !flag)
        return 0;
    return strcasecmp(value, "true") == 0;
}

int MPIR_Tnbc_persist_attach(MPIR_Request * preq, MPIR_Info * info,
                             MPIR_Tnbc_persist_start_t start, const void *args, size_t size,
                             const MPIR_Tnbc_arg_t * kept, int nkept)
{
    int mpi_errno = MPI_SUCCESS, ok = 0;
    struct MPIR_Tnbc_persist *p = NULL;
    const void *caller = MPIR_Tnbc_user_caller;

    MPIR_Tnbc_user_coll = 0;    /* the binding's mark is for the starts, not MPICH's calls */
    /* T-NBC takes intracommunicators only; without the assertion two processes may start two
     * requests in different orders, and tags drawn at each start would cross */
    if (preq->comm->comm_kind != MPIR_COMM_KIND__INTRACOMM || !ordered_starts(info))
        goto fn_exit;
    p = MPL_calloc(1, sizeof(*p), MPL_MEM_COLL);
    MPIR_ERR_CHKANDJUMP(!p, mpi_errno, MPI_ERR_OTHER, "**nomem");
    *p = (struct MPIR_Tnbc_persist) {.start = start,.caller = caller,.kept = kept,.nkept = nkept};
    p->count = MPL_malloc(nkept * sizeof(size_t), MPL_MEM_COLL);
    void *copy = MPL_malloc(size, MPL_MEM_COLL);
    if (!p->count || !copy) {
        MPL_free(copy);
        MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**nomem");
    }
    p->args = memcpy(copy, args, size);
    mpi_errno = count_kept(p, preq->comm, &ok);
    if (mpi_errno || !ok) {
        MPL_free(p->args);      /* its arrays are still the caller's */
        p->args = NULL;
        MPIR_ERR_CHECK(mpi_errno);
        free_persist(p);
        goto fn_exit;
    }
    mpi_errno = copy_arrays(p);
    MPIR_ERR_CHECK(mpi_errno);
    reference(p, 1);
    preq->u.persist_coll.tnbc = p;

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (p)
        free_persist(p);
    goto fn_exit;
}

int MPIR_Tnbc_persist_start(MPIR_Request * preq, int *handled)
{
    struct MPIR_Tnbc_persist *p = preq->u.persist_coll.tnbc;

    *handled = 0;
    if (!p)
        return MPI_SUCCESS;
    /* the start is the application's call, made where it made the request */
    MPIR_Tnbc_user_coll = 1;
    MPIR_Tnbc_user_caller = p->caller;
    return p->start(p->args, preq->comm, &preq->u.persist_coll.real_request, handled);
}

void MPIR_Tnbc_persist_free(MPIR_Request * preq)
{
    struct MPIR_Tnbc_persist *p = preq->u.persist_coll.tnbc;
    if (p) {
        preq->u.persist_coll.tnbc = NULL;
        reference(p, 0);
        free_persist(p);
    }
}
