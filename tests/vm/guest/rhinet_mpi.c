// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-mpi: what an MPI user checks first on a new interconnect, with
 * every byte checked. Run by tests/vm/scripts/ucx_mpi.sh under mpirun.
 *   rhinet-mpi [--max BYTES] [--label NAME]
 * Ranks 0 and 1 ping-pong from 8 bytes to BYTES (default 1 MiB), each
 * message's contents depending on size, iteration and direction; then every
 * rank takes part in MPI_Allreduce (sum, max, min over int, double, long),
 * MPI_Bcast from every root and MPI_Barrier rounds. Rank 0 prints one
 * "pingpong LABEL SIZE RTT_US MBPS" line per size and "RHINET-MPI: PASS"
 * at the end; any mismatch prints what differed and aborts with status 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void fail(const char *what, long where, long got, long want)
{
	fprintf(stderr,
		"RHINET-MPI: FAIL rank %d: %s at %ld: got %ld, want %ld\n",
		rank, what, where, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t byte_at(size_t size, int iter, int dir, size_t i)
{
	return (uint8_t)(i * 131 + size * 7 + (size_t)iter * 17 +
			 (size_t)dir * 101);
}

static void fill(uint8_t *b, size_t size, int iter, int dir)
{
	for (size_t i = 0; i < size; i++)
		b[i] = byte_at(size, iter, dir, i);
}

static void check(const uint8_t *b, size_t size, int iter, int dir)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != byte_at(size, iter, dir, i))
			fail("ping-pong byte", (long)i, b[i],
			     byte_at(size, iter, dir, i));
}

static int iterations(size_t size)
{
	if (size <= 4096)
		return 100;
	if (size <= 65536)
		return 30;
	return 8;
}

static void pingpong(size_t max, const char *label)
{
	uint8_t *buf = malloc(max);

	if (!buf)
		fail("malloc", 0, 0, (long)max);
	for (size_t size = 8; size <= max; size *= 4) {
		const int n = iterations(size);
		double t0 = 0;

		MPI_Barrier(MPI_COMM_WORLD);
		for (int it = -1; it < n; it++) { /* -1: warm-up */
			if (it == 0)
				t0 = MPI_Wtime();
			if (rank == 0) {
				fill(buf, size, it, 0);
				MPI_Send(buf, (int)size, MPI_BYTE, 1,
					 it & 0x7fff, MPI_COMM_WORLD);
				MPI_Recv(buf, (int)size, MPI_BYTE, 1,
					 it & 0x7fff, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				check(buf, size, it, 1);
			} else if (rank == 1) {
				MPI_Recv(buf, (int)size, MPI_BYTE, 0,
					 it & 0x7fff, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				check(buf, size, it, 0);
				fill(buf, size, it, 1);
				MPI_Send(buf, (int)size, MPI_BYTE, 0,
					 it & 0x7fff, MPI_COMM_WORLD);
			}
		}
		if (rank == 0) {
			double rtt = (MPI_Wtime() - t0) / n;

			printf("pingpong %s %zu %.1f %.2f\n", label, size,
			       rtt * 1e6, 2.0 * (double)size / rtt / 1e6);
			fflush(stdout);
		}
		if (size * 4 > max && size != max && max > size)
			size = max / 4; /* end exactly at max */
	}
	free(buf);
}

static void collectives(void)
{
	static const int counts[] = {1, 1000, 100000};

	for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		const int n = counts[c];
		int *iv = malloc(sizeof(int) * (size_t)n);
		int *ir = malloc(sizeof(int) * (size_t)n);
		double *dv = malloc(sizeof(double) * (size_t)n);
		double *dr = malloc(sizeof(double) * (size_t)n);
		long *lv = malloc(sizeof(long) * (size_t)n);
		long *lr = malloc(sizeof(long) * (size_t)n);

		if (!iv || !ir || !dv || !dr || !lv || !lr)
			fail("malloc", 0, 0, n);
		for (int i = 0; i < n; i++) {
			iv[i] = rank * 1000 + i;
			dv[i] = (double)((rank + 1) * (i % 97));
			lv[i] = -(long)rank * 3 - i;
		}
		MPI_Allreduce(iv, ir, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(dv, dr, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		MPI_Allreduce(lv, lr, n, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
		for (int i = 0; i < n; i++) {
			long want = 1000L * nranks * (nranks - 1) / 2 +
				    (long)nranks * i;

			if (ir[i] != want)
				fail("allreduce int sum", i, ir[i], want);
			if (dr[i] != (double)(nranks * (i % 97)))
				fail("allreduce double max", i, (long)dr[i],
				     nranks * (i % 97));
			if (lr[i] != -(long)(nranks - 1) * 3 - i)
				fail("allreduce long min", i, lr[i],
				     -(long)(nranks - 1) * 3 - i);
		}
		free(iv), free(ir), free(dv), free(dr), free(lv), free(lr);
	}

	const int bytes = 65536;
	uint8_t *b = malloc(bytes);

	if (!b)
		fail("malloc", 0, 0, bytes);
	for (int root = 0; root < nranks; root++) {
		if (rank == root)
			fill(b, bytes, root, 2);
		else
			memset(b, 0, bytes);
		MPI_Bcast(b, bytes, MPI_BYTE, root, MPI_COMM_WORLD);
		for (int i = 0; i < bytes; i++)
			if (b[i] != byte_at(bytes, root, 2, i))
				fail("bcast byte", i, b[i],
				     byte_at(bytes, root, 2, i));
	}
	free(b);

	/* Barriers: nobody leaves round k before everybody entered it. */
	int entered = 0;
	double t0 = MPI_Wtime();

	for (int k = 0; k < 20; k++) {
		int sum = 0;

		entered = k + 1;
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Allreduce(&entered, &sum, 1, MPI_INT, MPI_SUM,
			      MPI_COMM_WORLD);
		if (sum != nranks * (k + 1))
			fail("barrier round", k, sum, nranks * (k + 1));
	}
	if (rank == 0)
		printf("barrier+allreduce %d ranks: %.1f us per round\n",
		       nranks, (MPI_Wtime() - t0) / 20 * 1e6);
}

int main(int argc, char **argv)
{
	size_t max = 1 << 20;
	const char *label = "mpi";

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--max"))
			max = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--label"))
			label = argv[i + 1];
	}
	if (nranks < 2 || max < 8) {
		if (rank == 0)
			fprintf(stderr, "rhinet-mpi: needs 2 ranks or more and "
					"--max >= 8\n");
		MPI_Finalize();
		return 2;
	}
	pingpong(max, label);
	collectives();
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("RHINET-MPI: PASS %d ranks\n", nranks);
	MPI_Finalize();
	return 0;
}
