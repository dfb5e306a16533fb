/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rhinetdv: the administrator's switch groups and process group grants.
 * Part of <infiniband/rhinetdv.h>, which includes it inside its extern "C"
 * block: include that header, not this one.
 */
#ifndef INFINIBAND_RHINETDV_ADMIN_H
#define INFINIBAND_RHINETDV_ADMIN_H

#ifndef INFINIBAND_RHINETDV_H
#error "include <infiniband/rhinetdv.h>"
#endif

/* ---- the administrator's switch groups (RHINETDV_1.8) ------------------- */

/*
 * What the cluster administrator (CAP_NET_ADMIN) gives this node's NIC for
 * switch group `group` (0xf000..0xf7ff, RHINETDV_MCAST_GROUP_FIRST..LAST):
 * the members, one (node, endpoint) each, the same list on every member
 * node, and the process group whose processes may send to it (0: any).
 * rhinetdv_set_mcast_group with count 0 removes the group. Returns 0 or
 * an errno: EPERM (no CAP_NET_ADMIN), EINVAL (a bad ID, a node beyond the
 * fabric or listed twice, reserved bits, a QPN of 25 bits or more), E2BIG
 * (more than RHINETDV_MCAST_GROUP_MAX_MEMBERS), EBUSY (this node's
 * multicasts to the group are outstanding), ENOSPC (the NIC's group table
 * is full), ENOENT (removing a group the NIC does not have), EOPNOTSUPP
 * (not a rhinet device, or a driver without the methods).
 * rhinetdv_query_mcast_group returns the list last set: *count is the
 * capacity of `members` on entry and the number of members on return
 * (only the first capacity of them are written); ENOENT: no list.
 */
#define RHINETDV_MCAST_GROUP_FIRST 0xf000
#define RHINETDV_MCAST_GROUP_LAST 0xf7ff
#define RHINETDV_MCAST_GROUP_MAX_MEMBERS 128

struct rhinetdv_mcast_member {
	uint16_t node;
	uint16_t reserved; /* 0 */
	uint32_t qpn; /* the member's endpoint (rhinetdv_endpoint.endpoint_id) */
};

int rhinetdv_set_mcast_group(struct ibv_context *context, uint16_t group,
			     uint16_t endpoint_group,
			     const struct rhinetdv_mcast_member *members,
			     uint32_t count);
int rhinetdv_query_mcast_group(struct ibv_context *context, uint16_t group,
			       uint16_t *endpoint_group,
			       struct rhinetdv_mcast_member *members,
			       uint32_t *count);

/* ---- the administrator's process group grants (RHINETDV_1.11) ---------- */

/*
 * A process joins a process group (RHINET_GROUPS) only where the group is
 * granted: on each node, the administrator (CAP_NET_ADMIN; a resource
 * manager, or rhinet-run's privileged step: the tool rhinet-group(8))
 * grants group `group` (1..65535) with its token to a uid and/or a gid;
 * then a process whose effective uid is that uid, or whose groups hold
 * that gid, joins by naming the token. Nobody creates a group by naming
 * it, root included. With RHINETDV_GROUP_GRANT_LIFETIME nobody joins after
 * `lifetime` seconds. rhinetdv_revoke_group ends a grant: nobody joins any
 * more, the members keep the group until they close the device (*members,
 * if not NULL, says how many contexts are in it), and the ID cannot be
 * granted again until then. rhinetdv_query_group_grants lists the groups
 * of the node (ascending IDs; revoked and expired ones while they have
 * members): *count is the capacity of `grants` on entry and the number
 * of groups on return (only the first capacity of them are written);
 * tokens are never read back. Return 0 or an errno: EPERM (no
 * CAP_NET_ADMIN), EINVAL (group 0, neither uid nor gid, an unmapped id,
 * unknown comp_mask bits, reserved fields not 0), EEXIST (the group is
 * granted), EBUSY (its grant was revoked or expired and members remain),
 * ENOSPC (RHINETDV_MAX_GROUP_GRANTS groups on the node), ENOENT (revoking
 * a group that is not granted), EOPNOTSUPP (not a rhinet device, or a
 * driver without grants).
 */
#define RHINETDV_MAX_GROUP_GRANTS 1024

enum rhinetdv_group_grant_flags {
	RHINETDV_GROUP_GRANT_UID = 1 << 0, /* uid is set */
	RHINETDV_GROUP_GRANT_GID = 1 << 1, /* gid is set */
	RHINETDV_GROUP_GRANT_LIFETIME = 1 << 2, /* lifetime is set */
	/* rhinetdv_group_grant.flags only: */
	RHINETDV_GROUP_GRANT_REVOKED = 1 << 3,
	RHINETDV_GROUP_GRANT_EXPIRED = 1 << 4, /* the lifetime is over */
};

struct rhinetdv_group_grant_attr {
	uint32_t comp_mask; /* RHINETDV_GROUP_GRANT_UID, _GID, _LIFETIME */
	uint16_t group; /* 1..65535 */
	uint16_t reserved; /* 0 */
	uint64_t token;
	uint32_t uid;
	uint32_t gid;
	uint32_t lifetime; /* seconds */
	uint32_t reserved1; /* 0 */
};

/* One group of the node. */
struct rhinetdv_group_grant {
	uint16_t group;
	uint16_t flags; /* enum rhinetdv_group_grant_flags */
	uint32_t uid;
	uint32_t gid;
	uint32_t members; /* contexts in the group on this node */
	uint32_t granted_by; /* real uid of the process that granted it */
	uint32_t expires_in; /* seconds of lifetime left (0: none, or over) */
};

int rhinetdv_grant_group(struct ibv_context *context,
			 const struct rhinetdv_group_grant_attr *attr);
int rhinetdv_revoke_group(struct ibv_context *context, uint16_t group,
			  uint32_t *members);
int rhinetdv_query_group_grants(struct ibv_context *context,
				struct rhinetdv_group_grant *grants,
				uint32_t *count);

#endif /* INFINIBAND_RHINETDV_ADMIN_H */
