// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rhinet-group: the administrator's tool for process groups on this
 * node's RHiNET NIC (rhinetdv_grant_group(3), rhinet-group(8)). A process
 * joins a group (RHINET_GROUPS) only where it was granted to its user or
 * group; a resource manager, or rhinet-run's privileged step, runs this
 * on every node of a job. Needs CAP_NET_ADMIN.
 *
 *   rhinet-group [-d DEVICE] [-q] grant GROUP [--uid USER] [--gid GROUP]
 *                (--token HEX | --token-file FILE|-) [--lifetime SECONDS]
 *   rhinet-group [-d DEVICE] [-q] revoke GROUP
 *   rhinet-group [-d DEVICE] list
 *
 * Exit status: 0; 1 an error (EPERM: not the administrator; revoking a
 * group that is not granted: ENOENT); 2 a bad command line; 3 (grant) the
 * group's ID is taken: granted already (EEXIST), or its revoked or
 * expired grant still has members (EBUSY).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#define EXIT_USAGE 2
#define EXIT_TAKEN 3

static const char *me = "rhinet-group";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-d DEVICE] [-q] grant GROUP [--uid USER] [--gid "
		"GROUP]\n"
		"           (--token HEX | --token-file FILE|-) [--lifetime "
		"SECONDS]\n"
		"       %s [-d DEVICE] [-q] revoke GROUP\n"
		"       %s [-d DEVICE] list\n"
		"Grants, revokes and lists the process groups of this node's "
		"RHiNET NIC\n"
		"(needs CAP_NET_ADMIN). A process joins a group "
		"(RHINET_GROUPS=GROUP:TOKEN)\n"
		"only where it is granted to the process's uid or to a group "
		"it is in,\n"
		"with that token. See rhinet-group(8).\n",
		me, me, me);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", me);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", me);
	exit(EXIT_USAGE);
}

static bool number(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end && *v <= max;
}

static uint16_t group_arg(const char *s)
{
	unsigned long long v;

	if (!number(s, 65535, &v) || !v)
		bad("GROUP must be 1..65535, not '%s'", s);
	return (uint16_t)v;
}

/* 1 to 16 hexadecimal digits, blanks around them ignored. */
static bool token_of(const char *s, uint64_t *token)
{
	char *end;
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strspn(s, "0123456789abcdefABCDEF");
	if (!n || n > 16)
		return false;
	errno = 0;
	*token = strtoull(s, &end, 16);
	while (isspace((unsigned char)*end))
		end++;
	return !errno && !*end;
}

static uint64_t token_from_file(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char line[128] = "";
	uint64_t token;

	if (!f) {
		fprintf(stderr, "%s: --token-file %s: %s\n", me, path,
			strerror(errno));
		exit(1);
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	if (f != stdin)
		fclose(f);
	if (!token_of(line, &token)) {
		fprintf(stderr,
			"%s: --token-file %s: the first line is not 1 to 16 "
			"hexadecimal digits\n",
			me, path);
		exit(1);
	}
	return token;
}

static uint32_t uid_arg(const char *s)
{
	unsigned long long v;
	struct passwd *pw;

	if (number(s, UINT32_MAX - 1, &v))
		return (uint32_t)v;
	pw = getpwnam(s);
	if (!pw)
		bad("--uid: no user '%s'", s);
	return pw->pw_uid;
}

static uint32_t gid_arg(const char *s)
{
	unsigned long long v;
	struct group *gr;

	if (number(s, UINT32_MAX - 1, &v))
		return (uint32_t)v;
	gr = getgrnam(s);
	if (!gr)
		bad("--gid: no group '%s'", s);
	return gr->gr_gid;
}

static struct ibv_context *open_nic(const char *want, struct ibv_device ***list,
				    const char **name)
{
	struct ibv_context *ctx = NULL;
	int i, n = 0;

	/* The administrator's own process joins nothing. */
	unsetenv("RHINET_GROUPS");
	*list = ibv_get_device_list(&n);
	if (!*list) {
		fprintf(stderr,
			"%s: ibv_get_device_list: %s (is rhinet.ko loaded?)\n",
			me, strerror(errno));
		exit(1);
	}
	for (i = 0; i < n; i++) {
		*name = ibv_get_device_name((*list)[i]);
		if (want ? !strcmp(*name, want) : !strncmp(*name, "rhinet", 6))
			break;
	}
	if (i == n) {
		fprintf(stderr, "%s: no %s device%s%s\n", me,
			want ? "such" : "rhinet", want ? ": " : "",
			want ? want : "");
		exit(1);
	}
	ctx = ibv_open_device((*list)[i]);
	if (!ctx) {
		fprintf(stderr, "%s: ibv_open_device %s: %s\n", me, *name,
			strerror(errno));
		exit(1);
	}
	return ctx;
}

static int failed(const char *what, const char *dev, int err)
{
	fprintf(stderr, "%s: %s on %s: %s%s\n", me, what, dev, strerror(err),
		err == EPERM ? " (needs root or CAP_NET_ADMIN)" : "");
	return 1;
}

static int do_list(struct ibv_context *ctx, const char *dev)
{
	static struct rhinetdv_group_grant g[RHINETDV_MAX_GROUP_GRANTS];
	uint32_t i, n = RHINETDV_MAX_GROUP_GRANTS;
	int err = rhinetdv_query_group_grants(ctx, g, &n);

	if (err)
		return failed("list", dev, err);
	printf("%6s %10s %10s %8s %-8s %10s %10s\n", "GROUP", "UID", "GID",
	       "MEMBERS", "STATE", "EXPIRES", "GRANTED-BY");
	for (i = 0; i < n; i++) {
		char uid[16] = "-", gid[16] = "-", exp[24] = "-";
		const char *state = "granted";

		if (g[i].flags & RHINETDV_GROUP_GRANT_UID)
			snprintf(uid, sizeof(uid), "%u", g[i].uid);
		if (g[i].flags & RHINETDV_GROUP_GRANT_GID)
			snprintf(gid, sizeof(gid), "%u", g[i].gid);
		if (g[i].flags & RHINETDV_GROUP_GRANT_LIFETIME)
			snprintf(exp, sizeof(exp), "%us", g[i].expires_in);
		if (g[i].flags & RHINETDV_GROUP_GRANT_REVOKED)
			state = "revoked";
		else if (g[i].flags & RHINETDV_GROUP_GRANT_EXPIRED)
			state = "expired";
		printf("%6u %10s %10s %8u %-8s %10s %10u\n", g[i].group, uid,
		       gid, g[i].members, state, exp, g[i].granted_by);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rhinetdv_group_grant_attr a = {};
	const char *dev = NULL, *name = "";
	const char *token_file = NULL, *token_text = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx;
	unsigned long long v;
	bool quiet = false;
	uint32_t members;
	const char *cmd;
	int i = 1, err, rc = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-q")) {
			quiet = true;
		} else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			dev = argv[++i];
		} else {
			bad("unknown option '%s'", argv[i]);
		}
	}
	if (i == argc)
		bad("grant, revoke or list?");
	cmd = argv[i++];
	if (!strcmp(cmd, "grant")) {
		if (i == argc)
			bad("grant: which GROUP?");
		a.group = group_arg(argv[i++]);
		for (; i < argc; i++) {
			const char *opt = argv[i], *val = argv[i + 1];

			if (i + 1 == argc)
				bad("%s wants a value", opt);
			i++;
			if (!strcmp(opt, "--uid")) {
				a.uid = uid_arg(val);
				a.comp_mask |= RHINETDV_GROUP_GRANT_UID;
			} else if (!strcmp(opt, "--gid")) {
				a.gid = gid_arg(val);
				a.comp_mask |= RHINETDV_GROUP_GRANT_GID;
			} else if (!strcmp(opt, "--token")) {
				token_text = val;
			} else if (!strcmp(opt, "--token-file")) {
				token_file = val;
			} else if (!strcmp(opt, "--lifetime")) {
				if (!number(val, UINT32_MAX, &v) || !v)
					bad("--lifetime wants 1..4294967295 "
					    "seconds, not '%s'",
					    val);
				a.lifetime = (uint32_t)v;
				a.comp_mask |= RHINETDV_GROUP_GRANT_LIFETIME;
			} else {
				bad("grant: unknown option '%s'", opt);
			}
		}
		if (!(a.comp_mask &
		      (RHINETDV_GROUP_GRANT_UID | RHINETDV_GROUP_GRANT_GID)))
			bad("grant: say who may join: --uid and/or --gid");
		if (!!token_text == !!token_file)
			bad("grant: give --token or --token-file");
		if (token_text && !token_of(token_text, &a.token))
			bad("--token wants 1 to 16 hexadecimal digits, not "
			    "'%s'",
			    token_text);
		if (token_file)
			a.token = token_from_file(token_file);
	} else if (!strcmp(cmd, "revoke")) {
		if (i + 1 != argc)
			bad("revoke wants one GROUP");
		a.group = group_arg(argv[i]);
	} else if (!strcmp(cmd, "list")) {
		if (i != argc)
			bad("list takes no argument: '%s'", argv[i]);
	} else {
		bad("unknown command '%s' (grant, revoke or list)", cmd);
	}

	ctx = open_nic(dev, &list, &name);
	if (!strcmp(cmd, "list")) {
		rc = do_list(ctx, name);
	} else if (!strcmp(cmd, "grant")) {
		err = rhinetdv_grant_group(ctx, &a);
		if (err == EEXIST || err == EBUSY) {
			fprintf(stderr, "%s: group %u on %s: %s\n", me, a.group,
				name,
				err == EEXIST
					? "granted already"
					: "revoked, but members of it remain");
			rc = EXIT_TAKEN;
		} else if (err) {
			char what[32];

			snprintf(what, sizeof(what), "grant group %u", a.group);
			rc = failed(what, name, err);
		} else if (!quiet) {
			printf("%s: granted group %u on %s", me, a.group, name);
			if (a.comp_mask & RHINETDV_GROUP_GRANT_UID)
				printf(" to uid %u", a.uid);
			if (a.comp_mask & RHINETDV_GROUP_GRANT_GID)
				printf(" %s gid %u",
				       a.comp_mask & RHINETDV_GROUP_GRANT_UID
					       ? "and"
					       : "to",
				       a.gid);
			if (a.comp_mask & RHINETDV_GROUP_GRANT_LIFETIME)
				printf(" for %u s", a.lifetime);
			printf("\n");
		}
	} else {
		err = rhinetdv_revoke_group(ctx, a.group, &members);
		if (err == ENOENT) {
			fprintf(stderr, "%s: group %u on %s: not granted\n", me,
				a.group, name);
			rc = 1;
		} else if (err) {
			char what[32];

			snprintf(what, sizeof(what), "revoke group %u",
				 a.group);
			rc = failed(what, name, err);
		} else if (!quiet) {
			printf("%s: revoked group %u on %s", me, a.group, name);
			if (members)
				printf(" (%u member%s keep%s it until closing "
				       "the device)",
				       members, members == 1 ? "" : "s",
				       members == 1 ? "s" : "");
			printf("\n");
		}
	}
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc;
}
