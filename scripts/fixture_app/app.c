/*
 * Small, deterministic MPI + NVTX program used to produce the real
 * Nsight Systems fixtures in tests/data/mpi4 (see scripts/profile_app.sh and
 * scripts/make_real_fixtures.sh).
 *
 * Per rank, every run performs exactly the same sequence of calls:
 *   MPI_Init
 *   app-domain push/pop range "setup" (registered string, category 1 "io")
 *     containing fopen/fwrite/fclose of a temp file and remove()
 *   worker pthread (named "worker" with nvtxNameOsThreadA): 3 x push/pop
 *     "worker_task" each containing usleep(1000)
 *   MPI_Barrier, MPI_Bcast
 *   nvtxRangeStartA("iterations 0-1") ... nvtxRangeEnd after iteration 1
 *   4 x push "iteration"
 *         push "compute" (rank-dependent busy wait: 2 + 2*rank ms) pop
 *         MPI_Allreduce
 *         MPI_Sendrecv   (ring: send right, receive from left)
 *         MPI_Irecv + MPI_Isend + MPI_Waitall (reverse ring)
 *       pop
 *   nvtxMarkA("checkpoint") after iteration 2
 *   usleep(2000)
 *   MPI_Reduce to rank 0
 *   MPI_Finalize
 *
 * APP_NITER=N in the environment runs N iterations instead of 4 (a longer run with
 * many collectives, for the clock-alignment fixtures; the "iterations 0-1" range
 * and the "checkpoint" mark are unchanged).
 *
 * Build: mpicc -O1 -I<nvtx include dir> app.c -o app -ldl -lpthread
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NITER 4
#define NMSG 256

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Busy wait for `ms` milliseconds; returns a value so the loop is not elided. */
static volatile double sink;
static void busy_ms(double ms)
{
    double t0 = now_ms();
    double acc = 0.0;
    long i = 0;
    while (now_ms() - t0 < ms) {
        acc += (double)(i++ % 7) * 0.5;
    }
    sink = acc;
}

static void *worker(void *arg)
{
    (void)arg;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "worker");
    for (int k = 0; k < 3; ++k) {
        nvtxRangePushA("worker_task");
        usleep(1000);
        nvtxRangePop();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Custom domain "app" with a registered string and a named category. */
    nvtxDomainHandle_t dom = nvtxDomainCreateA("app");
    nvtxStringHandle_t setup_str = nvtxDomainRegisterStringA(dom, "setup");
    nvtxDomainNameCategoryA(dom, 1, "io");

    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.category = 1;
    attr.colorType = NVTX_COLOR_ARGB;
    attr.color = 0xFF00A0FFu;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = setup_str;

    nvtxDomainRangePushEx(dom, &attr);
    {
        char path[64];
        snprintf(path, sizeof(path), "/tmp/nsys2prv_fixture_%d.tmp", rank);
        FILE *f = fopen(path, "w");
        if (f) {
            char buf[4096];
            memset(buf, 'x', sizeof(buf));
            fwrite(buf, 1, sizeof(buf), f);
            fclose(f);
        }
        remove(path);
    }
    nvtxDomainRangePop(dom);

    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);

    int root_val = (rank == 0) ? 42 : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&root_val, 1, MPI_INT, 0, MPI_COMM_WORLD);

    int right = (rank + 1) % size;
    int left = (rank + size - 1) % size;
    double sendbuf[NMSG], recvbuf[NMSG], sbuf2[NMSG], rbuf2[NMSG];
    for (int i = 0; i < NMSG; ++i) {
        sendbuf[i] = rank + i;
        sbuf2[i] = -rank - i;
    }
    double local = 0.0, global = 0.0;

    int niter = NITER;
    const char *env_niter = getenv("APP_NITER");
    if (env_niter && atoi(env_niter) > 0)
        niter = atoi(env_niter);

    nvtxRangeId_t span = nvtxRangeStartA("iterations 0-1");
    for (int it = 0; it < niter; ++it) {
        nvtxRangePushA("iteration");

        nvtxRangePushA("compute");
        busy_ms(2.0 + 2.0 * rank); /* load imbalance: rank 3 works 4x rank 0 */
        local += rank + it;
        nvtxRangePop();

        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

        MPI_Sendrecv(sendbuf, NMSG, MPI_DOUBLE, right, 10 + it,
                     recvbuf, NMSG, MPI_DOUBLE, left, 10 + it,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);

        MPI_Request reqs[2];
        MPI_Irecv(rbuf2, NMSG, MPI_DOUBLE, right, 100 + it, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(sbuf2, NMSG, MPI_DOUBLE, left, 100 + it, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);

        nvtxRangePop();
        if (it == 1)
            nvtxRangeEnd(span);
        if (it == 2)
            nvtxMarkA("checkpoint");
    }

    usleep(2000);
    double total = 0.0;
    MPI_Reduce(&global, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

    pthread_join(th, NULL);
    if (rank == 0)
        printf("fixture app: %d ranks, bcast=%d, total=%g\n", size, root_val, total);
    MPI_Finalize();
    return 0;
}
