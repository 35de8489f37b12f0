/*
 * raw_allreduce: the reference MPI_Allreduce loop that fabricbench's mpi
 * transport is checked against (see bench/README.md and bench/fidelity.sh).
 *
 * No framework, nothing but MPI. For every size on the command line it does
 * what fabricbench does for one out-of-place allreduce point with a fixed
 * iteration count:
 *
 *   W warm-up MPI_Allreduce calls,
 *   MPI_Barrier,
 *   t0 = MPI_Wtime(); N back-to-back MPI_Allreduce; t = (MPI_Wtime() - t0) / N
 *   time = mean over ranks of t (MPI_Reduce sum / nranks)
 *
 * The warm-up + barrier + timed batch is repeated R times and rank 0 prints
 * the median of the R times, one line per size: "size_bytes time_us".
 *
 * Buffers: float elements, MPI_SUM, separate page-aligned send and receive
 * buffers, every page written before any timing (fabricbench's HostBuffer
 * does the same).
 *
 * Usage: raw_allreduce [-n iters] [-w warmup] [-r repeats] [-p] [-t level] [-o op] [-i] size_bytes[@iters]...
 * -o runs allgather (per-rank count = count / ranks, as fabricbench) or
 * sendrecv (a ring: each rank sends to the next and receives from the one
 * before) instead of allreduce; -i runs in place (MPI_IN_PLACE; a sendrecv
 * in place is MPI_Sendrecv_replace). A size may carry its own iteration
 * count after '@'. When all sizes are done rank 0 prints "# wall SECONDS",
 * the time from after MPI_Init to the end of the last size.
 * -p is a diagnostic: it also reads MPI_Wtime after every timed call and
 * stores the difference in a preallocated array, as fabricbench's
 * MpiTransport::time_batch does for its per-iteration p50/p99, so that the
 * cost of that bookkeeping can be measured apart from the rest of fabricbench.
 * -t is a diagnostic too: it starts MPI with MPI_Init_thread at the given
 * level (single, funneled, serialized or multiple) instead of MPI_Init.
 * fabricbench asks for funneled, and Open MPI 4.x switches its thread-safe
 * paths (opal_using_threads) on for every level above single.
 * Sizes take an optional K, M or G suffix (powers of 1024); each must be a
 * whole number of floats.
 */
#define _POSIX_C_SOURCE 200809L
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank_ = 0;

static void die(const char* what) {
  if (rank_ == 0) fprintf(stderr, "raw_allreduce: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2); /* not reached */
}

static void usage(void) {
  die("usage: raw_allreduce [-n iters] [-w warmup] [-r repeats] [-p] [-t level] [-o allreduce|allgather|sendrecv] "
      "[-i] size_bytes[K|M|G][@iters]...");
}

static void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING + 64];
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    snprintf(text, sizeof text, "%s failed: %s", call, msg);
    die(text);
  }
}

enum op { op_allreduce, op_allgather, op_sendrecv };

/* One call of the op on `count` floats (the whole buffer). */
static void run_op(enum op o, int in_place, float* send, float* recv, size_t count, int nranks) {
  if (o == op_allreduce) {
    check(MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce");
  } else if (o == op_allgather) {
    const int per_rank = (int)(count / (size_t)nranks);
    if (in_place)
      check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_FLOAT, recv, per_rank, MPI_FLOAT, MPI_COMM_WORLD), "MPI_Allgather");
    else
      check(MPI_Allgather(send, per_rank, MPI_FLOAT, recv, per_rank, MPI_FLOAT, MPI_COMM_WORLD), "MPI_Allgather");
  } else {
    const int next = (rank_ + 1) % nranks;
    const int prev = (rank_ + nranks - 1) % nranks;
    if (in_place)
      check(MPI_Sendrecv_replace(recv, (int)count, MPI_FLOAT, next, 0, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Sendrecv_replace");
    else
      check(MPI_Sendrecv(send, (int)count, MPI_FLOAT, next, 0, recv, (int)count, MPI_FLOAT, prev, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
  }
}

static long parse_int(const char* text, long low) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < low || v > INT_MAX) usage();
  return v;
}

/* A size, and after '@' its own iteration count (else *iters is left). */
static size_t parse_size(const char* text, long* iters) {
  char* end = NULL;
  errno = 0;
  const unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') usage();
  unsigned long long scale = 1;
  if (*end == 'K' || *end == 'k') scale = 1ULL << 10;
  else if (*end == 'M' || *end == 'm') scale = 1ULL << 20;
  else if (*end == 'G' || *end == 'g') scale = 1ULL << 30;
  if (scale != 1) ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end == '@') {
    *iters = parse_int(end + 1, 1);
    end += strlen(end);
  }
  if (*end != '\0' || v > SIZE_MAX / scale) usage();
  return (size_t)(v * scale);
}

static void* page_buffer(size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t rounded = (bytes + page - 1) / page * page;
  void* p = NULL;
  if (posix_memalign(&p, page, rounded == 0 ? page : rounded) != 0) die("cannot allocate host memory");
  /* Touch every page now so first-touch page faults stay out of the timing. */
  memset(p, 0, rounded == 0 ? page : rounded);
  return p;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a;
  const double y = *(const double*)b;
  return (x > y) - (x < y);
}

static int thread_level(int argc, char** argv) {
  /* Looked for before MPI starts, so without usage(): a bad value is
   * reported once MPI is up. */
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "-t") != 0) continue;
    const char* v = argv[i + 1];
    if (strcmp(v, "single") == 0) return MPI_THREAD_SINGLE;
    if (strcmp(v, "funneled") == 0) return MPI_THREAD_FUNNELED;
    if (strcmp(v, "serialized") == 0) return MPI_THREAD_SERIALIZED;
    if (strcmp(v, "multiple") == 0) return MPI_THREAD_MULTIPLE;
    return -2;
  }
  return -1; /* plain MPI_Init */
}

int main(int argc, char** argv) {
  const int level = thread_level(argc, argv);
  int provided = -1;
  if (level >= 0) check(MPI_Init_thread(&argc, &argv, level, &provided), "MPI_Init_thread");
  else check(MPI_Init(&argc, &argv), "MPI_Init");
  const double started = MPI_Wtime();
  int nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  long iters = 1000;
  long warmup = 5;
  long repeats = 1;
  int stamps = 0;
  int in_place = 0;
  enum op o = op_allreduce;
  int first_size = argc;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) iters = parse_int(argv[++i], 1);
    else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) warmup = parse_int(argv[++i], 0);
    else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) repeats = parse_int(argv[++i], 1);
    else if (strcmp(argv[i], "-p") == 0) stamps = 1;
    else if (strcmp(argv[i], "-i") == 0) in_place = 1;
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      const char* name = argv[++i];
      if (strcmp(name, "allreduce") == 0) o = op_allreduce;
      else if (strcmp(name, "allgather") == 0) o = op_allgather;
      else if (strcmp(name, "sendrecv") == 0) o = op_sendrecv;
      else usage();
    }
    else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc && level >= 0) ++i;
    else if (argv[i][0] == '-') usage();
    else {
      first_size = i;
      break;
    }
  }
  if (first_size >= argc) usage();
  if (level >= 0 && provided < level) die("MPI_Init_thread provided less than the thread level asked for");

  const int w = (int)warmup;
  double* times = malloc((size_t)repeats * sizeof *times);
  if (times == NULL) die("cannot allocate host memory");
  /* -p: one sample a timed iteration, every page touched up front. */
  double* samples = NULL;

  for (int s = first_size; s < argc; ++s) {
    long size_iters = iters;
    const size_t bytes = parse_size(argv[s], &size_iters);
    const int n = (int)size_iters;
    if (stamps) {
      free(samples);
      samples = page_buffer((size_t)n * sizeof(double));
    }
    if (bytes == 0 || bytes % sizeof(float) != 0) die("every size must be a positive multiple of 4 bytes (floats)");
    const size_t count = bytes / sizeof(float);
    if (count > 2147483647UL) die("a size exceeds what one MPI call can move");
    float* send = page_buffer(bytes);
    float* recv = page_buffer(bytes);
    for (size_t i = 0; i < count; ++i) send[i] = (float)(rank_ + 1);

    for (long r = 0; r < repeats; ++r) {
      for (int i = 0; i < w; ++i) run_op(o, in_place, send, recv, count, nranks);
      check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
      const double t0 = MPI_Wtime();
      double t;
      if (!stamps) {
        for (int i = 0; i < n; ++i) run_op(o, in_place, send, recv, count, nranks);
        t = (MPI_Wtime() - t0) / n;
      } else {
        double previous = t0;
        for (int i = 0; i < n; ++i) {
          run_op(o, in_place, send, recv, count, nranks);
          const double now = MPI_Wtime();
          samples[i] = now - previous;
          previous = now;
        }
        t = (previous - t0) / n;
      }
      double sum = 0;
      check(MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
      times[r] = sum / nranks;
    }

    if (rank_ == 0) {
      qsort(times, (size_t)repeats, sizeof *times, by_value);
      const double median =
          repeats % 2 ? times[repeats / 2] : 0.5 * (times[repeats / 2 - 1] + times[repeats / 2]);
      printf("%zu %.4f\n", bytes, median * 1e6);
      fflush(stdout);
    }
    free(send);
    free(recv);
  }

  if (rank_ == 0) printf("# wall %.6f\n", MPI_Wtime() - started);
  free(samples);
  free(times);
  MPI_Finalize();
  return 0;
}
