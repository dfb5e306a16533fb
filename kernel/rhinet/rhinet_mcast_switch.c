// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Switch groups of simultaneous multicast, whose packets the switch
 * copies to every member (Documentation/driver/README.md, Switch
 * groups): the member list of a group on this node's NIC
 * (RHN_ADMIN_SET_MCAST_GROUP), which only the administrator may set,
 * clear or read. Two driver methods of the uverbs ioctl interface, each
 * checking CAP_NET_ADMIN: a new driver may not add sysfs files to its
 * ib_device (ib_device_ops.device_group), and RDMA netlink has no
 * driver-specific set command. The driver keeps a copy of every list it
 * set, because the NIC has no command to read one.
 */
#include <linux/capability.h>
#include <linux/slab.h>

#include "rhinet_obj.h"

#define UVERBS_MODULE_NAME rhinet_ib
#include <rdma/uverbs_named_ioctl.h>

static_assert(sizeof(struct rhinet_mcast_member) ==
	      sizeof(struct rhn_mcast_dest));
static_assert(RHINET_MCAST_GROUP_FIRST == RHN_NODE_MCAST_FIRST);
static_assert(RHINET_MCAST_GROUP_LAST == (RHN_NODE_MCAST_UD_FIRST - 1));
static_assert(RHINET_MCAST_GROUP_MAX_MEMBERS == RHN_MCAST_SWITCH_MAX_MEMBERS);

/* What the driver last set for one group. */
struct rhinet_mcast_group {
	u16 endpoint_group;
	u16 count;
	struct rhinet_mcast_member members[];
};

static bool rhinet_mcast_group_id_ok(u16 group)
{
	return group >= RHINET_MCAST_GROUP_FIRST &&
	       group <= RHINET_MCAST_GROUP_LAST;
}

/* The device of the caller's context, if the caller is the administrator. */
static struct rhinet_ib *rhinet_mcast_admin_dev(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *uctx;
	struct rhinet_ib *ib;

	/* It reprograms the NIC every process of the node shares. */
	if (!capable(CAP_NET_ADMIN))
		return ERR_PTR(-EPERM);
	uctx = ib_uverbs_get_ucontext(attrs);
	if (IS_ERR(uctx))
		return ERR_CAST(uctx);
	ib = to_rib(uctx->device);
	if (!(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_MCAST_SWITCH))
		return ERR_PTR(-EOPNOTSUPP);
	return ib;
}

/* Refuses what the NIC would refuse, with errnos that say why. */
static int rhinet_mcast_check(struct rhinet_ib *ib,
			      const struct rhinet_mcast_member *m, u32 count)
{
	u32 nodes = le32_to_cpu(ib->rdev->attr.max_peers);
	u32 i, j;

	if (count > RHINET_MCAST_GROUP_MAX_MEMBERS)
		return -E2BIG;
	for (i = 0; i < count; i++) {
		if (m[i].reserved || m[i].node >= nodes ||
		    m[i].qpn > RHN_WIRE_QPN_MASK)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (m[j].node == m[i].node)
				return -EINVAL;
	}
	return 0;
}

/* Sets (@count > 0) or clears the group's list on the NIC, then the copy. */
static int rhinet_mcast_set(struct rhinet_ib *ib, u16 group, u16 endpoint_group,
			    const struct rhinet_mcast_member *m, u32 count)
{
	struct rhinet_mcast_group *copy = NULL, *old;
	struct rhn_mcast_dest *list = NULL;
	struct rhn_admin_cmd cmd = {};
	u32 i;
	int ret;

	if (count) {
		copy = kzalloc(struct_size(copy, members, count), GFP_KERNEL);
		if (!copy)
			return -ENOMEM;
		copy->endpoint_group = endpoint_group;
		copy->count = count;
		memcpy(copy->members, m, flex_array_size(copy, members, count));
		list = kcalloc(count, sizeof(*list), GFP_KERNEL);
		if (!list) {
			kfree(copy);
			return -ENOMEM;
		}
	}
	for (i = 0; i < count; i++) {
		list[i].node = cpu_to_le16(m[i].node);
		list[i].qpn = cpu_to_le32(m[i].qpn);
	}
	cmd.hdr.opcode = RHN_ADMIN_SET_MCAST_GROUP;
	cmd.u.mcast_group.group = cpu_to_le16(group);
	cmd.u.mcast_group.endpoint_group = cpu_to_le16(endpoint_group);
	cmd.u.mcast_group.count = cpu_to_le16(count);

	/* The NIC's table and the copy change together. */
	mutex_lock(&ib->mcast_lock);
	/* A slot now, so that storing the copy cannot fail once the NIC
	 * took the list.
	 */
	ret = copy ? xa_reserve(&ib->mcast_groups, group, GFP_KERNEL) : 0;
	if (ret)
		goto out;
	ret = rhinet_admin_exec_in(ib->rdev, &cmd, &cmd.u.mcast_group.list_addr,
				   list, count * sizeof(list[0]));
	if (ret) {
		ibdev_dbg(&ib->ibdev, "set mcast group %#x (%u members): %d\n",
			  group, count, ret);
		if (copy)
			xa_release(&ib->mcast_groups, group);
		goto out;
	}
	old = copy ? xa_store(&ib->mcast_groups, group, copy, GFP_KERNEL) :
		     xa_erase(&ib->mcast_groups, group);
	kfree(old);
	copy = NULL;
out:
	mutex_unlock(&ib->mcast_lock);
	kfree(copy);
	kfree(list);
	return ret;
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_SET_MCAST_GROUP)(struct uverbs_attr_bundle *attrs)
{
	const struct rhinet_mcast_member *members = NULL;
	u16 group, endpoint_group = 0;
	struct rhinet_ib *ib;
	int len, ret;

	ib = rhinet_mcast_admin_dev(attrs);
	if (IS_ERR(ib))
		return PTR_ERR(ib);
	ret = uverbs_copy_from(&group, attrs, RHINET_IB_ATTR_SET_MCAST_GROUP_ID);
	if (ret)
		return ret;
	if (!rhinet_mcast_group_id_ok(group))
		return -EINVAL;
	ret = uverbs_copy_from(&endpoint_group, attrs,
			       RHINET_IB_ATTR_SET_MCAST_GROUP_ENDPOINT_GROUP);
	if (ret && ret != -ENOENT)
		return ret;
	len = uverbs_attr_get_len(attrs, RHINET_IB_ATTR_SET_MCAST_GROUP_MEMBERS);
	if (len == -ENOENT)
		len = 0;
	if (len < 0 || len % sizeof(*members))
		return -EINVAL;
	if (len) {
		members = uverbs_attr_get_alloced_ptr(attrs,
						      RHINET_IB_ATTR_SET_MCAST_GROUP_MEMBERS);
		if (IS_ERR(members))
			return PTR_ERR(members);
	}
	ret = rhinet_mcast_check(ib, members, len / sizeof(*members));
	if (ret)
		return ret;
	return rhinet_mcast_set(ib, group, endpoint_group, members,
				len / sizeof(*members));
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_QUERY_MCAST_GROUP)(struct uverbs_attr_bundle *attrs)
{
	struct rhinet_mcast_group *g;
	struct rhinet_ib *ib;
	u16 group, endpoint_group;
	u32 count;
	int ret;

	ib = rhinet_mcast_admin_dev(attrs);
	if (IS_ERR(ib))
		return PTR_ERR(ib);
	ret = uverbs_copy_from(&group, attrs,
			       RHINET_IB_ATTR_QUERY_MCAST_GROUP_ID);
	if (ret)
		return ret;
	if (!rhinet_mcast_group_id_ok(group))
		return -EINVAL;
	mutex_lock(&ib->mcast_lock);
	g = xa_load(&ib->mcast_groups, group);
	if (!g) {
		ret = -ENOENT;
		goto out;
	}
	endpoint_group = g->endpoint_group;
	count = g->count;
	ret = uverbs_copy_to(attrs,
			     RHINET_IB_ATTR_QUERY_MCAST_GROUP_ENDPOINT_GROUP,
			     &endpoint_group, sizeof(endpoint_group));
	if (!ret)
		ret = uverbs_copy_to(attrs, RHINET_IB_ATTR_QUERY_MCAST_GROUP_COUNT,
				     &count, sizeof(count));
	/* As many members as the caller's buffer holds (it may hold none). */
	if (!ret)
		ret = uverbs_copy_to(attrs,
				     RHINET_IB_ATTR_QUERY_MCAST_GROUP_MEMBERS,
				     g->members,
				     flex_array_size(g, members, count));
	if (ret == -ENOENT)
		ret = 0; /* no MEMBERS attribute */
out:
	mutex_unlock(&ib->mcast_lock);
	return ret;
}

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_SET_MCAST_GROUP,
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_SET_MCAST_GROUP_ID,
					       UVERBS_ATTR_TYPE(u16), UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_SET_MCAST_GROUP_ENDPOINT_GROUP,
					       UVERBS_ATTR_TYPE(u16), UA_OPTIONAL),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_SET_MCAST_GROUP_MEMBERS,
					       UVERBS_ATTR_MIN_SIZE(0), UA_OPTIONAL,
					       UA_ALLOC_AND_COPY));

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_QUERY_MCAST_GROUP,
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_QUERY_MCAST_GROUP_ID,
					       UVERBS_ATTR_TYPE(u16), UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_QUERY_MCAST_GROUP_ENDPOINT_GROUP,
						UVERBS_ATTR_TYPE(u16), UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_QUERY_MCAST_GROUP_COUNT,
						UVERBS_ATTR_TYPE(u32), UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_QUERY_MCAST_GROUP_MEMBERS,
						UVERBS_ATTR_MIN_SIZE(0), UA_OPTIONAL));

DECLARE_UVERBS_GLOBAL_METHODS(RHINET_IB_OBJECT_MCAST_SWITCH,
			      &UVERBS_METHOD(RHINET_IB_METHOD_SET_MCAST_GROUP),
			      &UVERBS_METHOD(RHINET_IB_METHOD_QUERY_MCAST_GROUP));

const struct uapi_definition rhinet_mcast_switch_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(RHINET_IB_OBJECT_MCAST_SWITCH),
	{},
};

void rhinet_mcast_switch_init(struct rhinet_ib *ib)
{
	mutex_init(&ib->mcast_lock);
	xa_init(&ib->mcast_groups);
}

/*
 * After unregistration (no method runs any more): the copies go. The
 * NIC's table goes with the reset that follows.
 */
void rhinet_mcast_switch_fini(struct rhinet_ib *ib)
{
	struct rhinet_mcast_group *g;
	unsigned long group;

	xa_for_each(&ib->mcast_groups, group, g)
		kfree(g);
	xa_destroy(&ib->mcast_groups);
	mutex_destroy(&ib->mcast_lock);
}
