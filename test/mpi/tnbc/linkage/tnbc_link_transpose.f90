! Copyright (C) by the mpich-tnbc authors
!     See COPYRIGHT in top-level directory
!
! A Fortran transpose, as FFT codes do it: every rank holds nb rows of an n x n matrix
! (n = nb * size), sends block (me, j) to rank j with one MPI_Alltoall, and transposes the
! blocks it receives. Rank 0 comes late, so the others return early when T-NBC takes the
! call; every element of the transposed rows is checked.
program tnbc_link_transpose
    use mpi
    implicit none
    integer, parameter :: nb = 128
    integer :: ierr, me, np, n, i, j, k, src, errs, all_errs, round
    double precision, allocatable :: a(:, :), sendb(:, :, :), recvb(:, :, :), t(:, :)
    double precision :: t0

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    n = nb * np
    allocate(a(nb, n), sendb(nb, nb, np), recvb(nb, nb, np), t(nb, n))
    ! a(i, j) is element (me * nb + i, j) of the matrix
    do j = 1, n
        do i = 1, nb
            a(i, j) = dble(me * nb + i) * 100000.d0 + dble(j)
        end do
    end do
    errs = 0
    do round = 1, 3
        do k = 1, np
            sendb(:, :, k) = a(:, (k - 1) * nb + 1:k * nb)
        end do
        recvb = -1.d0
        if (me == 0) then
            t0 = MPI_Wtime()
            do while (MPI_Wtime() - t0 < 0.2d0)
            end do
        end if
        call MPI_Alltoall(sendb, nb * nb, MPI_DOUBLE_PRECISION, recvb, nb * nb, &
                          MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
        ! row me * nb + i of the transpose is column me * nb + i of the matrix
        do src = 1, np
            do j = 1, nb
                do i = 1, nb
                    t(i, (src - 1) * nb + j) = recvb(j, i, src)
                end do
            end do
        end do
        do j = 1, n
            do i = 1, nb
                if (t(i, j) /= dble(j) * 100000.d0 + dble(me * nb + i)) errs = errs + 1
            end do
        end do
    end do
    call MPI_Reduce(errs, all_errs, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (me == 0) then
        if (all_errs == 0) then
            print '(A)', ' No Errors'
        else
            print '(A, I0, A)', ' Found ', all_errs, ' errors'
        end if
    end if
    call MPI_Finalize(ierr)
end program tnbc_link_transpose
