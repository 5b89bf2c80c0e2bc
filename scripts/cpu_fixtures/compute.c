/*
 * compute.c: a single-threaded program with designed shares of CPU work between two functions,
 * for the CPU-sampling fixture tests/data/cpu23/compute.sqlite (scripts/cpu_fixtures/make.sh).
 *
 * ROUNDS rounds of: f() doing 7 * CHUNK iterations of a dependent floating-point chain, g() doing
 * 3 * CHUNK of the same: 70 % of the CPU work in f(), 30 % in g(), whatever else runs on the node
 * (the samples count CPU time, so the shares hold on a loaded machine too).  The loop is expanded
 * inside f and g: a sample's leaf frame is f or g.
 *
 * Build: cc -O1 -fno-omit-frame-pointer -fno-inline compute.c -o compute
 */
#include <stdio.h>

#define ROUNDS 150
#define CHUNK 600000L

static volatile double sink;

#define SPIN(iters, acc)                                    \
    do {                                                    \
        double a_ = *(acc);                                 \
        for (long i_ = 0; i_ < (iters); i_++)               \
            a_ = a_ * 1.0000001 + 1e-9;                     \
        *(acc) = a_;                                        \
    } while (0)

__attribute__((noinline)) void f(double *acc) { SPIN(7 * CHUNK, acc); }
__attribute__((noinline)) void g(double *acc) { SPIN(3 * CHUNK, acc); }

int main(void)
{
    double acc = 1.0;
    for (int r = 0; r < ROUNDS; r++) {
        f(&acc);
        g(&acc);
    }
    sink = acc;
    printf("compute: %d rounds of f (7 units) + g (3 units)\n", ROUNDS);
    return 0;
}
