/*
 * A test program of the molecule scenario "cluster" -- NOT nccl-tests.
 *
 * MPI_Allreduce (sum of floats) over CPU buffers across the ranks of an MPI job, for the sizes
 * -b MIN .. -e MAX bytes (factor -f), timed, with the result checked; printed in the layout of
 * nccl-tests' all_reduce_perf (the "# Rank N Group 0 Pid P on HOST device 0 [..]" lines, the
 * size/count/type/redop/root/time/algbw/busbw table, "# Avg bus bandwidth"), so that the
 * collection's nccl-tests parser and checks read it. Build: mpicc -O2 -o all_reduce_perf all_reduce_perf.c
 *
 *   mpirun --hostfile HOSTFILE -np N all_reduce_perf -b 8 -e 1M -f 2 [-g 1] [-n iters] [-w warmup]
 *
 * -g is accepted (nccl-tests' GPUs per rank) and must be 1: every rank has one CPU buffer.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long long parse_size(const char *text)
{
    char *end = NULL;
    double value = strtod(text, &end);
    long long unit = 1;
    if (end == text || value < 0) {
        return -1;
    }
    switch (*end) {
    case 'K': case 'k': unit = 1024LL; end++; break;
    case 'M': case 'm': unit = 1024LL * 1024; end++; break;
    case 'G': case 'g': unit = 1024LL * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end != '\0') {
        return -1;
    }
    return (long long)(value * (double)unit);
}

static void usage_exit(int rank, const char *why)
{
    if (rank == 0) {
        fprintf(stderr, "all_reduce_perf (MPI CPU test program): %s\n"
                "usage: all_reduce_perf -b MINBYTES -e MAXBYTES -f FACTOR [-g 1] [-n ITERS] [-w WARMUP]\n", why);
    }
    MPI_Finalize();
    exit(2);
}

/* Every rank's sum must be (nranks * (nranks - 1) / 2) + nranks * k for element k mod 8 */
static long check(const float *buf, long count, int nranks)
{
    long wrong = 0;
    for (long i = 0; i < count; i++) {
        float want = (float)nranks * (float)(i % 8) + (float)nranks * (float)(nranks - 1) / 2.0f;
        if (buf[i] != want) {
            wrong++;
        }
    }
    return wrong;
}

static void fill(float *buf, long count, int rank)
{
    for (long i = 0; i < count; i++) {
        buf[i] = (float)(i % 8) + (float)rank;
    }
}

int main(int argc, char **argv)
{
    int rank, nranks, opt;
    long long min_bytes = 8, max_bytes = 32 * 1024 * 1024, factor = 2;
    int iters = 5, warmup = 1, ngpus = 1;
    char host[256];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    while ((opt = getopt(argc, argv, "b:e:f:g:n:w:")) != -1) {
        switch (opt) {
        case 'b': min_bytes = parse_size(optarg); break;
        case 'e': max_bytes = parse_size(optarg); break;
        case 'f': factor = atoll(optarg); break;
        case 'g': ngpus = atoi(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default: usage_exit(rank, "unknown option");
        }
    }
    if (min_bytes < 4 || max_bytes < min_bytes || factor < 2 || iters < 1 || warmup < 0) {
        usage_exit(rank, "bad -b/-e/-f/-n/-w");
    }
    if (ngpus != 1) {
        usage_exit(rank, "-g must be 1 (one CPU buffer per rank)");
    }

    /* the device lines: each rank's host and pid, printed by rank 0 */
    memset(host, 0, sizeof(host));
    gethostname(host, sizeof(host) - 1);
    int pid = (int)getpid();
    char *hosts = NULL;
    int *pids = NULL;
    if (rank == 0) {
        hosts = calloc((size_t)nranks, sizeof(host));
        pids = calloc((size_t)nranks, sizeof(int));
    }
    MPI_Gather(host, sizeof(host), MPI_CHAR, hosts, sizeof(host), MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# all_reduce_perf: MPI_Allreduce over CPU buffers (test program, not nccl-tests)\n");
        printf("# Collective test starting: all_reduce_perf\n");
        printf("# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %lld(factor) warmup iters: %d iters: %d agg iters: 1 validation: 1 graph: 0\n",
               min_bytes, max_bytes, factor, warmup, iters);
        printf("#\n# Using devices\n");
        for (int r = 0; r < nranks; r++) {
            printf("#  Rank %2d Group  0 Pid %6d on %10s device  0 [cpu] MPI CPU buffer\n", r, pids[r], hosts + (size_t)r * sizeof(host));
        }
        printf("#\n");
        printf("#                                                              out-of-place                       in-place          \n");
        printf("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n");
        printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
        fflush(stdout);
    }

    long max_count = (long)(max_bytes / (long long)sizeof(float));
    float *send = malloc((size_t)max_count * sizeof(float));
    float *recv = malloc((size_t)max_count * sizeof(float));
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "all_reduce_perf: out of memory for %lld bytes\n", max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double bw_sum = 0.0;
    int bw_n = 0;
    long total_wrong = 0;
    for (long long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        long count = (long)(bytes / (long long)sizeof(float));
        double t_us[2];
        long wrong[2];
        double bus_factor = nranks > 1 ? 2.0 * (nranks - 1) / nranks : 1.0;
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < warmup; i++) {
                fill(send, count, rank);
                MPI_Allreduce(inplace ? MPI_IN_PLACE : send, inplace ? send : recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                if (inplace) {
                    fill(send, count, rank);
                }
                MPI_Allreduce(inplace ? MPI_IN_PLACE : send, inplace ? send : recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            }
            double local = (MPI_Wtime() - t0) / iters, slowest = 0.0;
            MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            t_us[inplace] = slowest * 1e6;
            long mine = check(inplace ? send : recv, count, nranks);
            MPI_Allreduce(&mine, &wrong[inplace], 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (!inplace) {
                fill(send, count, rank);
            }
        }
        if (rank == 0) {
            double algbw[2], busbw[2];
            for (int k = 0; k < 2; k++) {
                algbw[k] = (double)(count * (long)sizeof(float)) / (t_us[k] * 1e-6) / 1e9;
                busbw[k] = algbw[k] * bus_factor;
            }
            printf("%12lld  %12ld     float     sum      -1  %7.2f  %6.2f  %6.2f  %6ld  %7.2f  %6.2f  %6.2f  %6ld\n",
                   (long long)count * (long long)sizeof(float), count, t_us[0], algbw[0], busbw[0], wrong[0],
                   t_us[1], algbw[1], busbw[1], wrong[1]);
            fflush(stdout);
            bw_sum += busbw[0];
            bw_n++;
        }
        total_wrong += wrong[0] + wrong[1];
    }
    if (rank == 0) {
        printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %.3f \n#\n# Collective test concluded: all_reduce_perf\n#\n", bw_n ? bw_sum / bw_n : 0.0);
    }
    free(send);
    free(recv);
    free(hosts);
    free(pids);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
