// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The card's firmware, and the devlink instance that shows and changes it
 * (Documentation/hardware/firmware-image.md, Documentation/driver/README.md
 * "Firmware").
 *
 * The card's shell, not its core, owns firmware images and answers
 * BOARD_ID, FW_STATE, SERIAL, FW_RUNNING and FW_STORED even while the
 * core is down. At probe the driver asks for rhinet/<board>.bin, checks
 * its header (the card checks it again, payload included), hands it over
 * in chunks through the admin queue, commits it to boot at the next reset
 * and resets the NIC. `devlink dev flash` does the same with STORE as
 * well; `devlink dev reload action fw_activate` rebinds the driver, whose
 * reset boots the committed image. The "fw" health reporter takes a
 * crashed core: its recovery rebinds too, and the shell boots flash.
 */
#include <linux/crc32.h>
#include <linux/dma-mapping.h>
#include <linux/firmware.h>
#include <linux/iopoll.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/module.h>
#include <linux/xarray.h>
#include <net/devlink.h>

#include "rhinet_hw.h"

static bool load_firmware = true;
module_param(load_firmware, bool, 0644);
MODULE_PARM_DESC(load_firmware,
		 "load rhinet/<board>.bin into the card at probe (default on)");

/*
 * A soft core boots its image in a process of its own, and the QEMU
 * device waits up to 30 s for a core's first word before it calls the
 * core crashed: wait longer than that.
 */
#define RHINET_FW_BOOT_TIMEOUT_US (60 * USEC_PER_SEC)

static const char *const rhinet_board_names[] = { RHN_BOARD_NAME_LIST };

/* The shell's verdicts (enum rhn_fw_verdict), as dmesg names them. */
static const char *const rhinet_fw_verdicts[] = {
	[RHN_FW_OK] = "no verdict",
	[RHN_FW_SHORT] = "SHORT (fewer bytes than announced)",
	[RHN_FW_BAD_MAGIC] = "BAD_MAGIC (not a RHiNET image)",
	[RHN_FW_BAD_HEADER] = "BAD_HEADER (header version, size, flags or CRC)",
	[RHN_FW_WRONG_CONTRACT] = "WRONG_CONTRACT (a contract the card lacks)",
	[RHN_FW_WRONG_BOARD] = "WRONG_BOARD (built for another board)",
	[RHN_FW_TOO_LARGE] = "TOO_LARGE (more than the card holds)",
	[RHN_FW_BAD_IMAGE] = "BAD_IMAGE (the payload's CRC differs)",
	[RHN_FW_NO_STAGING] = "NO_STAGING (the card takes no image)",
};

static const char *const rhinet_fw_states[] = { RHN_FW_STATE_STATE_NAMES };

/*
 * Images that crashed on a card (by its PCI name's hash: domain, bus,
 * slot and function) are not loaded into it again by a later probe until
 * the module is reloaded: the rebind that recovers a crash would load it
 * again otherwise.
 */
static DEFINE_XARRAY(rhinet_fw_crashed);

static unsigned long rhinet_fw_key(struct pci_dev *pdev)
{
	return (unsigned long)pci_domain_nr(pdev->bus) << 16 | pci_dev_id(pdev);
}

struct rhinet_fw_version {
	char s[16];
};

static struct rhinet_fw_version rhinet_fw_version(u32 v)
{
	struct rhinet_fw_version out;

	snprintf(out.s, sizeof(out.s), "%u.%u.%u", v >> 16, (v >> 8) & 0xff,
		 v & 0xff);
	return out;
}

static u32 rhinet_fw_state(struct rhinet_dev *rdev)
{
	return rhinet_read32(rdev, RHN_REG_FW_STATE);
}

static const char *rhinet_fw_state_name(u32 state)
{
	u32 s = (state & RHN_FW_STATE_STATE_MASK) >> RHN_FW_STATE_STATE_SHIFT;

	if (state == U32_MAX)
		return "unknown (the NIC reads as all ones)";
	return s < ARRAY_SIZE(rhinet_fw_states) ? rhinet_fw_states[s] :
						  "undefined";
}

/* The board's name as firmware files are named, or NULL. */
static const char *rhinet_fw_board_name(u32 board)
{
	if (board < ARRAY_SIZE(rhinet_board_names) && *rhinet_board_names[board])
		return rhinet_board_names[board];
	return NULL;
}

static u32 rhinet_crc32c(const void *data, size_t len)
{
	return ~__crc32c_le(~0u, data, len);
}

/*
 * The driver's own look at an image before the card gets it: a file that
 * is no image, or speaks a contract the driver does not, is refused here
 * with a message naming it; the card checks the rest (board, payload).
 */
static int rhinet_fw_check(struct rhinet_dev *rdev, const struct firmware *fw,
			   const char *what, struct netlink_ext_ack *extack)
{
	const struct rhn_fw_header *h = (const void *)fw->data;
	struct device *dev = &rdev->pdev->dev;
	u32 size, version;

	if (fw->size < sizeof(*h) || le32_to_cpu(h->magic) != RHN_FW_MAGIC) {
		dev_err(dev, "%s: not a RHiNET firmware image\n", what);
		NL_SET_ERR_MSG_MOD(extack, "not a RHiNET firmware image");
		return -EINVAL;
	}
	if (le16_to_cpu(h->header_version) != RHN_FW_HEADER_VERSION ||
	    le16_to_cpu(h->header_size) != RHN_FW_HEADER_SIZE ||
	    rhinet_crc32c(h, offsetof(struct rhn_fw_header, header_crc32c)) !=
		    le32_to_cpu(h->header_crc32c)) {
		dev_err(dev, "%s: firmware header: version, size or CRC wrong\n",
			what);
		NL_SET_ERR_MSG_MOD(extack, "firmware header: version, size or CRC wrong");
		return -EINVAL;
	}
	size = le32_to_cpu(h->image_size);
	if (fw->size - sizeof(*h) != size || fw->size > U32_MAX) {
		dev_err(dev, "%s: %zu bytes, its header announces %zu\n", what,
			fw->size, sizeof(*h) + size);
		NL_SET_ERR_MSG_MOD(extack, "image size differs from its header's");
		return -EINVAL;
	}
	version = le32_to_cpu(h->fw_version);
	if (le16_to_cpu(h->contract_major) != RHN_VERSION_MAJOR) {
		dev_err(dev,
			"%s: firmware %s speaks contract %u.%u, the driver %u.x: refused\n",
			what, rhinet_fw_version(version).s,
			le16_to_cpu(h->contract_major),
			le16_to_cpu(h->contract_minor), RHN_VERSION_MAJOR);
		NL_SET_ERR_MSG_MOD(extack, "firmware speaks another contract major version");
		return -EINVAL;
	}
	return 0;
}

static void rhinet_fw_refused(struct rhinet_dev *rdev, const char *what,
			      const char *step, int err, u32 detail,
			      struct netlink_ext_ack *extack)
{
	const char *verdict = "no verdict";

	if (detail < ARRAY_SIZE(rhinet_fw_verdicts))
		verdict = rhinet_fw_verdicts[detail];
	dev_err(&rdev->pdev->dev, "%s: the card refused the firmware %s: %pe, verdict %s\n",
		what, step, ERR_PTR(err), verdict);
	NL_SET_ERR_MSG_MOD(extack, "the card refused the image; the kernel log names its verdict");
}

/*
 * Hands @fw to the card's shell in chunks and commits it with @flags
 * (enum rhn_fw_commit_flags). With @devlink, devlink tells userspace how
 * far it got.
 */
static int rhinet_fw_hand_over(struct rhinet_dev *rdev,
			       const struct firmware *fw, const char *what,
			       u32 flags, struct devlink *devlink,
			       struct netlink_ext_ack *extack)
{
	struct device *dev = &rdev->pdev->dev;
	struct rhn_admin_cmd cmd;
	dma_addr_t dma;
	u32 len, detail = 0;
	size_t off;
	void *buf;
	int ret = 0;

	buf = dma_alloc_coherent(dev, RHN_FW_CHUNK_MAX, &dma, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (off = 0; off < fw->size; off += len) {
		len = min_t(size_t, fw->size - off, RHN_FW_CHUNK_MAX);
		memcpy(buf, fw->data + off, len);
		memset(&cmd, 0, sizeof(cmd));
		cmd.hdr.opcode = RHN_ADMIN_FW_DOWNLOAD;
		cmd.u.fw_download.addr = cpu_to_le64(dma);
		cmd.u.fw_download.offset = cpu_to_le32(off);
		cmd.u.fw_download.length = cpu_to_le32(len);
		ret = rhinet_admin_exec_detail(rdev, &cmd, NULL, &detail);
		if (ret) {
			rhinet_fw_refused(rdev, what, "download", ret, detail,
					  extack);
			goto out;
		}
		if (devlink)
			devlink_flash_update_status_notify(devlink, "Downloading",
							   NULL, off + len,
							   fw->size);
	}
	if (devlink)
		devlink_flash_update_status_notify(devlink, "Checking and committing",
						   NULL, 0, 0);
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RHN_ADMIN_FW_COMMIT;
	cmd.u.fw_commit.length = cpu_to_le32(fw->size);
	cmd.u.fw_commit.flags = cpu_to_le32(flags);
	detail = 0;
	ret = rhinet_admin_exec_detail(rdev, &cmd, NULL, &detail);
	if (ret)
		rhinet_fw_refused(rdev, what, "commit", ret, detail, extack);
out:
	dma_free_coherent(dev, RHN_FW_CHUNK_MAX, buf, dma);
	return ret;
}

/* Resets the NIC and waits until its core runs what the shell chose. */
static int rhinet_fw_reboot(struct rhinet_dev *rdev)
{
	u32 state;
	int ret;

	ret = rhinet_reset_nic(rdev);
	if (ret)
		return ret;
	ret = readx_poll_timeout(rhinet_fw_state, rdev, state,
				 state == U32_MAX ||
				 (state & RHN_FW_STATE_STATE_MASK) !=
					 RHN_FW_STATE_BOOTING,
				 1000, RHINET_FW_BOOT_TIMEOUT_US);
	if (ret)
		return ret;
	return rhinet_fw_crashed_now(rdev) || state == U32_MAX ? -EIO : 0;
}

static void rhinet_fw_remember_crash(struct rhinet_dev *rdev, u32 version)
{
	xa_store(&rhinet_fw_crashed, rhinet_fw_key(rdev->pdev),
		 xa_mk_value(version), GFP_KERNEL);
}

static bool rhinet_fw_crashed_before(struct rhinet_dev *rdev, u32 version)
{
	void *v = xa_load(&rhinet_fw_crashed, rhinet_fw_key(rdev->pdev));

	return v && xa_to_value(v) == version;
}

/*
 * Boots the image just committed with ACTIVATE; one that does not start
 * is left behind for the flash's, which the next reset boots.
 */
static int rhinet_fw_activate(struct rhinet_dev *rdev, const char *what,
			      u32 version)
{
	struct device *dev = &rdev->pdev->dev;
	int ret;

	ret = rhinet_fw_reboot(rdev);
	if (!ret)
		dev_info(dev, "%s: firmware %s loaded\n", what,
			 rhinet_fw_version(version).s);
	if (ret == -EIO && rhinet_fw_crashed_now(rdev)) {
		dev_err(dev, "%s: firmware %s did not start; booting the card's flash\n",
			what, rhinet_fw_version(version).s);
		rhinet_fw_remember_crash(rdev, version);
		rdev->fw_boot_failed = true;
		ret = rhinet_fw_reboot(rdev);
	}
	if (ret) {
		dev_err(dev, "%s: NIC core did not come up after the reset (FW_STATE 0x%x)\n",
			what, rhinet_fw_state(rdev));
		return ret;
	}
	return rhinet_admin_start(rdev);
}

/* Why the file at hand is not loaded, or NULL: load it. */
static const char *rhinet_fw_skip(struct rhinet_dev *rdev, u32 version)
{
	u32 state = rhinet_fw_state(rdev);
	u32 running = rhinet_read32(rdev, RHN_REG_FW_RUNNING);

	if (version == running)
		return "that version runs already";
	if (rhinet_fw_crashed_before(rdev, version))
		return "that version crashed on this card";
	/* An operator's `devlink dev flash` wins over the file. */
	if ((state & RHN_FW_STATE_HOST_LOADED) &&
	    running == rhinet_read32(rdev, RHN_REG_FW_STORED))
		return "the card runs the image devlink flashed";
	return NULL;
}

/* The firmware identity, once per probe. */
static void rhinet_fw_show(struct rhinet_dev *rdev)
{
	u32 board = rhinet_read32(rdev, RHN_REG_BOARD_ID);
	u32 state = rhinet_fw_state(rdev);
	const char *name = rhinet_fw_board_name(board);

	if (!board || state == U32_MAX) {
		dev_info(&rdev->pdev->dev, "firmware: no board named (BOARD_ID 0x%x)\n",
			 board);
		return;
	}
	dev_info(&rdev->pdev->dev,
		 "firmware: board %s (%u), %s %s%s, flash %s, serial %016llx\n",
		 name ?: "unnamed", board, rhinet_fw_state_name(state),
		 rhinet_fw_version(rhinet_read32(rdev, RHN_REG_FW_RUNNING)).s,
		 state & RHN_FW_STATE_HOST_LOADED ? " HOST_LOADED" : "",
		 rhinet_fw_version(rhinet_read32(rdev, RHN_REG_FW_STORED)).s,
		 readq(rdev->regs + RHN_REG_SERIAL));
}

/*
 * Probe, once the admin queue runs: loads rhinet/<board>.bin if there is
 * one the card should run. A missing or refused file is not an error
 * (the card runs what it has); a NIC that does not come back from the
 * reset is.
 */
int rhinet_fw_probe(struct rhinet_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	const struct firmware *fw;
	const char *name, *skip;
	char file[48];
	u32 version;
	int ret = 0;

	name = rhinet_fw_board_name(rhinet_read32(rdev, RHN_REG_BOARD_ID));
	if (!load_firmware || !name)
		goto show;
	snprintf(file, sizeof(file), "rhinet/%s.bin", name);
	if (request_firmware_direct(&fw, file, dev)) {
		dev_info(dev, "%s: no such file, the card runs its own firmware\n",
			 file);
		goto show;
	}
	if (rhinet_fw_check(rdev, fw, file, NULL))
		goto release;
	version = le32_to_cpu(((const struct rhn_fw_header *)fw->data)->fw_version);
	skip = rhinet_fw_skip(rdev, version);
	if (skip) {
		dev_info(dev, "%s: firmware %s not loaded: %s\n", file,
			 rhinet_fw_version(version).s, skip);
		goto release;
	}
	if (rhinet_fw_hand_over(rdev, fw, file, RHN_FW_COMMIT_ACTIVATE, NULL,
				NULL))
		goto release;
	ret = rhinet_fw_activate(rdev, file, version);
release:
	release_firmware(fw);
show:
	rhinet_fw_show(rdev);
	return ret;
}

/* ---- rebinding the driver, from a work item ----------------------------- */

/*
 * What a reset, a reload or a firmware crash ends in: the driver binds
 * again from scratch. In a work item of the module's own queue, as the
 * callers hold locks a rebind takes (the device's, devlink's); module
 * exit drains the queue.
 */
static struct workqueue_struct *rhinet_rebind_wq;

struct rhinet_rebind {
	struct work_struct work;
	struct pci_dev *pdev;
};

static void rhinet_rebind_work(struct work_struct *work)
{
	struct rhinet_rebind *rb =
		container_of(work, struct rhinet_rebind, work);
	int ret;

	ret = device_reprobe(&rb->pdev->dev);
	if (ret)
		dev_err(&rb->pdev->dev, "binding again: %d\n", ret);
	pci_dev_put(rb->pdev);
	kfree(rb);
}

int rhinet_rebind_later(struct pci_dev *pdev)
{
	struct rhinet_rebind *rb;

	rb = kzalloc(sizeof(*rb), GFP_KERNEL);
	if (!rb)
		return -ENOMEM; /* left as it is: bind the driver by hand */
	INIT_WORK(&rb->work, rhinet_rebind_work);
	rb->pdev = pci_dev_get(pdev);
	queue_work(rhinet_rebind_wq, &rb->work);
	return 0;
}

int rhinet_fw_module_init(void)
{
	rhinet_rebind_wq = alloc_workqueue("rhinet_rebind", 0, 0);
	return rhinet_rebind_wq ? 0 : -ENOMEM;
}

void rhinet_fw_module_exit(void)
{
	destroy_workqueue(rhinet_rebind_wq); /* after any rebind left */
	xa_destroy(&rhinet_fw_crashed);
}

/* ---- the devlink instance ------------------------------------------------ */

struct rhinet_devlink_priv {
	struct rhinet_dev *rdev;
};

static struct rhinet_dev *rhinet_devlink_rdev(struct devlink *devlink)
{
	struct rhinet_devlink_priv *priv = devlink_priv(devlink);

	return priv->rdev;
}

/* The running and stored "fw" versions, if the card has a shell. */
static int rhinet_fw_info(struct rhinet_dev *rdev, struct devlink_info_req *req)
{
	u32 board = rhinet_read32(rdev, RHN_REG_BOARD_ID);
	u32 state = rhinet_fw_state(rdev);
	const char *name = rhinet_fw_board_name(board);
	char buf[16];
	int err;

	/* No board: a card without a shell, or one gone from the bus. */
	if (state == U32_MAX || !board)
		return 0;
	if (!name) {
		snprintf(buf, sizeof(buf), "%u", board);
		name = buf;
	}
	err = devlink_info_version_fixed_put(req,
					     DEVLINK_INFO_VERSION_GENERIC_BOARD_ID,
					     name);
	err = err ?: devlink_info_version_running_put(req,
			DEVLINK_INFO_VERSION_GENERIC_FW,
			rhinet_fw_version(rhinet_read32(rdev, RHN_REG_FW_RUNNING)).s);
	err = err ?: devlink_info_version_running_put(req, "fw.state",
			rhinet_fw_state_name(state));
	err = err ?: devlink_info_version_running_put(req, "fw.origin",
			state & RHN_FW_STATE_HOST_LOADED ? "HOST_LOADED" : "flash");
	return err ?: devlink_info_version_stored_put(req,
			DEVLINK_INFO_VERSION_GENERIC_FW,
			rhinet_fw_version(rhinet_read32(rdev, RHN_REG_FW_STORED)).s);
}

static int rhinet_devlink_info_get(struct devlink *devlink,
				   struct devlink_info_req *req,
				   struct netlink_ext_ack *extack)
{
	struct rhinet_dev *rdev = rhinet_devlink_rdev(devlink);
	u32 version = rhinet_read32(rdev, RHN_REG_VERSION);
	u64 serial = readq(rdev->regs + RHN_REG_SERIAL);
	char buf[40];
	int err;

	err = devlink_info_driver_name_put(req, DRV_NAME);
	if (err)
		return err;
	/* The shell's serial; a card without one is known by its MAC. */
	if (serial && serial != U64_MAX)
		snprintf(buf, sizeof(buf), "%016llx", serial);
	else
		snprintf(buf, sizeof(buf), "%6phN", rdev->mac);
	err = devlink_info_serial_number_put(req, buf);
	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%u", rdev->pdev->revision);
	err = devlink_info_version_fixed_put(req,
					     DEVLINK_INFO_VERSION_GENERIC_BOARD_REV,
					     buf);
	if (err)
		return err;
	if (version == U32_MAX)
		strscpy(buf, "unknown (the NIC reads as all ones)", sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "%u.%u", version >> 16,
			 version & 0xffff);
	err = devlink_info_version_running_put(req, "fw.contract", buf);
	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%u.x", RHN_VERSION_MAJOR);
	err = devlink_info_version_fixed_put(req, "drv.contract", buf);
	return err ?: rhinet_fw_info(rdev, req);
}

/* `devlink dev flash`: into flash, and booted from the next reset. */
static int rhinet_devlink_flash_update(struct devlink *devlink,
				       struct devlink_flash_update_params *params,
				       struct netlink_ext_ack *extack)
{
	struct rhinet_dev *rdev = rhinet_devlink_rdev(devlink);
	const struct rhn_fw_header *h = (const void *)params->fw->data;
	int ret;

	ret = rhinet_fw_check(rdev, params->fw, "devlink flash", extack);
	ret = ret ?: rhinet_fw_hand_over(rdev, params->fw, "devlink flash",
					 RHN_FW_COMMIT_STORE |
					 RHN_FW_COMMIT_ACTIVATE,
					 devlink, extack);
	if (!ret)
		dev_info(&rdev->pdev->dev,
			 "devlink flash: firmware %s stored; it runs from the next reset (reload action fw_activate)\n",
			 rhinet_fw_version(le32_to_cpu(h->fw_version)).s);
	return ret;
}

static int rhinet_devlink_reload_down(struct devlink *devlink,
				      bool netns_change,
				      enum devlink_reload_action action,
				      enum devlink_reload_limit limit,
				      struct netlink_ext_ack *extack)
{
	struct rhinet_dev *rdev = rhinet_devlink_rdev(devlink);

	if (netns_change) {
		NL_SET_ERR_MSG_MOD(extack, "the device stays in its namespace");
		return -EOPNOTSUPP;
	}
	if (!(rhinet_fw_state(rdev) & RHN_FW_STATE_PENDING)) {
		NL_SET_ERR_MSG_MOD(extack, "no firmware waits for activation");
		return -EINVAL;
	}
	return 0;
}

/*
 * The driver's rebind resets the NIC, and the shell boots the image
 * waiting; the RDMA device and the interface go and come back as after
 * a function-level reset. The reply comes before that is done.
 */
static int rhinet_devlink_reload_up(struct devlink *devlink,
				    enum devlink_reload_action action,
				    enum devlink_reload_limit limit,
				    u32 *actions_performed,
				    struct netlink_ext_ack *extack)
{
	struct rhinet_dev *rdev = rhinet_devlink_rdev(devlink);

	*actions_performed = BIT(DEVLINK_RELOAD_ACTION_FW_ACTIVATE);
	dev_info(&rdev->pdev->dev, "devlink reload: activating the firmware waiting, rebinding\n");
	return rhinet_rebind_later(rdev->pdev);
}

static const struct devlink_ops rhinet_devlink_ops = {
	.info_get = rhinet_devlink_info_get,
	.flash_update = rhinet_devlink_flash_update,
	.reload_actions = BIT(DEVLINK_RELOAD_ACTION_FW_ACTIVATE),
	.reload_down = rhinet_devlink_reload_down,
	.reload_up = rhinet_devlink_reload_up,
};

/* ---- the "fw" health reporter ------------------------------------------ */

static int rhinet_fmsg_fw(struct rhinet_dev *rdev, struct devlink_fmsg *fmsg)
{
	u32 state = rhinet_fw_state(rdev);
	int err;

	err = devlink_fmsg_pair_nest_start(fmsg, "firmware");
	err = err ?: devlink_fmsg_obj_nest_start(fmsg);
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "fw_state", state);
	err = err ?: devlink_fmsg_string_pair_put(fmsg, "state",
						  rhinet_fw_state_name(state));
	err = err ?: devlink_fmsg_bool_pair_put(fmsg, "host_loaded",
						state & RHN_FW_STATE_HOST_LOADED);
	err = err ?: devlink_fmsg_bool_pair_put(fmsg, "pending",
						state & RHN_FW_STATE_PENDING);
	err = err ?: devlink_fmsg_string_pair_put(fmsg, "running",
		rhinet_fw_version(rhinet_read32(rdev, RHN_REG_FW_RUNNING)).s);
	err = err ?: devlink_fmsg_string_pair_put(fmsg, "stored",
		rhinet_fw_version(rhinet_read32(rdev, RHN_REG_FW_STORED)).s);
	err = err ?: devlink_fmsg_obj_nest_end(fmsg);
	return err ?: devlink_fmsg_pair_nest_end(fmsg);
}

static int rhinet_fw_diagnose(struct devlink_health_reporter *reporter,
			      struct devlink_fmsg *fmsg,
			      struct netlink_ext_ack *extack)
{
	return rhinet_fmsg_fw(devlink_health_reporter_priv(reporter), fmsg) ?:
	       rhinet_devlink_diagnose(reporter, fmsg, extack);
}

static int rhinet_fw_dump(struct devlink_health_reporter *reporter,
			  struct devlink_fmsg *fmsg, void *priv_ctx,
			  struct netlink_ext_ack *extack)
{
	return rhinet_fmsg_fw(devlink_health_reporter_priv(reporter), fmsg) ?:
	       rhinet_devlink_dump(reporter, fmsg, priv_ctx, extack);
}

/*
 * Runs at the report, before the NIC is reset: a host-loaded image that
 * crashed is not loaded again by the rebind's probe, whose reset boots
 * the card's flash.
 */
static int rhinet_fw_recover(struct devlink_health_reporter *reporter,
			     void *priv_ctx, struct netlink_ext_ack *extack)
{
	struct rhinet_dev *rdev = devlink_health_reporter_priv(reporter);
	u32 state = rhinet_fw_state(rdev);

	/* Probe's own fallback on flash left a running core: done. A
	 * driver being unbound is not bound again.
	 */
	if (!rhinet_fw_crashed_now(rdev) || READ_ONCE(rdev->removing))
		return 0;
	if (state & RHN_FW_STATE_HOST_LOADED)
		rhinet_fw_remember_crash(rdev,
					 rhinet_read32(rdev, RHN_REG_FW_RUNNING));
	dev_err(&rdev->pdev->dev,
		"fw reporter: recovering by a rebind; the card boots its flash\n");
	return rhinet_rebind_later(rdev->pdev);
}

static const struct devlink_health_reporter_ops rhinet_fw_reporter_ops = {
	.name = "fw",
	.diagnose = rhinet_fw_diagnose,
	.dump = rhinet_fw_dump,
	.recover = rhinet_fw_recover,
};

static void rhinet_devlink_free(void *data)
{
	struct rhinet_dev *rdev = data;

	rhinet_devlink_remove_reporter(rdev, RHINET_REPORT_FW);
	rhinet_devlink_remove_reporter(rdev, RHINET_REPORT_ADMIN);
	rhinet_devlink_remove_reporter(rdev, RHINET_REPORT_FATAL);
	devlink_free(rdev->devlink);
}

/* Probe, early: freed with the device's managed resources. */
int rhinet_devlink_init(struct rhinet_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rhinet_devlink_priv *priv;

	rdev->devlink = devlink_alloc(&rhinet_devlink_ops, sizeof(*priv), dev);
	if (!rdev->devlink)
		return -ENOMEM;
	priv = devlink_priv(rdev->devlink);
	priv->rdev = rdev;
	/* devlink offers reload (fw_activate) only when asked to. */
	devlink_set_features(rdev->devlink, DEVLINK_F_RELOAD);
	rhinet_devlink_add_reporters(rdev);
	rhinet_devlink_add_reporter(rdev, RHINET_REPORT_FW,
				    &rhinet_fw_reporter_ops);
	return devm_add_action_or_reset(dev, rhinet_devlink_free, rdev);
}

/* Last in probe and first in remove: userspace sees a whole device. */
void rhinet_devlink_register(struct rhinet_dev *rdev)
{
	devlink_register(rdev->devlink);
	if (rdev->fw_boot_failed)
		rhinet_devlink_report(rdev, RHINET_REPORT_FW,
				      "the firmware probe loaded did not start; the card booted its flash");
}

void rhinet_devlink_unregister(struct rhinet_dev *rdev)
{
	devlink_unregister(rdev->devlink);
}
