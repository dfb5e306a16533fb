// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What every object of the RDMA device uses: a driver request's or
 * answer's user data, an admin command in a process's NIC context, the
 * destroy of a NIC object, the node an address vector names, the slots a
 * send queue's WQE takes (user and kernel QPs alike).
 */
#include <rdma/ib_verbs.h>

#include "rhinet_obj.h"

/*
 * Copies a driver request of exactly @size bytes. Shorter requests are
 * refused; longer ones only when the extra bytes are zero (a newer provider
 * asking for nothing new).
 */
int rhinet_udata_in(struct ib_udata *udata, void *req, size_t size)
{
	if (!udata) {
		memset(req, 0, size);
		return 0;
	}
	if (udata->inlen < size)
		return -EINVAL;
	if (udata->inlen > size &&
	    !ib_is_udata_cleared(udata, size, udata->inlen - size))
		return -EOPNOTSUPP;
	return size ? ib_copy_from_udata(req, udata, size) : 0;
}

/*
 * A request that grew: one of at least @min_size bytes (an older provider's)
 * is read as far as it goes, the rest of *req zeroed; otherwise as
 * rhinet_udata_in().
 */
int rhinet_udata_in_min(struct ib_udata *udata, void *req, size_t min_size,
			size_t size)
{
	if (udata && udata->inlen >= min_size && udata->inlen < size) {
		memset(req, 0, size);
		return ib_copy_from_udata(req, udata, udata->inlen);
	}
	return rhinet_udata_in(udata, req, size);
}

/*
 * An optional request: none, or all zero whatever its length (an older
 * provider, or one asking for nothing) leaves *req zeroed and returns 0;
 * otherwise as rhinet_udata_in(), returning 1 once it is read.
 */
int rhinet_udata_in_optional(struct ib_udata *udata, void *req, size_t size)
{
	int ret;

	memset(req, 0, size);
	if (!udata || !udata->inlen ||
	    ib_is_udata_cleared(udata, 0, udata->inlen))
		return 0;
	ret = rhinet_udata_in(udata, req, size);
	return ret ? ret : 1;
}

int rhinet_udata_out(struct ib_udata *udata, void *resp, size_t size)
{
	if (!udata)
		return 0;
	if (udata->outlen < size)
		return -EINVAL;
	return ib_copy_to_udata(udata, resp, size);
}

int rhinet_ctx_exec(struct rhinet_ib *ib, u32 ctx, struct rhn_admin_cmd *cmd,
		    u32 *result)
{
	cmd->hdr.context = cpu_to_le32(ctx);
	return rhinet_admin_exec(ib->rdev, cmd, result);
}

/*
 * Destroys a NIC object; failing here is a driver or NIC fault. On a dead
 * device (reset, touching no memory) it is done: the object went with the
 * NIC's state, and the caller frees what the object used.
 */
int rhinet_destroy_object(struct rhinet_ib *ib, u32 ctx, u8 opcode,
			  u32 handle)
{
	struct rhn_admin_cmd cmd = {};
	int ret;

	cmd.hdr.opcode = opcode;
	cmd.u.handle.handle = cpu_to_le32(handle);
	ret = rhinet_ctx_exec(ib, ctx, &cmd, NULL);
	if (ret && rhinet_dev_quiesced(ib->rdev))
		return 0;
	if (ret)
		ibdev_warn_ratelimited(&ib->ibdev,
				       "destroy 0x%02x of %u in context %u: %d\n",
				       opcode, handle, ctx, ret);
	return ret;
}

/*
 * The node an address vector names: its destination MAC encodes it. A
 * multicast destination GID names the switch group its hash selects
 * (rhn_mgid_group), which every node computes alike; only UD address
 * handles (!unicast) may name one.
 */
int rhinet_node_of_ah_attr(struct rhinet_ib *ib, const struct rdma_ah_attr *ah,
			   bool unicast)
{
	const struct ib_global_route *grh;
	int node;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(ah) != 1)
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	if (rhn_gid_is_mcast(grh->dgid.raw)) {
		if (unicast || !(rhinet_read32(ib->rdev, RHN_REG_CAPS) &
				 RHN_CAP_UD_MCAST))
			return -EINVAL;
		return rhn_mgid_group(grh->dgid.raw);
	}
	node = rhinet_mac_to_node(ah->roce.dmac);
	if (node < 0 || (unicast && node == RHN_NODE_BROADCAST)) {
		ibdev_dbg(&ib->ibdev, "no fabric node has MAC %pM\n",
			  ah->roce.dmac);
		return -EINVAL;
	}
	return node;
}

/* SQ slots one WQE of these capabilities takes; UD WQEs end with a GRH. */
u32 rhinet_wqe_slots(const struct ib_qp_cap *cap, bool ud)
{
	return rhn_wqe_slots(cap->max_send_sge, cap->max_inline_data, ud);
}
