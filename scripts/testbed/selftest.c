/*
 * selftest.c - sanity check for the fabricbench namespace test bed.
 *
 *   selftest [-s BYTES] [-n ITERS] [--pairs]
 *
 * 1. Every rank reports MPI_Get_processor_name (must be its test-bed host).
 * 2. MPI_Allreduce of the ranks, checked against size*(size-1)/2.
 * 3. Ping-pong bandwidth (default 4 MiB x 10 round trips) between rank 0 and
 *    the last rank; with --pairs, between the first rank of every pair of
 *    distinct hosts instead (shows that throttle-pair slows only one pair).
 *
 * Bandwidth is reported as MB/s (10^6 bytes/s) of payload moved in both
 * directions: 2 * iters * bytes / elapsed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double pingpong(int a, int b, int rank, char *buf, int bytes, int iters)
{
    double t0 = 0.0;
    /* one untimed warm-up round trip establishes the TCP connection */
    for (int it = -1; it < iters; it++) {
        if (it == 0)
            t0 = MPI_Wtime();
        if (rank == a) {
            MPI_Send(buf, bytes, MPI_CHAR, b, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, b, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == b) {
            MPI_Recv(buf, bytes, MPI_CHAR, a, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_CHAR, a, 0, MPI_COMM_WORLD);
        }
    }
    double dt = MPI_Wtime() - t0;
    return 2.0 * iters * (double)bytes / dt / 1e6;
}

int main(int argc, char **argv)
{
    int bytes = 4 << 20, iters = 10, pairs = 0;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc)
            bytes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pairs"))
            pairs = 1;
    }

    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);

    char *names = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, MPI_COMM_WORLD);
#define NAME(r) (names + (size_t)(r) * MPI_MAX_PROCESSOR_NAME)

    long mine = rank, sum = 0, expect = (long)size * (size - 1) / 2;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("rank %d on %s\n", r, NAME(r));
        printf("allreduce sum of ranks = %ld (expected %ld) %s\n", sum, expect,
               sum == expect ? "OK" : "FAIL");
        fflush(stdout);
    }

    char *buf = malloc((size_t)bytes);
    memset(buf, rank & 0xff, (size_t)bytes);
    if (!pairs) {
        int b = size - 1;
        if (b > 0) {
            double mbs = pingpong(0, b, rank, buf, bytes, iters);
            if (rank == 0)
                printf("pingpong rank 0 (%s) <-> rank %d (%s): %d B x %d: %.1f MB/s\n", NAME(0), b,
                       NAME(b), bytes, iters, mbs);
        }
    } else {
        /* leaders = first rank seen on each host name */
        int *lead = malloc(sizeof(int) * (size_t)size), nl = 0;
        for (int r = 0; r < size; r++) {
            int seen = 0;
            for (int l = 0; l < nl; l++)
                if (!strcmp(NAME(lead[l]), NAME(r)))
                    seen = 1;
            if (!seen)
                lead[nl++] = r;
        }
        for (int x = 0; x < nl; x++)
            for (int y = x + 1; y < nl; y++) {
                double mbs = pingpong(lead[x], lead[y], rank, buf, bytes, iters);
                /* everyone waits so pairs never overlap */
                MPI_Barrier(MPI_COMM_WORLD);
                if (rank == lead[x]) {
                    printf("pingpong %s <-> %s: %d B x %d: %.1f MB/s\n", NAME(lead[x]),
                           NAME(lead[y]), bytes, iters, mbs);
                    fflush(stdout);
                }
                MPI_Barrier(MPI_COMM_WORLD);
            }
        free(lead);
    }
    fflush(stdout);
    free(buf);
    free(names);
    MPI_Finalize();
    return sum == expect ? 0 : 1;
}
