// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-as UID[:GID] PROGRAM [ARGS...]: runs PROGRAM as user UID with
 * group GID (default: UID) and no supplementary groups, keeping the
 * environment. The test guests have no user database beyond root and
 * busybox's setpriv cannot change the user: the group tests
 * (tests/vm/scripts/groups.sh) run their unprivileged processes so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int id_of(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || end == s || *v >= 0xffffffffUL ? -1 : (int)(end - s);
}

int main(int argc, char **argv)
{
	unsigned long uid, gid;
	int n;

	if (argc < 3 || (n = id_of(argv[1], &uid)) < 0) {
		fprintf(stderr,
			"usage: rhinet-as UID[:GID] PROGRAM [ARGS...]\n");
		return 2;
	}
	gid = uid;
	if (argv[1][n] == ':') {
		int m = id_of(argv[1] + n + 1, &gid);

		if (m < 0 || argv[1][n + 1 + m]) {
			fprintf(stderr, "rhinet-as: bad GID in %s\n", argv[1]);
			return 2;
		}
	} else if (argv[1][n]) {
		fprintf(stderr, "rhinet-as: bad UID[:GID] %s\n", argv[1]);
		return 2;
	}
	if (setgroups(0, NULL) || setgid((gid_t)gid) || setuid((uid_t)uid)) {
		fprintf(stderr, "rhinet-as: cannot become %lu:%lu: %s\n", uid,
			gid, strerror(errno));
		return 126;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "rhinet-as: %s: %s\n", argv[2], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
