##
## Copyright (C) by the mpich-tnbc authors
##     See COPYRIGHT in top-level directory
##

# T-NBC family: transparent non-blocking collectives (see README.tnbc)

AM_CPPFLAGS += -I$(top_srcdir)/src/mpi/coll/tnbc

mpi_core_sources += \
    src/mpi/coll/tnbc/tnbc_access.c \
    src/mpi/coll/tnbc/tnbc_alltoall.c \
    src/mpi/coll/tnbc/tnbc_bcast.c \
    src/mpi/coll/tnbc/tnbc_callback.c \
    src/mpi/coll/tnbc/tnbc_engine.c \
    src/mpi/coll/tnbc/tnbc_entry.c \
    src/mpi/coll/tnbc/tnbc_flow.c \
    src/mpi/coll/tnbc/tnbc_gain.c \
    src/mpi/coll/tnbc/tnbc_gather.c \
    src/mpi/coll/tnbc/tnbc_init.c \
    src/mpi/coll/tnbc/tnbc_late_error.c \
    src/mpi/coll/tnbc/tnbc_message.c \
    src/mpi/coll/tnbc/tnbc_neighbor.c \
    src/mpi/coll/tnbc/tnbc_node.c \
    src/mpi/coll/tnbc/tnbc_op.c \
    src/mpi/coll/tnbc/tnbc_persist.c \
    src/mpi/coll/tnbc/tnbc_policy.c \
    src/mpi/coll/tnbc/tnbc_priority.c \
    src/mpi/coll/tnbc/tnbc_reduce.c \
    src/mpi/coll/tnbc/tnbc_sched.c \
    src/mpi/coll/tnbc/tnbc_sched_reduce.c \
    src/mpi/coll/tnbc/tnbc_settle.c \
    src/mpi/coll/tnbc/tnbc_stats.c \
    src/mpi/coll/tnbc/tnbc_withdraw.c

noinst_HEADERS += \
    src/include/mpir_tnbc.h \
    src/mpi/coll/include/tnbc.h \
    src/mpi/coll/tnbc/tnbc_access.h \
    src/mpi/coll/tnbc/tnbc_engine.h \
    src/mpi/coll/tnbc/tnbc_entry.h \
    src/mpi/coll/tnbc/tnbc_flow.h \
    src/mpi/coll/tnbc/tnbc_gain.h \
    src/mpi/coll/tnbc/tnbc_late_error.h \
    src/mpi/coll/tnbc/tnbc_message.h \
    src/mpi/coll/tnbc/tnbc_node.h \
    src/mpi/coll/tnbc/tnbc_op.h \
    src/mpi/coll/tnbc/tnbc_pairwise.h \
    src/mpi/coll/tnbc/tnbc_policy.h \
    src/mpi/coll/tnbc/tnbc_priority.h \
    src/mpi/coll/tnbc/tnbc_sched.h \
    src/mpi/coll/tnbc/tnbc_settle.h \
    src/mpi/coll/tnbc/tnbc_stats.h \
    src/mpi/coll/tnbc/tnbc_util.h \
    src/mpi/coll/tnbc/tnbc_withdraw.h
