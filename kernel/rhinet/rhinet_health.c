// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Device health. A NIC that stops completing admin commands, sets
 * STATUS.FATAL or reads as all ones (gone from the bus) is stopped for
 * good: reset so that it no longer touches host memory (or, when it does
 * not obey the reset either, cut off from the bus), and every consumer is
 * told (IB_EVENT_DEVICE_FATAL, port and carrier down). From then on admin
 * commands fail at once and destroys finish as software cleanup, so users
 * can release what they hold. Rebinding the driver starts afresh.
 */
#include <linux/iopoll.h>
#include <linux/workqueue.h>

#include "rhinet_hw.h"

#define RHINET_RESET_TIMEOUT_US (2 * USEC_PER_SEC)
/* STATUS is read this often; one MMIO read, also while idle. */
#define RHINET_HEALTH_PERIOD_MS 1000

/* Drops every NIC object and stops all DMA. */
int rhinet_reset_nic(struct rhinet_dev *rdev)
{
	u32 control;
	int ret;

	rhinet_write32(rdev, RHN_REG_CONTROL, RHN_CONTROL_RESET);
	ret = readl_poll_timeout(rdev->regs + RHN_REG_CONTROL, control,
				 !(control & RHN_CONTROL_RESET), 100,
				 RHINET_RESET_TIMEOUT_US);
	if (ret)
		dev_err(&rdev->pdev->dev, "NIC did not leave reset\n");
	return ret;
}

/*
 * Stops a NIC that can no longer be trusted; returns once it touches no
 * host memory. Idempotent; may sleep (up to the reset timeout).
 */
void rhinet_dev_fail(struct rhinet_dev *rdev, enum rhinet_report kind,
		     const char *why)
{
	bool tell;

	mutex_lock(&rdev->health_lock);
	if (rdev->quiesced) {
		mutex_unlock(&rdev->health_lock);
		return;
	}
	/* Admin commands fail from here on, also those waiting now. */
	WRITE_ONCE(rdev->dead, true);
	/* A core that crashed is the firmware's failure, whatever the
	 * driver saw first (a timeout, STATUS.FATAL): fw reports and
	 * recovers it.
	 */
	if (rhinet_fw_crashed_now(rdev))
		kind = RHINET_REPORT_FW;
	rdev->failure = why;
	dev_err(&rdev->pdev->dev,
		"%s: NIC stopped, device fatal; rebind the driver to recover\n",
		why);
	/* Its dump shows the NIC as it failed, before the reset. */
	rhinet_devlink_report(rdev, kind, why);
	if (rhinet_reset_nic(rdev)) {
		dev_err(&rdev->pdev->dev,
			"NIC ignores reset: bus mastering turned off\n");
		pci_clear_master(rdev->pdev);
	}
	rdev->quiesced = true;
	tell = !rdev->removing;
	mutex_unlock(&rdev->health_lock);
	if (tell)
		schedule_work(&rdev->fatal_work);
}

/*
 * After an admin command failed: true if that is because the device is
 * dead, once the NIC touches no host memory any more, so the caller may
 * finish a destroy as software cleanup.
 */
bool rhinet_dev_quiesced(struct rhinet_dev *rdev)
{
	bool quiesced;

	if (!rhinet_dev_dead(rdev))
		return false;
	mutex_lock(&rdev->health_lock); /* while rhinet_dev_fail resets */
	quiesced = rdev->quiesced;
	mutex_unlock(&rdev->health_lock);
	return quiesced;
}

/* Consumers learn of the death in process context, holding no lock. */
static void rhinet_fatal_work(struct work_struct *work)
{
	struct rhinet_dev *rdev =
		container_of(work, struct rhinet_dev, fatal_work);

	rhinet_consumers_dead(rdev);
}

static void rhinet_health_work(struct work_struct *work)
{
	struct rhinet_dev *rdev =
		container_of(to_delayed_work(work), struct rhinet_dev,
			     health_work);
	u32 status;

	if (READ_ONCE(rdev->dead))
		return;
	status = rhinet_read32(rdev, RHN_REG_STATUS);
	if (status == U32_MAX) {
		rhinet_dev_fail(rdev, RHINET_REPORT_FATAL,
				"NIC reads as all ones (gone from the bus)");
		return;
	}
	if (status & RHN_STATUS_FATAL) {
		rhinet_dev_fail(rdev, RHINET_REPORT_FATAL,
				"NIC reports a fatal error");
		return;
	}
	schedule_delayed_work(&rdev->health_work,
			      msecs_to_jiffies(RHINET_HEALTH_PERIOD_MS));
}

void rhinet_health_init(struct rhinet_dev *rdev)
{
	mutex_init(&rdev->health_lock);
	INIT_WORK(&rdev->fatal_work, rhinet_fatal_work);
	INIT_DELAYED_WORK(&rdev->health_work, rhinet_health_work);
}

/* Once the device's consumers exist: they are told of a failure. */
void rhinet_health_start(struct rhinet_dev *rdev)
{
	schedule_delayed_work(&rdev->health_work,
			      msecs_to_jiffies(RHINET_HEALTH_PERIOD_MS));
}

/* Teardown: nothing is told any more; a failure still quiesces. */
void rhinet_health_stop(struct rhinet_dev *rdev)
{
	mutex_lock(&rdev->health_lock);
	rdev->removing = true;
	mutex_unlock(&rdev->health_lock);
	cancel_delayed_work_sync(&rdev->health_work);
	cancel_work_sync(&rdev->fatal_work);
}
