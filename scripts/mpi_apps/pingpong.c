/*
 * pingpong: a halo exchange with clock-sync ping-pongs between every pair of ranks, for the nsys 2023.4
 * alignment fixtures (tests/data/mpi23/pp2h2, pp4h4; see scripts/make_mpi23_fixtures.sh). Real codes'
 * halo exchanges and Extrae's / Score-P's own clock synchronisation exchange short messages in both
 * directions between hosts; the earliest reply bounds the clock offset between two hosts from both sides.
 * Every message sent and every collective is logged by the program (mpilog.h): the tests' oracle.
 *
 * Per rank, ROUNDS (3) times:
 *   1. ping-pong: for every pair (a < b) of ranks in turn, PINGS (16) x { a: MPI_Send to b, MPI_Recv from
 *      b; b: MPI_Recv from a, MPI_Send to a } (8 bytes, tag 10); the ranks not in the pair wait for the
 *      pair in an MPI_Ibarrier polled with MPI_Test and a 50 us sleep (they leave the 2 cores to the
 *      pair; unsuccessful MPI_Test calls leave no row in nsys 2023.4), and so does the pair after its
 *      ping-pongs;
 *   2. halo exchange (ring, right = rank+1): compute (rank-dependent), MPI_Irecv left/right, MPI_Isend
 *      right/left (tag 0, 256 doubles each way), MPI_Waitall of 4; MPI_Allreduce.
 * Then MPI_Barrier, MPI_Finalize. 3 x (16 x 2 x pairs + 2 x ranks) messages in all, e.g. 108 with 2 ranks.
 * Build: mpicc -O1 pingpong.c -o pingpong
 */
#define _GNU_SOURCE
#include "mpilog.h"
#include <time.h>

#define ROUNDS 3
#define PINGS 16
#define HALO 256
static double sbuf[HALO], sbuf2[HALO], rbuf[HALO], rbuf2[HALO];
static int size, rank;

static void wait_for_all(void)
{
    MPI_Request rq;
    int done = 0;
    struct timespec nap = {0, 50 * 1000};
    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    log_coll("MPI_Ibarrier", MPI_COMM_WORLD, -1);
    while (1) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        nanosleep(&nap, NULL);
    }
}

static void pingpong(int a, int b)
{
    double ball = 0;
    MPI_Status st;
    for (int i = 0; i < PINGS; i++) {
        if (rank == a) {
            MPI_Send(&ball, 1, MPI_DOUBLE, b, 10, MPI_COMM_WORLD);
            log_send("MPI_Send", MPI_COMM_WORLD, b, 10, 8);
            MPI_Recv(&ball, 1, MPI_DOUBLE, b, 10, MPI_COMM_WORLD, &st);
            log_recv("MPI_Recv", MPI_COMM_WORLD, &st);
        } else if (rank == b) {
            MPI_Recv(&ball, 1, MPI_DOUBLE, a, 10, MPI_COMM_WORLD, &st);
            log_recv("MPI_Recv", MPI_COMM_WORLD, &st);
            MPI_Send(&ball, 1, MPI_DOUBLE, a, 10, MPI_COMM_WORLD);
            log_send("MPI_Send", MPI_COMM_WORLD, a, 10, 8);
        }
    }
}

int main(int argc, char **argv)
{
    double local = 0, global;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpilog_open();
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int round = 0; round < ROUNDS; round++) {
        for (int a = 0; a < size; a++)
            for (int b = a + 1; b < size; b++) {
                pingpong(a, b);
                wait_for_all();
            }
        MPI_Request rq[4];
        MPI_Status sts[4];
        local += spin_us(300 + 200 * rank);
        memcpy(sbuf2, sbuf, sizeof sbuf);
        MPI_Irecv(rbuf, HALO, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(rbuf2, HALO, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(sbuf, HALO, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[2]);
        log_send("MPI_Isend", MPI_COMM_WORLD, right, 0, HALO * 8);
        MPI_Isend(sbuf2, HALO, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[3]);
        log_send("MPI_Isend", MPI_COMM_WORLD, left, 0, HALO * 8);
        MPI_Waitall(4, rq, sts);
        log_recv("MPI_Irecv", MPI_COMM_WORLD, &sts[0]);
        log_recv("MPI_Irecv", MPI_COMM_WORLD, &sts[1]);
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        log_coll("MPI_Allreduce", MPI_COMM_WORLD, -1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);
    mpilog_close();
    MPI_Finalize();
    return 0;
}
