/*
 * mpi_wait.c: 2 MPI ranks with a blocking wait, for the fixtures tests/data/cpu23/mpi_rank{0,1}.sqlite
 * (scripts/cpu_fixtures/make.sh). ROUNDS times:
 *   rank 0: busy 20 ms in work(), then MPI_Send to rank 1;
 *   rank 1: busy 5 ms in work(), then MPI_Recv from rank 0 (waits about 15 ms);
 * then MPI_Barrier. Open MPI polls while it waits (on CPU inside MPI_Recv) unless the scheduler takes
 * the CPU away: the 2 ranks share the node with nsys.
 *
 * Build: mpicc -O1 -fno-omit-frame-pointer mpi_wait.c -o mpi_wait
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS 20

static volatile double sink;

__attribute__((noinline)) static long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) static void work(long ns)
{
    long end = now() + ns;
    double a = 1.0;
    do {
        for (int i = 0; i < 4096; i++)
            a = a * 1.0000001 + 1e-9;
    } while (now() < end);
    sink = a;
}

int main(int argc, char **argv)
{
    int rank, buf = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int r = 0; r < ROUNDS; r++) {
        if (rank == 0) {
            work(20000000L);
            buf = r;
            MPI_Send(&buf, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        } else if (rank == 1) {
            work(5000000L);
            MPI_Recv(&buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_wait: %d rounds\n", ROUNDS);
    MPI_Finalize();
    return 0;
}
