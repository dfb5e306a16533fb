// SPDX-License-Identifier: BSD-2-Clause
// Everything of the simulated host and fabric in one include.
#pragma once

#include "rhinet/sim/cluster.h"
#include "rhinet/sim/driver.h"
#include "rhinet/sim/fabric.h"
#include "rhinet/sim/host.h"
#include "rhinet/sim/pinhost.h"
#include "rhinet/sim/verbs.h"
