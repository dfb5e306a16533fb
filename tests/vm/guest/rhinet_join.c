// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-join [-d DEVICE] [--area] [--hold] GROUP:TOKEN[,GROUP:TOKEN...]
 *
 * Opens the rhinet device as a member of the groups named (what
 * RHINET_GROUPS does for every program: it is set to the argument) and
 * says whether that worked: "joined G..." and status 0, or "refused:"
 * with the errno and status 10 for EPERM (the kernel did not let this
 * user into a group), 11 for another errno. --area also registers a 4 KiB
 * communication area in the first group (the NIC takes it only from a
 * member); --hold then keeps the device open until SIGTERM or SIGINT
 * (a member that stays while the group is revoked). Run it as another
 * user with rhinet-as. Used by tests/vm/scripts/groups.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#define MAX_GROUPS 8 /* RHINET_MAX_GROUPS */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *want = NULL, *groups = NULL;
	bool area = false, hold = false;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	uint16_t joined[MAX_GROUPS];
	static char buf[4096] __attribute__((aligned(4096)));
	char who[64];
	int i, n, err;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			want = argv[++i];
		else if (!strcmp(argv[i], "--area"))
			area = true;
		else if (!strcmp(argv[i], "--hold"))
			hold = true;
		else if (argv[i][0] != '-' && !groups)
			groups = argv[i];
		else
			break;
	}
	if (!groups || i < argc) {
		fprintf(stderr, "usage: rhinet-join [-d DEVICE] [--area] "
				"[--hold] GROUP:TOKEN[,...]\n");
		return 2;
	}
	snprintf(who, sizeof(who), "uid %u gid %u", (unsigned int)geteuid(),
		 (unsigned int)getegid());
	setenv("RHINET_GROUPS", groups, 1);

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (want ? !strcmp(name, want) : !strncmp(name, "rhinet", 6)) {
			ctx = ibv_open_device(list[i]);
			err = errno;
			if (!ctx) {
				printf("rhinet-join: %s, %s: refused: %s "
				       "(%s)\n",
				       who, groups, strerror(err),
				       err == EPERM ? "EPERM" : "other");
				fflush(stdout);
				return err == EPERM ? 10 : 11;
			}
		}
	}
	if (!ctx) {
		fprintf(stderr, "rhinet-join: no rhinet device\n");
		return 12;
	}
	n = rhinetdv_query_groups(ctx, joined, MAX_GROUPS);
	if (n <= 0) {
		printf("rhinet-join: %s: opened, but a member of no group "
		       "(%d)\n",
		       who, n);
		return 12;
	}
	printf("rhinet-join: %s: joined", who);
	for (i = 0; i < n; i++)
		printf(" %u", joined[i]);
	printf("\n");
	if (area) {
		struct rhinetdv_area_attr a = {.group_id = joined[0],
					       .area_id = 7};

		pd = ibv_alloc_pd(ctx);
		if (pd)
			mr = rhinetdv_reg_area_ex(
				pd, buf, sizeof(buf),
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ,
				&a, sizeof(a));
		if (!mr) {
			printf("rhinet-join: %s: area 7 in group %u: %s\n", who,
			       joined[0], strerror(errno));
			return 12;
		}
		printf("rhinet-join: %s: area 7 in group %u registered\n", who,
		       joined[0]);
	}
	fflush(stdout);
	if (hold) {
		sigset_t block, old;

		sigemptyset(&block);
		sigaddset(&block, SIGTERM);
		sigaddset(&block, SIGINT);
		sigprocmask(SIG_BLOCK, &block, &old);
		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		printf("rhinet-join: %s: holding\n", who);
		fflush(stdout);
		while (!stop)
			sigsuspend(&old);
	}
	if (mr)
		ibv_dereg_mr(mr);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
