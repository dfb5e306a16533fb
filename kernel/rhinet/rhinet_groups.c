// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Process group grants: a group exists on this node only when the
 * administrator grants it (its token, the uid and/or gid that may join,
 * optionally a lifetime); rhinet_ucontext.c then lets a context join it.
 * Granting, revoking and listing are three driver methods of the uverbs
 * ioctl interface, each checking CAP_NET_ADMIN in the user namespace of
 * the device's network namespace (the initial one unless the device was
 * moved in exclusive rdma netns mode), as the switch groups' methods do
 * (rhinet_mcast_switch.c says why not sysfs or netlink). The device's
 * group table holds at most RHINET_MAX_NODE_GROUPS entries; a revoked or
 * expired grant stays in it, refusing new members and a new grant of its
 * ID, until its last member has left, so that a later grant never puts
 * new processes in a group with the old ones.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uidgid.h>
#include <net/net_namespace.h>

#include "rhinet_obj.h"

#define UVERBS_MODULE_NAME rhinet_ib
#include <rdma/uverbs_named_ioctl.h>

static_assert(sizeof(struct rhinet_group_grant) == 24);

static bool rhinet_group_expired(const struct rhinet_group *g)
{
	return g->expires && ktime_get_boottime_seconds() >= g->expires;
}

/* Granted, not revoked, not expired: new members may join. */
bool rhinet_group_live(const struct rhinet_group *g)
{
	return !g->revoked && !rhinet_group_expired(g);
}

/*
 * Whether the calling process may join group @id (entry @g, or NULL)
 * naming @token. The caller holds groups_lock.
 */
bool rhinet_group_may_join(struct rhinet_ib *ib, u16 id,
			   const struct rhinet_group *g, u64 token)
{
	lockdep_assert_held(&ib->groups_lock);
	if (!g || !rhinet_group_live(g)) {
		ibdev_dbg(&ib->ibdev, "group %u: not granted\n", id);
		return false;
	}
	if (g->token != token) {
		ibdev_dbg(&ib->ibdev, "group %u: another token\n", id);
		return false;
	}
	if ((uid_valid(g->uid) && uid_eq(current_euid(), g->uid)) ||
	    (gid_valid(g->gid) && in_egroup_p(g->gid)))
		return true;
	ibdev_dbg(&ib->ibdev, "group %u: not granted to uid %u\n", id,
		  from_kuid(&init_user_ns, current_euid()));
	return false;
}

/* Takes entry @g of group @id out of the table; the caller holds groups_lock. */
void rhinet_group_drop_locked(struct rhinet_ib *ib, u16 id,
			      struct rhinet_group *g)
{
	lockdep_assert_held(&ib->groups_lock);
	WARN_ON(g->members);
	xa_erase(&ib->groups, id);
	kfree(g);
	ib->num_groups--;
}

/* Drops revoked and expired entries that have no member left. */
static void rhinet_groups_sweep_locked(struct rhinet_ib *ib)
{
	struct rhinet_group *g;
	unsigned long id;

	xa_for_each(&ib->groups, id, g)
		if (!g->members && !rhinet_group_live(g))
			rhinet_group_drop_locked(ib, id, g);
}

/* The device of the caller's context, if the caller is its administrator. */
static struct rhinet_ib *rhinet_group_admin_dev(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *uctx;
	struct rhinet_ib *ib;
	struct net *net;

	uctx = ib_uverbs_get_ucontext(attrs);
	if (IS_ERR(uctx))
		return ERR_CAST(uctx);
	ib = to_rib(uctx->device);
	/* Grants open the fabric's areas of a group to whoever joins. */
	net = read_pnet(&ib->ibdev.coredev.rdma_net);
	if (!ns_capable(net->user_ns, CAP_NET_ADMIN))
		return ERR_PTR(-EPERM);
	return ib;
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_GRANT_GROUP)(struct uverbs_attr_bundle *attrs)
{
	kuid_t uid = INVALID_UID;
	kgid_t gid = INVALID_GID;
	struct rhinet_group *g, *old;
	u32 id32, lifetime = 0;
	struct rhinet_ib *ib;
	u64 token;
	u16 id;
	int ret;

	ib = rhinet_group_admin_dev(attrs);
	if (IS_ERR(ib))
		return PTR_ERR(ib);
	ret = uverbs_copy_from(&id, attrs, RHINET_IB_ATTR_GRANT_GROUP_ID);
	if (!ret)
		ret = uverbs_copy_from(&token, attrs,
				       RHINET_IB_ATTR_GRANT_GROUP_TOKEN);
	if (ret)
		return ret;
	if (!id)
		return -EINVAL;
	ret = uverbs_copy_from(&id32, attrs, RHINET_IB_ATTR_GRANT_GROUP_UID);
	if (!ret) {
		uid = make_kuid(current_user_ns(), id32);
		if (!uid_valid(uid))
			return -EINVAL;
	} else if (ret != -ENOENT) {
		return ret;
	}
	ret = uverbs_copy_from(&id32, attrs, RHINET_IB_ATTR_GRANT_GROUP_GID);
	if (!ret) {
		gid = make_kgid(current_user_ns(), id32);
		if (!gid_valid(gid))
			return -EINVAL;
	} else if (ret != -ENOENT) {
		return ret;
	}
	if (!uid_valid(uid) && !gid_valid(gid))
		return -EINVAL;
	/* Absent optional attributes: -ENOENT. */
	ret = uverbs_copy_from(&lifetime, attrs,
			       RHINET_IB_ATTR_GRANT_GROUP_LIFETIME);
	if (ret && ret != -ENOENT)
		return ret;

	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->token = token;
	g->uid = uid;
	g->gid = gid;
	g->granted_by = current_uid();
	if (lifetime)
		g->expires = ktime_get_boottime_seconds() + lifetime;

	mutex_lock(&ib->groups_lock);
	old = xa_load(&ib->groups, id);
	if (old && rhinet_group_live(old)) {
		ret = -EEXIST;
		goto out;
	}
	if (old && old->members) {
		ret = -EBUSY; /* the members of the old grant are still in */
		goto out;
	}
	if (old)
		rhinet_group_drop_locked(ib, id, old);
	if (ib->num_groups >= RHINET_MAX_NODE_GROUPS)
		rhinet_groups_sweep_locked(ib);
	if (ib->num_groups >= RHINET_MAX_NODE_GROUPS) {
		ret = -ENOSPC;
		goto out;
	}
	ret = xa_err(xa_store(&ib->groups, id, g, GFP_KERNEL));
	if (ret)
		goto out;
	ib->num_groups++;
	g = NULL;
out:
	mutex_unlock(&ib->groups_lock);
	kfree(g);
	ibdev_dbg(&ib->ibdev, "grant group %u (uid %d gid %d, %u s): %d\n", id,
		  uid_valid(uid) ? (int)from_kuid(&init_user_ns, uid) : -1,
		  gid_valid(gid) ? (int)from_kgid(&init_user_ns, gid) : -1,
		  lifetime, ret);
	return ret;
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_REVOKE_GROUP)(struct uverbs_attr_bundle *attrs)
{
	struct rhinet_group *g;
	struct rhinet_ib *ib;
	u32 members = 0;
	u16 id;
	int ret;

	ib = rhinet_group_admin_dev(attrs);
	if (IS_ERR(ib))
		return PTR_ERR(ib);
	ret = uverbs_copy_from(&id, attrs, RHINET_IB_ATTR_REVOKE_GROUP_ID);
	if (ret)
		return ret;
	mutex_lock(&ib->groups_lock);
	g = xa_load(&ib->groups, id);
	if (!g || g->revoked) {
		ret = -ENOENT;
	} else {
		/* Its members keep the group until they leave. */
		g->revoked = true;
		members = g->members;
		if (!members)
			rhinet_group_drop_locked(ib, id, g);
	}
	mutex_unlock(&ib->groups_lock);
	ibdev_dbg(&ib->ibdev, "revoke group %u (%u members): %d\n", id,
		  members, ret);
	if (ret)
		return ret;
	ret = uverbs_copy_to(attrs, RHINET_IB_ATTR_REVOKE_GROUP_MEMBERS,
			     &members, sizeof(members));
	return ret == -ENOENT ? 0 : ret; /* no MEMBERS attribute */
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_QUERY_GROUPS)(struct uverbs_attr_bundle *attrs)
{
	struct user_namespace *ns = current_user_ns();
	struct rhinet_group_grant *list, *e;
	struct rhinet_group *g;
	struct rhinet_ib *ib;
	time64_t now;
	unsigned long id;
	u32 count = 0;
	int ret;

	ib = rhinet_group_admin_dev(attrs);
	if (IS_ERR(ib))
		return PTR_ERR(ib);
	list = kvcalloc(RHINET_MAX_NODE_GROUPS, sizeof(*list), GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	mutex_lock(&ib->groups_lock);
	now = ktime_get_boottime_seconds();
	xa_for_each(&ib->groups, id, g) {
		if (WARN_ON(count == RHINET_MAX_NODE_GROUPS))
			break;
		e = &list[count++];
		e->group = id;
		e->members = g->members;
		e->granted_by = from_kuid_munged(ns, g->granted_by);
		if (uid_valid(g->uid)) {
			e->flags |= RHINET_GROUP_GRANT_UID;
			e->uid = from_kuid_munged(ns, g->uid);
		}
		if (gid_valid(g->gid)) {
			e->flags |= RHINET_GROUP_GRANT_GID;
			e->gid = from_kgid_munged(ns, g->gid);
		}
		if (g->expires) {
			e->flags |= RHINET_GROUP_GRANT_LIFETIME;
			if (now >= g->expires)
				e->flags |= RHINET_GROUP_GRANT_EXPIRED;
			else
				e->expires_in = min_t(time64_t,
						      g->expires - now, U32_MAX);
		}
		if (g->revoked)
			e->flags |= RHINET_GROUP_GRANT_REVOKED;
	}
	mutex_unlock(&ib->groups_lock);
	ret = uverbs_copy_to(attrs, RHINET_IB_ATTR_QUERY_GROUPS_COUNT, &count,
			     sizeof(count));
	/* As many entries as the caller's buffer holds (it may hold none). */
	if (!ret)
		ret = uverbs_copy_to(attrs, RHINET_IB_ATTR_QUERY_GROUPS_ENTRIES,
				     list, count * sizeof(*list));
	if (ret == -ENOENT)
		ret = 0; /* no ENTRIES attribute */
	kvfree(list);
	return ret;
}

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_GRANT_GROUP,
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_GRANT_GROUP_ID,
					       UVERBS_ATTR_TYPE(u16), UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_GRANT_GROUP_TOKEN,
					       UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_GRANT_GROUP_UID,
					       UVERBS_ATTR_TYPE(u32), UA_OPTIONAL),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_GRANT_GROUP_GID,
					       UVERBS_ATTR_TYPE(u32), UA_OPTIONAL),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_GRANT_GROUP_LIFETIME,
					       UVERBS_ATTR_TYPE(u32), UA_OPTIONAL));

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_REVOKE_GROUP,
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_REVOKE_GROUP_ID,
					       UVERBS_ATTR_TYPE(u16), UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_REVOKE_GROUP_MEMBERS,
						UVERBS_ATTR_TYPE(u32), UA_OPTIONAL));

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_QUERY_GROUPS,
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_QUERY_GROUPS_COUNT,
						UVERBS_ATTR_TYPE(u32), UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_QUERY_GROUPS_ENTRIES,
						UVERBS_ATTR_MIN_SIZE(0), UA_OPTIONAL));

DECLARE_UVERBS_GLOBAL_METHODS(RHINET_IB_OBJECT_GROUP,
			      &UVERBS_METHOD(RHINET_IB_METHOD_GRANT_GROUP),
			      &UVERBS_METHOD(RHINET_IB_METHOD_REVOKE_GROUP),
			      &UVERBS_METHOD(RHINET_IB_METHOD_QUERY_GROUPS));

const struct uapi_definition rhinet_groups_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(RHINET_IB_OBJECT_GROUP),
	{},
};

/*
 * After unregistration: every context has left its groups, and the
 * grants go.
 */
void rhinet_groups_fini(struct rhinet_ib *ib)
{
	struct rhinet_group *g;
	unsigned long id;

	mutex_lock(&ib->groups_lock);
	xa_for_each(&ib->groups, id, g)
		rhinet_group_drop_locked(ib, id, g);
	mutex_unlock(&ib->groups_lock);
}
