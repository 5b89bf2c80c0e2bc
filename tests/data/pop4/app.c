/* pop29: MPI app with known imbalance (rank r sleeps 2 + r*5 ms per iteration), NVTX "loop" around the
 * loop, "iter" around each iteration, "work" around its computation, a mark "tick" after it; no barrier between MPI_Init and the loop. */
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int niter = 12;
    const char *e = getenv("APP_NITER");
    if (e && atoi(e) > 0) niter = atoi(e);
    double sb[64], rb[64], local = rank, global = 0;
    for (int i = 0; i < 64; ++i) sb[i] = rank + i;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    nvtxRangePushA("loop");
    for (int it = 0; it < niter; ++it) {
        nvtxRangePushA("iter");
        nvtxRangePushA("work");
        usleep(2000 + 5000 * rank);
        nvtxRangePop();
        nvtxMarkA("tick");
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Sendrecv(sb, 64, MPI_DOUBLE, right, it, rb, 64, MPI_DOUBLE, left, it, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        nvtxRangePop();
    }
    nvtxRangePop();
    usleep(3000 * rank);
    if (rank == 0) printf("pop29 app: %d ranks, %g\n", size, global);
    MPI_Finalize();
    return 0;
}
