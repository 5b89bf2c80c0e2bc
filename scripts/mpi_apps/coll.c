/*
 * coll: persistent requests, wildcard receives, probes and collectives on several communicators, as real
 * codes use them, deterministic, for the nsys 2023.4 fixtures (tests/data/mpi23/coll4, coll8h4; see
 * scripts/make_mpi23_fixtures.sh). Needs an even number of ranks >= 4. Every message sent, every collective
 * and every communicator made is logged by the program (mpilog.h): the tests' oracle.
 *
 * Ring: right = rank+1, left = rank-1 (mod size). Per rank, in this order:
 *   1. persistent: MPI_Send_init (right, tag 7, 64 doubles) + MPI_Recv_init (left, tag 7);
 *      3 rounds of MPI_Startall + MPI_Waitall, then 2 rounds of MPI_Start x2 + MPI_Wait x2; MPI_Request_free
 *   2. wildcards: every rank but 0 MPI_Send's to 0 (tag 100+rank, 8*(rank+1) doubles), rank 0 receives them
 *      with MPI_Recv(MPI_ANY_SOURCE, MPI_ANY_TAG); every rank but the last MPI_Isend's to the last (tag 30,
 *      4 doubles) + MPI_Wait, the last posts MPI_Irecv(MPI_ANY_SOURCE, 30) for each and completes them with
 *      MPI_Waitany
 *   3. probes: MPI_Send right (tag 20, 16+rank doubles), MPI_Probe(left, 20) + MPI_Get_count + MPI_Recv;
 *      MPI_Isend left (tag 21, 24 doubles), MPI_Iprobe(MPI_ANY_SOURCE, 21) loop + MPI_Recv, MPI_Wait
 *   4. rooted collectives: MPI_Bcast root 0, MPI_Reduce root 1, MPI_Gather root 2, MPI_Scatter root 3
 *   5. 3 x { compute 1000 + 500*rank us (load imbalance); MPI_Allreduce }, MPI_Alltoallv,
 *      MPI_Allgatherv, MPI_Reduce_scatter_block, MPI_Barrier
 *   6. nonblocking collectives: MPI_Iallreduce + MPI_Wait, MPI_Ibarrier + MPI_Test loop
 *   7. MPI_Comm_split in two halves (rank < size/2): MPI_Allreduce and MPI_Reduce (root: local rank 1) on
 *      each half; MPI_Comm_dup of MPI_COMM_WORLD: MPI_Bcast root 1 on it; MPI_Comm_free both
 *   8. MPI_Barrier, MPI_Finalize
 * Build: mpicc -O1 coll.c -o coll
 */
#define _GNU_SOURCE
#include "mpilog.h"
#include <unistd.h>

#define MAXN 4096
static double sbuf[MAXN], rbuf[MAXN];
static int size, rank, left, right;

static void persistent(void)
{
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Recv_init(rbuf, 64, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Send_init(sbuf, 64, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &rq[1]);
    for (int round = 0; round < 3; round++) {
        MPI_Startall(2, rq);
        log_send("MPI_Send_init", MPI_COMM_WORLD, right, 7, 64 * 8);
        MPI_Waitall(2, rq, st);
        log_recv("MPI_Recv_init", MPI_COMM_WORLD, &st[0]);
    }
    for (int round = 0; round < 2; round++) {
        MPI_Start(&rq[0]);
        MPI_Start(&rq[1]);
        log_send("MPI_Send_init", MPI_COMM_WORLD, right, 7, 64 * 8);
        MPI_Wait(&rq[0], &st[0]);
        MPI_Wait(&rq[1], &st[1]);
        log_recv("MPI_Recv_init", MPI_COMM_WORLD, &st[0]);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
}

static void wildcards(void)
{
    MPI_Status st;
    int last = size - 1;
    if (rank == 0) {
        for (int i = 1; i < size; i++) {
            MPI_Recv(rbuf, MAXN, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            log_recv("MPI_Recv", MPI_COMM_WORLD, &st);
        }
    } else {
        MPI_Send(sbuf, 8 * (rank + 1), MPI_DOUBLE, 0, 100 + rank, MPI_COMM_WORLD);
        log_send("MPI_Send", MPI_COMM_WORLD, 0, 100 + rank, 8 * (rank + 1) * 8);
    }
    if (rank == last) {
        MPI_Request rq[MAXN / 4];
        int idx;
        for (int i = 0; i < last; i++)
            MPI_Irecv(rbuf + 4 * i, 4, MPI_DOUBLE, MPI_ANY_SOURCE, 30, MPI_COMM_WORLD, &rq[i]);
        for (int i = 0; i < last; i++) {
            MPI_Waitany(last, rq, &idx, &st);
            log_recv("MPI_Irecv", MPI_COMM_WORLD, &st);
        }
    } else {
        MPI_Request rq;
        MPI_Isend(sbuf, 4, MPI_DOUBLE, last, 30, MPI_COMM_WORLD, &rq);
        log_send("MPI_Isend", MPI_COMM_WORLD, last, 30, 4 * 8);
        MPI_Wait(&rq, &st);
    }
}

static void probes(void)
{
    MPI_Status st;
    MPI_Request rq;
    int count, flag = 0;
    MPI_Send(sbuf, 16 + rank, MPI_DOUBLE, right, 20, MPI_COMM_WORLD);
    log_send("MPI_Send", MPI_COMM_WORLD, right, 20, (16 + rank) * 8);
    MPI_Probe(left, 20, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    MPI_Recv(rbuf, count, MPI_DOUBLE, left, 20, MPI_COMM_WORLD, &st);
    log_recv("MPI_Recv", MPI_COMM_WORLD, &st);

    MPI_Isend(sbuf, 24, MPI_DOUBLE, left, 21, MPI_COMM_WORLD, &rq);
    log_send("MPI_Isend", MPI_COMM_WORLD, left, 21, 24 * 8);
    while (!flag) {
        MPI_Iprobe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &flag, &st);
        if (!flag)
            usleep(100);
    }
    MPI_Recv(rbuf, 24, MPI_DOUBLE, st.MPI_SOURCE, 21, MPI_COMM_WORLD, &st);
    log_recv("MPI_Recv", MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, &st);
}

int main(int argc, char **argv)
{
    static double big[MAXN], big2[MAXN];
    static int counts[MAXN], displs[MAXN], rcounts[MAXN], rdispls[MAXN];
    MPI_Request rq;
    MPI_Status st;
    MPI_Comm half, dup;
    double x = 0, y;
    int flag = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size < 4 || size % 2 || size > 64) {
        if (rank == 0)
            fprintf(stderr, "coll: needs an even number of ranks from 4 to 64 (got %d)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mpilog_open();
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    for (int i = 0; i < MAXN; i++)
        sbuf[i] = big[i] = rank + i * 1e-3;

    persistent();
    wildcards();
    probes();

    /* 4. rooted */
    MPI_Bcast(big, 100, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    log_coll("MPI_Bcast", MPI_COMM_WORLD, 0);
    MPI_Reduce(sbuf, rbuf, 10, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
    log_coll("MPI_Reduce", MPI_COMM_WORLD, 1);
    MPI_Gather(sbuf, 4, MPI_DOUBLE, big2, 4, MPI_DOUBLE, 2, MPI_COMM_WORLD);
    log_coll("MPI_Gather", MPI_COMM_WORLD, 2);
    MPI_Scatter(big, 4, MPI_DOUBLE, rbuf, 4, MPI_DOUBLE, 3, MPI_COMM_WORLD);
    log_coll("MPI_Scatter", MPI_COMM_WORLD, 3);

    /* 5. all-to-all, with load imbalance */
    for (int it = 0; it < 3; it++) {
        x += spin_us(1000 + 500 * rank);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        log_coll("MPI_Allreduce", MPI_COMM_WORLD, -1);
    }
    for (int j = 0, d = 0, e = 0; j < size; j++) {
        counts[j] = j + 1; /* to rank j: j+1 doubles */
        displs[j] = d;
        d += counts[j];
        rcounts[j] = rank + 1; /* from rank j: rank+1 doubles */
        rdispls[j] = e;
        e += rcounts[j];
    }
    MPI_Alltoallv(sbuf, counts, displs, MPI_DOUBLE, rbuf, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
    log_coll("MPI_Alltoallv", MPI_COMM_WORLD, -1);
    for (int j = 0, d = 0; j < size; j++) {
        rcounts[j] = j + 1; /* rank j contributes j+1 doubles */
        rdispls[j] = d;
        d += rcounts[j];
    }
    MPI_Allgatherv(sbuf, rank + 1, MPI_DOUBLE, big2, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
    log_coll("MPI_Allgatherv", MPI_COMM_WORLD, -1);
    MPI_Reduce_scatter_block(sbuf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    log_coll("MPI_Reduce_scatter_block", MPI_COMM_WORLD, -1);
    MPI_Barrier(MPI_COMM_WORLD);
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);

    /* 6. nonblocking collectives */
    MPI_Iallreduce(sbuf, rbuf, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
    log_coll("MPI_Iallreduce", MPI_COMM_WORLD, -1);
    MPI_Wait(&rq, &st);
    spin_us(200 * rank);
    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    log_coll("MPI_Ibarrier", MPI_COMM_WORLD, -1);
    while (!flag) {
        MPI_Test(&rq, &flag, &st);
        if (!flag)
            usleep(100);
    }

    /* 7. split and dup */
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
    log_comm("MPI_Comm_split", half);
    MPI_Allreduce(sbuf, rbuf, 4, MPI_DOUBLE, MPI_SUM, half);
    log_coll("MPI_Allreduce", half, -1);
    MPI_Reduce(sbuf, rbuf, 6, MPI_DOUBLE, MPI_SUM, 1, half);
    log_coll("MPI_Reduce", half, 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    log_comm("MPI_Comm_dup", dup);
    MPI_Bcast(big, 50, MPI_DOUBLE, 1, dup);
    log_coll("MPI_Bcast", dup, 1);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    MPI_Barrier(MPI_COMM_WORLD);
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);
    mpilog_close();
    MPI_Finalize();
    return 0;
}
