/*
 * polls: what Nsight Systems records of polling (tests/test_mpi23_fixtures.py profiles it, 2 ranks).
 * After an MPI_Barrier, rank 1 sends rank 0 one message (8 doubles) every 30 ms, tags 9..14; rank 0 waits for each with a
 * different call, polling every 1 ms, and logs how many calls each loop made ("poll <call> <calls>",
 * mpilog.h):
 *   tag 9  MPI_Irecv + MPI_Test loop          tag 12 MPI_Irecv + MPI_Testall loop (1 request)
 *   tag 10 MPI_Iprobe loop + MPI_Recv         tag 13 MPI_Irecv + MPI_Testsome loop (1 request)
 *   tag 11 MPI_Irecv + MPI_Testany loop       tag 14 MPI_Probe + MPI_Recv
 * then, on a communicator with the ranks reversed (MPI_Comm_split, key -rank), world rank 1 (its rank 0)
 * MPI_Send's world rank 0 (its rank 1) one message, tag 15.
 * Build: mpicc -O1 polls.c -o polls
 */
#define _GNU_SOURCE
#include "mpilog.h"
#include <unistd.h>

static void poll_log(const char *call, int n)
{
    pthread_mutex_lock(&mpilog_mu);
    fprintf(mpilog_f, "poll %s %d\n", call, n);
    pthread_mutex_unlock(&mpilog_mu);
}

int main(int argc, char **argv)
{
    double b[8] = {0};
    int rank, size, flag, n, idx, outcount, which[1];
    MPI_Request rq;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "polls: needs 2 ranks (got %d)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mpilog_open();
    MPI_Barrier(MPI_COMM_WORLD); /* the 30 ms count from here on both ranks */
    log_coll("MPI_Barrier", MPI_COMM_WORLD, -1);
    if (rank == 1) {
        for (int tag = 9; tag <= 14; tag++) {
            usleep(30000);
            MPI_Send(b, 8, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD);
            log_send("MPI_Send", MPI_COMM_WORLD, 0, tag, 64);
        }
    } else {
        MPI_Irecv(b, 8, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, &rq);
        for (n = 1, flag = 0;; n++) {
            MPI_Test(&rq, &flag, &st);
            if (flag)
                break;
            usleep(1000);
        }
        poll_log("MPI_Test", n);
        for (n = 1, flag = 0;; n++) {
            MPI_Iprobe(1, 10, MPI_COMM_WORLD, &flag, &st);
            if (flag)
                break;
            usleep(1000);
        }
        poll_log("MPI_Iprobe", n);
        MPI_Recv(b, 8, MPI_DOUBLE, 1, 10, MPI_COMM_WORLD, &st);
        MPI_Irecv(b, 8, MPI_DOUBLE, 1, 11, MPI_COMM_WORLD, &rq);
        for (n = 1, flag = 0;; n++) {
            MPI_Testany(1, &rq, &idx, &flag, &st);
            if (flag)
                break;
            usleep(1000);
        }
        poll_log("MPI_Testany", n);
        MPI_Irecv(b, 8, MPI_DOUBLE, 1, 12, MPI_COMM_WORLD, &rq);
        for (n = 1, flag = 0;; n++) {
            MPI_Testall(1, &rq, &flag, &st);
            if (flag)
                break;
            usleep(1000);
        }
        poll_log("MPI_Testall", n);
        MPI_Irecv(b, 8, MPI_DOUBLE, 1, 13, MPI_COMM_WORLD, &rq);
        for (n = 1;; n++) {
            MPI_Testsome(1, &rq, &outcount, which, &st);
            if (outcount == 1)
                break;
            usleep(1000);
        }
        poll_log("MPI_Testsome", n);
        MPI_Probe(1, 14, MPI_COMM_WORLD, &st);
        MPI_Recv(b, 8, MPI_DOUBLE, 1, 14, MPI_COMM_WORLD, &st);
    }
    /* a communicator with the ranks reversed (world 1 is its rank 0): one message, tag 15 */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev);
    log_comm("MPI_Comm_split", rev);
    if (rank == 1) {
        MPI_Send(b, 8, MPI_DOUBLE, 1, 15, rev);
        log_send("MPI_Send", rev, 1, 15, 64);
    } else {
        MPI_Recv(b, 8, MPI_DOUBLE, 0, 15, rev, &st);
        log_recv("MPI_Recv", rev, &st);
    }
    MPI_Comm_free(&rev);
    mpilog_close();
    MPI_Finalize();
    return 0;
}
