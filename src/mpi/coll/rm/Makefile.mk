##
## Copyright (C) by the mpich-tnbc authors
##     See COPYRIGHT in top-level directory
##

# Reorder + merge family: Alltoall(v) and Neighbor_alltoallv algorithms that order messages by
# node distance and weight and merge each node pair's small messages (see README.tnbc)

mpi_core_sources += \
    src/mpi/coll/rm/rm_call.c \
    src/mpi/coll/rm/rm_comm.c \
    src/mpi/coll/rm/rm_exchange.c \
    src/mpi/coll/rm/rm_forms.c \
    src/mpi/coll/rm/rm_forward.c \
    src/mpi/coll/rm/rm_plan.c \
    src/mpi/coll/rm/rm_stats.c

noinst_HEADERS += \
    src/mpi/coll/include/coll_peers.h \
    src/mpi/coll/include/reorder_merge.h \
    src/mpi/coll/rm/rm_impl.h \
    src/mpi/coll/rm/rm_plan.h
