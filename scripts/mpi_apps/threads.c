/*
 * threads: MPI_THREAD_MULTIPLE with two worker threads per rank exchanging messages while the main thread
 * does collectives, deterministic, for the nsys 2023.4 fixtures (tests/data/mpi23/thr6h3; see
 * scripts/make_mpi23_fixtures.sh). Needs an even number of ranks >= 2. Every message sent and every
 * collective is logged by the program (mpilog.h, one locked line each): the tests' oracle.
 *
 * Ring: right = rank+1, left = rank-1 (mod size). MPI_Init_thread(MPI_THREAD_MULTIPLE) (the level MPI
 * provided is logged: "thread <level>"; below MULTIPLE the program aborts), then concurrently:
 *   worker "ring0": ITERS (default 6) x MPI_Ssend right (tag 0, 256 doubles) / MPI_Recv left (tag 0),
 *                   even ranks send first, odd ranks receive first
 *   worker "ring1": ITERS x { MPI_Irecv left (tag 1, 128 doubles); MPI_Isend right (tag 1); compute
 *                   300 us; MPI_Waitall }
 *   main thread:    ITERS x { compute 500 + 300*rank us (load imbalance); MPI_Allreduce; MPI_Alltoallv;
 *                   MPI_Allgatherv; MPI_Reduce_scatter_block }
 * then the main thread joins both workers, MPI_Barrier, MPI_Finalize.
 * Build: mpicc -O1 threads.c -o threads -lpthread
 */
#define _GNU_SOURCE
#include "mpilog.h"
#include <unistd.h>

#define MAXN 4096
static int size, rank, left, right, iters;

static void *ring0(void *arg)
{
    static double s[256], r[256];
    MPI_Status st;
    (void)arg;
    pthread_setname_np(pthread_self(), "ring0");
    for (int it = 0; it < iters; it++)
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == (rank % 2 == 0)) {
                MPI_Ssend(s, 256, MPI_DOUBLE, right, 0, MPI_COMM_WORLD);
                log_send("MPI_Ssend", MPI_COMM_WORLD, right, 0, 256 * 8);
            } else {
                MPI_Recv(r, 256, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &st);
                log_recv("MPI_Recv", MPI_COMM_WORLD, &st);
            }
        }
    return NULL;
}

static void *ring1(void *arg)
{
    static double s[128], r[128];
    MPI_Request rq[2];
    MPI_Status st[2];
    (void)arg;
    pthread_setname_np(pthread_self(), "ring1");
    for (int it = 0; it < iters; it++) {
        MPI_Irecv(r, 128, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(s, 128, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[1]);
        log_send("MPI_Isend", MPI_COMM_WORLD, right, 1, 128 * 8);
        spin_us(300);
        MPI_Waitall(2, rq, st);
        log_recv("MPI_Irecv", MPI_COMM_WORLD, &st[0]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    static double sbuf[MAXN], rbuf[MAXN];
    static int counts[MAXN], displs[MAXN], rcounts[MAXN], rdispls[MAXN];
    int provided;
    pthread_t t0, t1;
    double x = 0, y;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpilog_open();
    fprintf(mpilog_f, "thread %s\n", provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "lower");
    if (provided != MPI_THREAD_MULTIPLE || size < 2 || size % 2 || size > 64) {
        if (rank == 0)
            fprintf(stderr, "threads: needs MPI_THREAD_MULTIPLE and an even number of ranks up to 64\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    iters = getenv("ITERS") ? atoi(getenv("ITERS")) : 6;
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    for (int i = 0; i < MAXN; i++)
        sbuf[i] = rank + i * 1e-3;
    for (int j = 0, d = 0, e = 0; j < size; j++) {
        counts[j] = j + 1;
        displs[j] = d;
        d += counts[j];
        rcounts[j] = rank + 1;
        rdispls[j] = e;
        e += rcounts[j];
    }
    pthread_create(&t0, NULL, ring0, NULL);
    pthread_create(&t1, NULL, ring1, NULL);
    for (int it = 0; it < iters; it++) {
        x += spin_us(500 + 300 * rank);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        log_coll("MPI_Allreduce", MPI_COMM_WORLD, -1);
        MPI_Alltoallv(sbuf, counts, displs, MPI_DOUBLE, rbuf, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
        log_coll("MPI_Alltoallv", MPI_COMM_WORLD, -1);
        for (int j = 0, d = 0; j < size; j++) {
            rcounts[j] = j + 1;
            rdispls[j] = d;
            d += rcounts[j];
        }
        MPI_Allgatherv(sbuf, rank + 1, MPI_DOUBLE, rbuf, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
        log_coll("MPI_Allgatherv", MPI_COMM_WORLD, -1);
        for (int j = 0, e = 0; j < size; j++) { /* back to the Alltoallv's receive layout */
            rcounts[j] = rank + 1;
            rdispls[j] = e;
            e += rcounts[j];
        }
        MPI_Reduce_scatter_block(sbuf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        log_coll("MPI_Reduce_scatter_block", MPI_COMM_WORLD, -1);
    }
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);
    mpilog_close();
    MPI_Finalize();
    return 0;
}
