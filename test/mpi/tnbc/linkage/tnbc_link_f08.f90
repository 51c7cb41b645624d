! Copyright (C) by the mpich-tnbc authors
!     See COPYRIGHT in top-level directory
!
! A modern Fortran code: use mpi_f08 (derived-type handles, assumed-type buffers). Every rank
! sends block j of its array to rank j with MPI_Alltoall; rank 0 comes late, so the others
! return early when T-NBC takes the call. Every received element is checked.
program tnbc_link_f08
    use mpi_f08
    implicit none
    integer, parameter :: nb = 32768
    integer :: me, np, i, k, errs, all_errs, round
    double precision, allocatable :: sendb(:, :), recvb(:, :)
    double precision :: t0

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, me)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    allocate(sendb(nb, np), recvb(nb, np))
    errs = 0
    do round = 1, 3
        do k = 1, np
            do i = 1, nb
                sendb(i, k) = dble(me) * 1.d7 + dble(k - 1) * 1.d5 + dble(i)
            end do
        end do
        recvb = -1.d0
        if (me == 0) then
            t0 = MPI_Wtime()
            do while (MPI_Wtime() - t0 < 0.2d0)
            end do
        end if
        call MPI_Alltoall(sendb, nb, MPI_DOUBLE_PRECISION, recvb, nb, MPI_DOUBLE_PRECISION, &
                          MPI_COMM_WORLD)
        do k = np, 1, -1
            do i = 1, nb
                if (recvb(i, k) /= dble(k - 1) * 1.d7 + dble(me) * 1.d5 + dble(i)) &
                    errs = errs + 1
            end do
        end do
    end do
    call MPI_Reduce(errs, all_errs, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
    if (me == 0) then
        if (all_errs == 0) then
            print '(A)', ' No Errors'
        else
            print '(A, I0, A)', ' Found ', all_errs, ' errors'
        end if
    end if
    call MPI_Finalize()
end program tnbc_link_f08
