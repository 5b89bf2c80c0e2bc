/*
 * mpilog.h: the oracle of the MPI fixture programs (p2p.c, coll.c, threads.c).
 *
 * Each rank writes $MPILOG_DIR/log.rank<N> (default directory "."), one line per fact, written by the
 * program itself (never derived from Nsight Systems):
 *   send <call> <src> <dst> <tag> <bytes>        every message this rank SENDS (world ranks)
 *   recv <call> <src> <dst> <tag> <bytes>        every message this rank receives (src and tag from the
 *                                                status, so ANY_SOURCE/ANY_TAG receives show the sender)
 *   coll <call> <root> <r0,r1,...>               every collective this rank calls: root as a world rank
 *                                                (-1: none) and the world ranks of the communicator
 *   comm <call> <r0,r1,...>                      a communicator this rank made (Comm_split, Comm_dup)
 *   thread <level>                               the thread level MPI provided (threads.c)
 *   poll <call> <calls>                          how many calls a polling loop made (polls.c)
 * Lines of one rank may come from several threads (threads.c): each line is written with one fprintf
 * under a mutex.
 */
#ifndef MPILOG_H
#define MPILOG_H
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *mpilog_f;
static pthread_mutex_t mpilog_mu = PTHREAD_MUTEX_INITIALIZER;

static inline void mpilog_open(void)
{
    int r;
    char path[4096];
    const char *dir = getenv("MPILOG_DIR");
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    snprintf(path, sizeof path, "%s/log.rank%d", dir && *dir ? dir : ".", r);
    mpilog_f = fopen(path, "w");
    if (!mpilog_f) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static inline void mpilog_close(void) { fclose(mpilog_f); }

static inline int world_rank(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* the world rank of rank `r` of `comm` */
static inline int to_world(MPI_Comm comm, int r)
{
    MPI_Group g, w;
    int out;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    MPI_Group_translate_ranks(g, 1, &r, w, &out);
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return out;
}

static inline void ranks_of(MPI_Comm comm, char *buf, size_t n)
{
    int size, i;
    size_t used = 0;
    MPI_Comm_size(comm, &size);
    buf[0] = 0;
    for (i = 0; i < size && used + 16 < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ",%d" : "%d", to_world(comm, i));
}

static inline void log_send(const char *call, MPI_Comm comm, int dst, int tag, int bytes)
{
    int me = world_rank(), wdst = to_world(comm, dst);
    pthread_mutex_lock(&mpilog_mu);
    fprintf(mpilog_f, "send %s %d %d %d %d\n", call, me, wdst, tag, bytes);
    pthread_mutex_unlock(&mpilog_mu);
}

static inline void log_recv(const char *call, MPI_Comm comm, const MPI_Status *st)
{
    int me = world_rank(), bytes;
    MPI_Get_count(st, MPI_BYTE, &bytes);
    pthread_mutex_lock(&mpilog_mu);
    fprintf(mpilog_f, "recv %s %d %d %d %d\n", call, to_world(comm, st->MPI_SOURCE), me, st->MPI_TAG, bytes);
    pthread_mutex_unlock(&mpilog_mu);
}

static inline void log_coll(const char *call, MPI_Comm comm, int root)
{
    char buf[4096];
    ranks_of(comm, buf, sizeof buf);
    pthread_mutex_lock(&mpilog_mu);
    fprintf(mpilog_f, "coll %s %d %s\n", call, root < 0 ? -1 : to_world(comm, root), buf);
    pthread_mutex_unlock(&mpilog_mu);
}

static inline void log_comm(const char *call, MPI_Comm comm)
{
    char buf[4096];
    ranks_of(comm, buf, sizeof buf);
    pthread_mutex_lock(&mpilog_mu);
    fprintf(mpilog_f, "comm %s %s\n", call, buf);
    pthread_mutex_unlock(&mpilog_mu);
}

/* rank-dependent busy work (load imbalance): about `us` microseconds */
static inline double spin_us(long us)
{
    double t0 = MPI_Wtime(), x = 0;
    while ((MPI_Wtime() - t0) * 1e6 < (double)us)
        x += 1e-9;
    return x;
}
#endif
