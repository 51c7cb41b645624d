/*
 * Copyright (C) by the mpich-tnbc authors
 *     See COPYRIGHT in top-level directory
 */

/* A program of the MPI-2 C++ bindings (MPI::, libmpicxx; Debian's mpicxx links libmpichcxx):
 * an Alltoall whose rank 0 comes late, every received element checked. */

#include <mpi.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char *argv[])
{
    const int count = 256 * 1024;
    MPI::Init(argc, argv);
    int rank = MPI::COMM_WORLD.Get_rank(), size = MPI::COMM_WORLD.Get_size(), errs = 0;
    std::vector<int> sendbuf((size_t) size * count), recvbuf((size_t) size * count);
    for (int round = 0; round < 3; round++) {
        for (int p = 0; p < size; p++)
            for (int i = 0; i < count; i++)
                sendbuf[(size_t) p * count + i] = rank * 1000003 + p * 7919 + i;
        std::fill(recvbuf.begin(), recvbuf.end(), -1);
        if (rank == 0)
            usleep(200 * 1000);
        MPI::COMM_WORLD.Alltoall(sendbuf.data(), count, MPI::INT, recvbuf.data(), count,
                                 MPI::INT);
        for (int p = size - 1; p >= 0; p--)
            for (int i = 0; i < count; i++)
                if (recvbuf[(size_t) p * count + i] != p * 1000003 + rank * 7919 + i)
                    errs++;
    }
    int all_errs = 0;
    MPI::COMM_WORLD.Reduce(&errs, &all_errs, 1, MPI::INT, MPI::SUM, 0);
    if (rank == 0) {
        if (all_errs)
            std::printf(" Found %d errors\n", all_errs);
        else
            std::printf(" No Errors\n");
    }
    MPI::Finalize();
    return all_errs != 0;
}
