/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/* RHiNET-NG hardware contract: everything a driver or the engine needs. */
#ifndef RHINET_HW_H
#define RHINET_HW_H

#include "hw_common.h"
#include "hw_regs.h"
#include "hw_queues.h"
#include "hw_admin.h"
#include "hw_wire.h"
#include "hw_wqe.h"
#include "hw_ops.h"
#include "hw_fw.h"

#endif /* RHINET_HW_H */
