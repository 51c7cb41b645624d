##
## Copyright (C) by the mpich-tnbc authors
##     See COPYRIGHT in top-level directory
##

# T-NBC family: transparent non-blocking collectives (see README.tnbc)

AM_CPPFLAGS += -I$(top_srcdir)/src/mpi/coll/tnbc

mpi_core_sources += \
    src/mpi/coll/tnbc/tnbc_entry.c \
    src/mpi/coll/tnbc/tnbc_init.c \
    src/mpi/coll/tnbc/tnbc_policy.c \
    src/mpi/coll/tnbc/tnbc_stats.c

noinst_HEADERS += \
    src/mpi/coll/include/tnbc.h \
    src/mpi/coll/tnbc/tnbc_impl.h \
    src/mpi/coll/tnbc/tnbc_policy.h
