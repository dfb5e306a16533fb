// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Trigger counters for processes (Documentation/hardware/triggered.md): a
 * uverbs object of the driver's namespace wrapping one counter of the
 * NIC (RHN_ADMIN_CREATE_TRIGGER) in the process's context. The NIC keeps
 * the counter's owner and enforces the context's and the account's share
 * of its table; the driver picks the counter's key, gives the process
 * the handle and the key, and ends the counter with the object, which
 * ib_core destroys when the process closes the device or dies.
 */
#include <linux/random.h>
#include <linux/slab.h>

#include "rhinet_obj.h"

#define UVERBS_MODULE_NAME rhinet_ib
#include <rdma/uverbs_named_ioctl.h>

struct rhinet_trigger {
	struct rhinet_ib *ib;
	u32 ctx; /* the NIC context that owns the counter */
	u32 handle; /* the NIC's */
};

static int rhinet_trigger_cleanup(struct ib_uobject *uobj,
				  enum rdma_remove_reason why,
				  struct uverbs_attr_bundle *attrs)
{
	struct rhinet_trigger *t = uobj->object;
	int ret;

	ret = rhinet_destroy_object(t->ib, t->ctx, RHN_ADMIN_DESTROY_TRIGGER,
				    t->handle);
	/* Only the owner's own destroy may fail (and be retried); when the
	 * context goes, DESTROY_CONTEXT ends whatever counter is left.
	 */
	if (ret && why == RDMA_REMOVE_DESTROY)
		return ret;
	kfree(t);
	return 0;
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_TRIGGER_CREATE)(struct uverbs_attr_bundle *attrs)
{
	struct ib_uobject *uobj =
		uverbs_attr_get_uobject(attrs, RHINET_IB_ATTR_TRIGGER_CREATE_HANDLE);
	struct rhinet_ib *ib = to_rib(uobj->context->device);
	struct rhinet_ucontext *uc = to_ruc(uobj->context);
	struct rhn_admin_cmd cmd = {};
	struct rhinet_trigger *t;
	u64 value = 0;
	u32 key;
	int ret;

	if (!(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_TRIGGER))
		return -EOPNOTSUPP;
	ret = uverbs_copy_from(&value, attrs,
			       RHINET_IB_ATTR_TRIGGER_CREATE_VALUE);
	if (ret && ret != -ENOENT)
		return ret;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->ib = ib;
	t->ctx = uc->ctx;
	/* Guessing it must not be the way to reach a counter from afar. */
	key = get_random_u32();
	cmd.hdr.opcode = RHN_ADMIN_CREATE_TRIGGER;
	cmd.u.create_trigger.value = cpu_to_le64(value);
	cmd.u.create_trigger.key = cpu_to_le32(key);
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &t->handle);
	if (ret) {
		ibdev_dbg(&ib->ibdev, "trigger counter of context %u: %d\n",
			  uc->ctx, ret);
		goto err_free;
	}
	ret = uverbs_copy_to(attrs, RHINET_IB_ATTR_TRIGGER_CREATE_NIC_HANDLE,
			     &t->handle, sizeof(t->handle));
	if (!ret)
		ret = uverbs_copy_to(attrs, RHINET_IB_ATTR_TRIGGER_CREATE_KEY,
				     &key, sizeof(key));
	if (ret)
		goto err_destroy;
	/* The object is the process's from here; ib_core commits it. */
	uobj->object = t;
	return 0;

err_destroy:
	rhinet_destroy_object(ib, uc->ctx, RHN_ADMIN_DESTROY_TRIGGER,
			      t->handle);
err_free:
	kfree(t);
	return ret;
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_TRIGGER_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct rhinet_trigger *t =
		uverbs_attr_get_obj(attrs, RHINET_IB_ATTR_TRIGGER_QUERY_HANDLE);
	struct rhn_admin_cmd cmd = {};
	__le64 hw;
	u64 value;
	int ret;

	cmd.hdr.opcode = RHN_ADMIN_QUERY_TRIGGER;
	cmd.hdr.context = cpu_to_le32(t->ctx);
	cmd.u.query.handle = cpu_to_le32(t->handle);
	ret = rhinet_admin_query(t->ib->rdev, &cmd, &hw, sizeof(hw));
	if (ret)
		return ret;
	value = le64_to_cpu(hw);
	return uverbs_copy_to(attrs, RHINET_IB_ATTR_TRIGGER_QUERY_VALUE, &value,
			      sizeof(value));
}

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_TRIGGER_CREATE,
			    UVERBS_ATTR_IDR(RHINET_IB_ATTR_TRIGGER_CREATE_HANDLE,
					    RHINET_IB_OBJECT_TRIGGER,
					    UVERBS_ACCESS_NEW, UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_TRIGGER_CREATE_VALUE,
					       UVERBS_ATTR_TYPE(u64), UA_OPTIONAL),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_TRIGGER_CREATE_NIC_HANDLE,
						UVERBS_ATTR_TYPE(u32), UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_TRIGGER_CREATE_KEY,
						UVERBS_ATTR_TYPE(u32), UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD_DESTROY(RHINET_IB_METHOD_TRIGGER_DESTROY,
				    UVERBS_ATTR_IDR(RHINET_IB_ATTR_TRIGGER_DESTROY_HANDLE,
						    RHINET_IB_OBJECT_TRIGGER,
						    UVERBS_ACCESS_DESTROY,
						    UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_TRIGGER_QUERY,
			    UVERBS_ATTR_IDR(RHINET_IB_ATTR_TRIGGER_QUERY_HANDLE,
					    RHINET_IB_OBJECT_TRIGGER,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_TRIGGER_QUERY_VALUE,
						UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

DECLARE_UVERBS_NAMED_OBJECT(RHINET_IB_OBJECT_TRIGGER,
			    UVERBS_TYPE_ALLOC_IDR(rhinet_trigger_cleanup),
			    &UVERBS_METHOD(RHINET_IB_METHOD_TRIGGER_CREATE),
			    &UVERBS_METHOD(RHINET_IB_METHOD_TRIGGER_DESTROY),
			    &UVERBS_METHOD(RHINET_IB_METHOD_TRIGGER_QUERY));

const struct uapi_definition rhinet_trigger_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(RHINET_IB_OBJECT_TRIGGER),
	{},
};
