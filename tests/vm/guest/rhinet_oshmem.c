// SPDX-License-Identifier: GPL-2.0
/*
 * rhinet-oshmem: Open MPI's OpenSHMEM (oshmem, over UCX) on two PEs, as a
 * user of Debian's packages writes it (built with oshcc, run with oshrun).
 *
 *   rhinet-oshmem [--rounds N] [--stall S] [--label L] [--corrupt]
 *
 * 1. put/get with a data check: PE 0 puts a pattern of 8 B .. 1 MiB into
 *    PE 1's symmetric buffer (shmem_long_put, shmem_quiet, barrier) and
 *    PE 1 checks every word; then PE 1 gets PE 0's other buffer
 *    (shmem_long_get) and checks it.
 * 2. N ping-pong rounds (default 100000): PE 0 shmem_long_p's the round
 *    number into PE 1's ping and waits (shmem_wait_until) for it in its
 *    own pong; PE 1 answers the same way. A watchdog (SIGALRM every
 *    second) ends the PE with "STALL" and where it stood when the round
 *    counter has not moved for S seconds (default 60), so a hang is a
 *    clear failure, not a test that never ends.
 * Every result is printed (and flushed) before shmem_finalize, because
 * oshmem's finalize is known to crash over verbs transports (soft-RoCE
 * too), after the work is done: the caller judges the lines printed
 * before it and reports what finalize did separately ("finalize
 * returned" is printed only when it did).
 * --corrupt flips one word after the put, to see the check fail.
 */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORDS (1024 * 1024 / 8)

static long ping;
static long pong;
static volatile long rounds_done;
static long last_seen = -1;
static int still_seconds;
static int stall_limit = 60;
static int this_pe;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Async-signal-safe decimal output for the watchdog. */
static size_t put_num(char *out, long v)
{
	char tmp[24];
	size_t n = 0, len = 0;

	if (v < 0) {
		out[len++] = '-';
		v = -v;
	}
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		out[len++] = tmp[--n];
	return len;
}

static void watchdog(int sig)
{
	char msg[160];
	size_t len = 0;
	const char *parts[] = {"RHINET-OSHMEM: STALL pe ", " no progress for ",
			       " s at round ", " ping ", " pong "};
	long values[] = {this_pe, still_seconds + 1, rounds_done, ping, pong};

	(void)sig;
	if (rounds_done != last_seen) {
		last_seen = rounds_done;
		still_seconds = 0;
		return;
	}
	if (++still_seconds < stall_limit)
		return;
	for (int i = 0; i < 5; i++) {
		memcpy(msg + len, parts[i], strlen(parts[i]));
		len += strlen(parts[i]);
		len += put_num(msg + len, values[i]);
	}
	msg[len++] = '\n';
	if (write(STDOUT_FILENO, msg, len) < 0)
		_exit(4);
	_exit(3);
}

static long pattern(int pe, long i)
{
	return (long)(0x5a5a000000000000UL ^ ((unsigned long)pe << 40) ^
		      ((unsigned long)i * 2654435761UL));
}

static int check_words(const char *what, const long *buf, long words, int pe)
{
	for (long i = 0; i < words; i++) {
		if (buf[i] != pattern(pe, i)) {
			printf("RHINET-OSHMEM: FAIL %s of %ld B: word %ld is "
			       "%#lx, not %#lx\n",
			       what, words * 8, i, (unsigned long)buf[i],
			       (unsigned long)pattern(pe, i));
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long rounds = 100000;
	const char *label = "";
	int corrupt = 0, bad = 0, npes;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atol(argv[++i]);
		else if (!strcmp(argv[i], "--stall") && i + 1 < argc)
			stall_limit = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			label = argv[++i];
		else if (!strcmp(argv[i], "--corrupt"))
			corrupt = 1;
		else {
			fprintf(stderr, "rhinet-oshmem: unknown argument %s\n",
				argv[i]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	shmem_init();
	this_pe = shmem_my_pe();
	npes = shmem_n_pes();
	if (npes != 2) {
		if (this_pe == 0)
			printf("RHINET-OSHMEM: FAIL needs 2 PEs, has %d\n",
			       npes);
		shmem_global_exit(2);
	}
	int peer = 1 - this_pe;
	long *target = shmem_malloc(MAX_WORDS * sizeof(long));
	long *source = shmem_malloc(MAX_WORDS * sizeof(long));
	long *local = malloc(MAX_WORDS * sizeof(long));

	if (!target || !source || !local) {
		printf("RHINET-OSHMEM: FAIL pe %d: shmem_malloc of 1 MiB "
		       "failed\n",
		       this_pe);
		shmem_global_exit(2);
	}
	for (long i = 0; i < MAX_WORDS; i++) {
		source[i] = pattern(this_pe, i);
		target[i] = 0;
	}
	shmem_barrier_all();

	/* 1. put and get, checked word by word on the receiving PE. */
	for (long words = 1; words <= MAX_WORDS; words *= 8) {
		if (this_pe == 0) {
			shmem_long_put(target, source, words, peer);
			shmem_quiet();
		}
		shmem_barrier_all();
		if (this_pe == 1) {
			if (corrupt && words == 4096)
				target[words / 2] ^= 1;
			bad |= check_words("put", target, words, 0);
			memset(target, 0, words * sizeof(long));
			memset(local, 0, words * sizeof(long));
			shmem_long_get(local, source, words, peer);
			bad |= check_words("get", local, words, 0);
		}
		shmem_barrier_all();
	}
	if (this_pe == 1)
		printf("RHINET-OSHMEM: putget pe 1 %s (8 B .. 1 MiB, %s)\n",
		       bad ? "FAILED" : "checked", label);

	/* 2. the ping-pong, under the watchdog. */
	struct sigaction sa = {.sa_handler = watchdog};
	struct itimerval tick = {{1, 0}, {1, 0}};

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &tick, NULL);
	shmem_barrier_all();
	double t0 = now_us();
	long step = rounds / 10 ? rounds / 10 : 1;

	for (long r = 1; r <= rounds; r++) {
		if (this_pe == 0) {
			shmem_long_p(&ping, r, peer);
			shmem_long_wait_until(&pong, SHMEM_CMP_EQ, r);
		} else {
			shmem_long_wait_until(&ping, SHMEM_CMP_EQ, r);
			shmem_long_p(&pong, r, peer);
		}
		rounds_done = r;
		if (this_pe == 0 && r % step == 0)
			printf("RHINET-OSHMEM: pingpong %ld/%ld rounds, %.1f "
			       "us per round so far\n",
			       r, rounds, (now_us() - t0) / r);
	}
	double per_round = (now_us() - t0) / (rounds ? rounds : 1);

	setitimer(ITIMER_REAL, &(struct itimerval){0}, NULL);
	shmem_barrier_all();
	if (bad)
		printf("RHINET-OSHMEM: FAIL pe %d %s\n", this_pe, label);
	else
		printf("RHINET-OSHMEM: PASS pe %d rounds %ld round_trip_us "
		       "%.1f %s\n",
		       this_pe, rounds, per_round, label);
	fflush(stdout);
	shmem_free(source);
	shmem_free(target);
	free(local);
	shmem_finalize();
	printf("RHINET-OSHMEM: finalize returned pe %d\n", this_pe);
	return bad;
}
