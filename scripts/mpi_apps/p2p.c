/*
 * p2p: point-to-point MPI as real codes use it, deterministic, for the nsys 2023.4 fixtures
 * (tests/data/mpi23/p2p4, p2p4h2; see scripts/make_mpi23_fixtures.sh). Needs an even number of ranks.
 * Every message sent and every collective is logged by the program (mpilog.h): the tests' oracle.
 *
 * Ring: right = rank+1, left = rank-1 (mod size). Per rank, in this order:
 *   1. blocking sends, even ranks send first, odd ranks receive first (each to right, from left):
 *      MPI_Send tag 0 (128 doubles), MPI_Ssend tag 1 (64), MPI_Bsend tag 0 (32),
 *      MPI_Rsend tag 3 (16): the receiver posts MPI_Irecv, then MPI_Barrier, then MPI_Rsend / MPI_Wait
 *   2. MPI_Irecv from left + MPI_Isend to right, completed by (one round each, tag 0 unless said):
 *      MPI_Wait x2 (200 doubles), MPI_Waitall (210), MPI_Waitany loop (220, tag 4),
 *      MPI_Waitsome loop (230), MPI_Test loop (240, tag 5), MPI_Testall loop (250)
 *   3. MPI_Sendrecv ring (send right, receive left, tag 0, 300 doubles),
 *      MPI_Sendrecv_replace ring the other way (send left, receive right, tag 6, 310)
 *   4. halo exchange: HALO_ITERS (default 5) x { compute (rank-dependent); MPI_Irecv left/right,
 *      MPI_Isend right/left (tag 0, 512 doubles each way); MPI_Waitall of 4 }, then MPI_Allreduce
 *   5. MPI_Barrier, MPI_Finalize
 * Build: mpicc -O1 p2p.c -o p2p
 */
#define _GNU_SOURCE
#include "mpilog.h"
#include <unistd.h>

#define MAXN 1024
static double sbuf[MAXN], rbuf[MAXN], rbuf2[MAXN], sbuf2[MAXN];
static int size, rank, left, right;

static void blocking(const char *call, int tag, int n)
{
    MPI_Status st;
    int even = rank % 2 == 0;
    for (int phase = 0; phase < 2; phase++) {
        if ((phase == 0) == even) {
            if (!strcmp(call, "MPI_Send"))
                MPI_Send(sbuf, n, MPI_DOUBLE, right, tag, MPI_COMM_WORLD);
            else if (!strcmp(call, "MPI_Ssend"))
                MPI_Ssend(sbuf, n, MPI_DOUBLE, right, tag, MPI_COMM_WORLD);
            else
                MPI_Bsend(sbuf, n, MPI_DOUBLE, right, tag, MPI_COMM_WORLD);
            log_send(call, MPI_COMM_WORLD, right, tag, n * 8);
        } else {
            MPI_Recv(rbuf, n, MPI_DOUBLE, left, tag, MPI_COMM_WORLD, &st);
            log_recv("MPI_Recv", MPI_COMM_WORLD, &st);
        }
    }
}

static void ready_send(int tag, int n)
{
    MPI_Request rq;
    MPI_Status st;
    MPI_Irecv(rbuf, n, MPI_DOUBLE, left, tag, MPI_COMM_WORLD, &rq);
    MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before any MPI_Rsend */
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);
    MPI_Rsend(sbuf, n, MPI_DOUBLE, right, tag, MPI_COMM_WORLD);
    log_send("MPI_Rsend", MPI_COMM_WORLD, right, tag, n * 8);
    MPI_Wait(&rq, &st);
    log_recv("MPI_Irecv", MPI_COMM_WORLD, &st);
}

/* one Irecv(left) + Isend(right) round, completed by `how` */
static void nonblocking(const char *how, int tag, int n)
{
    MPI_Request rq[2];
    MPI_Status st[2];
    int flag = 0, idx, outcount, done = 0, which[2];
    MPI_Irecv(rbuf, n, MPI_DOUBLE, left, tag, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(sbuf, n, MPI_DOUBLE, right, tag, MPI_COMM_WORLD, &rq[1]);
    log_send("MPI_Isend", MPI_COMM_WORLD, right, tag, n * 8);
    if (!strcmp(how, "MPI_Wait")) {
        MPI_Wait(&rq[0], &st[0]);
        MPI_Wait(&rq[1], &st[1]);
    } else if (!strcmp(how, "MPI_Waitall")) {
        MPI_Waitall(2, rq, st);
    } else if (!strcmp(how, "MPI_Waitany")) {
        for (int k = 0; k < 2; k++) {
            MPI_Status s;
            MPI_Waitany(2, rq, &idx, &s);
            if (idx == 0)
                st[0] = s;
        }
    } else if (!strcmp(how, "MPI_Waitsome")) {
        MPI_Status s[2];
        while (done < 2) {
            MPI_Waitsome(2, rq, &outcount, which, s);
            if (outcount == MPI_UNDEFINED)
                break;
            for (int k = 0; k < outcount; k++)
                if (which[k] == 0)
                    st[0] = s[k];
            done += outcount;
        }
    } else if (!strcmp(how, "MPI_Test")) {
        for (int k = 0; k < 2; k++) {
            flag = 0;
            while (!flag) {
                MPI_Test(&rq[k], &flag, &st[k]);
                if (!flag)
                    usleep(100);
            }
        }
    } else { /* MPI_Testall */
        while (!flag) {
            MPI_Testall(2, rq, &flag, st);
            if (!flag)
                usleep(100);
        }
    }
    log_recv("MPI_Irecv", MPI_COMM_WORLD, &st[0]);
}

int main(int argc, char **argv)
{
    MPI_Status st;
    int halo_iters = getenv("HALO_ITERS") ? atoi(getenv("HALO_ITERS")) : 5;
    static char bsend_buf[MAXN * 8 + MPI_BSEND_OVERHEAD];
    void *detached;
    int detached_size;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size < 2 || size % 2) {
        if (rank == 0)
            fprintf(stderr, "p2p: needs an even number of ranks (got %d)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mpilog_open();
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    for (int i = 0; i < MAXN; i++)
        sbuf[i] = rank + i * 1e-3;

    /* 1. blocking */
    blocking("MPI_Send", 0, 128);
    blocking("MPI_Ssend", 1, 64);
    MPI_Buffer_attach(bsend_buf, sizeof bsend_buf);
    blocking("MPI_Bsend", 0, 32);
    MPI_Buffer_detach(&detached, &detached_size);
    ready_send(3, 16);

    /* 2. nonblocking with every completion */
    nonblocking("MPI_Wait", 0, 200);
    nonblocking("MPI_Waitall", 0, 210);
    nonblocking("MPI_Waitany", 4, 220);
    nonblocking("MPI_Waitsome", 0, 230);
    nonblocking("MPI_Test", 5, 240);
    nonblocking("MPI_Testall", 0, 250);

    /* 3. Sendrecv and Sendrecv_replace */
    MPI_Sendrecv(sbuf, 300, MPI_DOUBLE, right, 0, rbuf, 300, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &st);
    log_send("MPI_Sendrecv", MPI_COMM_WORLD, right, 0, 300 * 8);
    log_recv("MPI_Sendrecv", MPI_COMM_WORLD, &st);
    memcpy(rbuf, sbuf, 310 * sizeof(double));
    MPI_Sendrecv_replace(rbuf, 310, MPI_DOUBLE, left, 6, right, 6, MPI_COMM_WORLD, &st);
    log_send("MPI_Sendrecv_replace", MPI_COMM_WORLD, left, 6, 310 * 8);
    log_recv("MPI_Sendrecv_replace", MPI_COMM_WORLD, &st);

    /* 4. halo exchange */
    double local = 0, global;
    for (int it = 0; it < halo_iters; it++) {
        MPI_Request rq[4];
        MPI_Status sts[4];
        local += spin_us(500 + 300 * rank);
        memcpy(sbuf2, sbuf, 512 * sizeof(double));
        MPI_Irecv(rbuf, 512, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(rbuf2, 512, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(sbuf, 512, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[2]);
        log_send("MPI_Isend", MPI_COMM_WORLD, right, 0, 512 * 8);
        MPI_Isend(sbuf2, 512, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[3]);
        log_send("MPI_Isend", MPI_COMM_WORLD, left, 0, 512 * 8);
        MPI_Waitall(4, rq, sts);
        log_recv("MPI_Irecv", MPI_COMM_WORLD, &sts[0]);
        log_recv("MPI_Irecv", MPI_COMM_WORLD, &sts[1]);
    }
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    log_coll("MPI_Allreduce", MPI_COMM_WORLD, -1);

    MPI_Barrier(MPI_COMM_WORLD);
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);
    mpilog_close();
    MPI_Finalize();
    return 0;
}
