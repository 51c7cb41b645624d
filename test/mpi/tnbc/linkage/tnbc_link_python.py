#
# Copyright (C) by the mpich-tnbc authors
#     See COPYRIGHT in top-level directory
#

"""The linkage tests' exchange from Python: libmpi is loaded with dlopen, after libc, as Python
bindings load it. An Alltoall whose rank 0 comes late, received into a NumPy array; the first
round writes the array to a file (write(2) straight from the buffer) before reading it, and the
file's bytes are checked with the array's.

    tnbc_link_python.py mpi4py          through mpi4py (comm.Alltoall)
    tnbc_link_python.py ctypes LIBMPI   through ctypes on LIBMPI (e.g. libmpi.so.12)
"""

import ctypes
import os
import sys
import tempfile
import time

import numpy as np

COUNT = 256 * 1024  # int32s per pair: 1 MiB


class Ctypes:
    """The few MPI calls the test makes, on MPICH's ABI (mpi.h's handle values)."""

    COMM_WORLD, INT, SUM = 0x44000000, 0x4C000405, 0x58000003

    def __init__(self, lib):
        self.mpi = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        self.mpi.MPI_Init(None, None)

    def _int(self, fn):
        out = ctypes.c_int()
        fn(self.COMM_WORLD, ctypes.byref(out))
        return out.value

    def rank(self):
        return self._int(self.mpi.MPI_Comm_rank)

    def size(self):
        return self._int(self.mpi.MPI_Comm_size)

    def alltoall(self, send, recv):
        p = ctypes.c_void_p
        self.mpi.MPI_Alltoall(p(send.ctypes.data), COUNT, self.INT, p(recv.ctypes.data), COUNT,
                              self.INT, self.COMM_WORLD)

    def total(self, value):
        mine, out = ctypes.c_int(value), ctypes.c_int(0)
        self.mpi.MPI_Allreduce(ctypes.byref(mine), ctypes.byref(out), 1, self.INT, self.SUM,
                               self.COMM_WORLD)
        return out.value

    def finalize(self):
        self.mpi.MPI_Finalize()


class Mpi4py:
    def __init__(self):
        from mpi4py import MPI
        self.comm = MPI.COMM_WORLD

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def alltoall(self, send, recv):
        self.comm.Alltoall(send, recv)

    def total(self, value):
        return self.comm.allreduce(value)

    def finalize(self):
        pass    # mpi4py finalizes at exit


def exchange(mpi, rank, size, through_a_file):
    """Returns the number of wrong elements."""
    dst = np.repeat(np.arange(size, dtype=np.int64), COUNT)
    i = np.tile(np.arange(COUNT, dtype=np.int64), size)
    send = (rank * 1000003 + dst * 7919 + i).astype(np.int32)
    recv = np.full(size * COUNT, -1, dtype=np.int32)
    if rank == 0:
        time.sleep(0.2)
    mpi.alltoall(send, recv)
    if through_a_file:
        with tempfile.TemporaryFile() as f:
            if os.write(f.fileno(), recv) != recv.nbytes:   # data may still be on the way
                return recv.size
            f.seek(0)
            recv = np.frombuffer(f.read(), dtype=np.int32)
    expected = (dst * 1000003 + rank * 7919 + i).astype(np.int32)
    return int(np.count_nonzero(recv != expected))


def main():
    mpi = Ctypes(sys.argv[2]) if sys.argv[1] == "ctypes" else Mpi4py()
    rank, size = mpi.rank(), mpi.size()
    errs = sum(exchange(mpi, rank, size, r == 0) for r in range(3))
    errs = mpi.total(errs)
    if rank == 0:
        print(" Found %d errors" % errs if errs else " No Errors", flush=True)
    mpi.finalize()
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
