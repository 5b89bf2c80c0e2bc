/*
 * threads.c: a multi-threaded program for the scheduling fixture tests/data/cpu23/threads.sqlite
 * (scripts/cpu_fixtures/make.sh): the main thread and 3 workers, each worker ROUNDS times
 *   busy 4 ms in work(), usleep(3000) (off CPU inside an OS runtime call),
 *   pthread_mutex_lock on a mutex the others hold for 2 ms (off CPU while waiting),
 * then the main thread joins them (off CPU inside pthread_join).
 *
 * Build: cc -O1 -fno-omit-frame-pointer threads.c -o threads -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 3
#define ROUNDS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
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

static void *worker(void *arg)
{
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        work(4000000L);
        usleep(3000);
        pthread_mutex_lock(&lock);
        work(2000000L);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    printf("threads: %d workers x %d rounds\n", WORKERS, ROUNDS);
    return 0;
}
