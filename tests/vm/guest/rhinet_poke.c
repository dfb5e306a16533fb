// SPDX-License-Identifier: BSD-2-Clause
/*
 * Hostile-guest test of the emulated NIC: QEMU must survive anything a guest
 * can do to the device, count the errors, and come back clean from a reset.
 *
 *   rhinet-poke NODE [SEED]
 *
 *  1. Random 4- and 8-byte writes over all of BAR0, with the admin queue
 *     aimed at MMIO (BAR0 itself, the MSI window) and at addresses beyond
 *     RAM, then enabled and kicked.
 *  2. Random writes over every doorbell page, inline window included.
 *  3. A properly started admin queue fed random commands, and well-formed
 *     commands whose rings point at MMIO or nowhere.
 *  4. The device still answers: VERSION and NODE_ID read back, the error
 *     counters moved.
 *  5. Function level reset through sysfs: a fresh engine (no admin queue,
 *     counters zero), which then comes up and serves commands again.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rhinet_guest.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic for a seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint64_t bar_address(int bar)
{
	char path[400];
	unsigned long long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/resource", dev_dir);
	f = fopen(path, "r");
	if (!f)
		fail("cannot read %s", path);
	for (int i = 0; i <= bar; i++)
		if (fscanf(f, "%llx %*x %*x", &start) != 1)
			fail("cannot parse %s", path);
	fclose(f);
	return start;
}

static void check_alive(const char *when)
{
	if (rd32(RHN_REG_VERSION) != RHN_VERSION ||
	    rd32(RHN_REG_NODE_ID) != (uint32_t)node)
		fail("%s: VERSION 0x%x NODE_ID %u", when, rd32(RHN_REG_VERSION),
		     rd32(RHN_REG_NODE_ID));
}

static void wait_idle(void)
{
	usleep(50000); /* let the engine thread chew on what it was given */
}

int main(int argc, char **argv)
{
	uint64_t bogus[] = {
		0, /* nothing */
		0, /* our own registers, filled in below */
		0xfee00000ull, /* the MSI window */
		0x7ffffffff000ull, /* far beyond RAM */
		~0ull & ~0xfffull, /* wraps */
	};
	const size_t nbogus = sizeof(bogus) / sizeof(bogus[0]);
	size_t regs_size, db_size;
	struct rhn_admin_cmd c;
	unsigned refused = 0, i;
	uint64_t dma_err = 0, bad_db, bad_admin;

	program = "rhinet-poke";
	if (argc < 2)
		fail("usage: rhinet-poke NODE [SEED]");
	node = atoi(argv[1]);
	rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
	rng_state |= 1;

	find_device();
	enable_device();
	bogus[1] = bar_address(RHN_BAR_REGS);
	regs = map_bar(RHN_BAR_REGS, &regs_size);
	doorbells = map_bar(RHN_BAR_DOORBELL, &db_size);
	check_alive("at start");

	/* 1. Registers, with the admin queue aimed at bogus addresses. */
	for (i = 0; i < nbogus; i++) {
		wr32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
		wait_idle();
		wr64(RHN_REG_ADMIN_SQ_BASE, bogus[i]);
		wr64(RHN_REG_ADMIN_CQ_BASE, bogus[(i + 1) % nbogus]);
		wr32(RHN_REG_ADMIN_LOG_DEPTH, (uint32_t)rnd() % 12);
		wr32(RHN_REG_CONTROL,
		     RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE);
		wr32(RHN_REG_ADMIN_SQ_TAIL, 1 + (uint32_t)rnd() % 64);
		wr64(RHN_REG_EQ_DOORBELL, rnd());
		wait_idle();
		dma_err += rd64(RHN_REG_COUNTERS + 8 * RHN_CNT_DMA_ERRORS);
	}
	printf("rhinet-poke[node %d]: admin queue on bogus addresses: "
	       "%" PRIu64 " DMA errors, status 0x%x\n",
	       node, dma_err, rd32(RHN_REG_STATUS));
	if (!dma_err)
		fail("DMA to MMIO or beyond RAM was not counted");
	for (i = 0; i < 20000; i++) {
		uint32_t off = (uint32_t)rnd() % regs_size;

		if (off == RHN_REG_CONTROL && (i & 1))
			continue; /* keep the engine enabled half the time */
		/* Admin ring bases were aimed at bad places above; a random
		 * low half could point into this guest's own RAM, which the
		 * NIC would then rightly write to. */
		if (off >= RHN_REG_ADMIN_SQ_BASE &&
		    off < RHN_REG_ADMIN_LOG_DEPTH)
			continue;
		if (rnd() & 1)
			wr32(off & ~3u, (uint32_t)rnd());
		else
			wr64(off & ~7u, rnd());
	}
	wait_idle();
	check_alive("after register garbage");
	printf("rhinet-poke[node %d]: survived register garbage\n", node);

	/* 2. Doorbells of every page. */
	for (i = 0; i < 50000; i++) {
		uint64_t off = rnd() % db_size;

		if (rnd() & 1)
			*(volatile uint32_t *)(doorbells + (off & ~3ull)) =
				(uint32_t)rnd();
		else
			*(volatile uint64_t *)(doorbells + (off & ~7ull)) =
				rnd();
	}
	wait_idle();
	check_alive("after doorbell garbage");
	printf("rhinet-poke[node %d]: survived doorbell garbage\n", node);
	print_counters();
	bad_db = rd64(RHN_REG_COUNTERS + 8 * RHN_CNT_BAD_DOORBELLS);
	if (!bad_db)
		fail("doorbell garbage was not counted");

	/* 3. A working admin queue fed garbage. */
	admin_start();
	for (i = 0; i < 400; i++) {
		uint8_t *raw = (uint8_t *)&c;

		for (size_t k = 0; k < sizeof(c); k++)
			raw[k] = (uint8_t)rnd();
		if (i % 2 == 0) /* well-formed opcode and context */
			c.hdr.opcode = (uint8_t)(rnd() % 0x32);
		c.hdr.context = i % 3 ? 0 : c.hdr.context;
		int st = admin_try(&c, NULL, NULL);

		if (st < 0)
			fail("admin command %u (opcode 0x%x) never completed",
			     i, c.hdr.opcode);
		refused += st != RHN_ADMIN_OK;
	}
	for (i = 1; i < nbogus; i++) {
		/* An EQ and a query result aimed at bogus addresses. */
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = RHN_ADMIN_CREATE_EQ;
		c.u.create_eq.ring_addr = bogus[i];
		c.u.create_eq.vector = 1;
		c.u.create_eq.log_depth = 4;
		if (admin_try(&c, NULL, NULL) < 0)
			fail("CREATE_EQ on 0x%" PRIx64 " never completed",
			     bogus[i]);
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = RHN_ADMIN_QUERY_DEVICE;
		c.u.query.out_addr = bogus[i];
		c.u.query.out_len = 4096;
		if (admin_try(&c, NULL, NULL) < 0)
			fail("QUERY_DEVICE to 0x%" PRIx64 " never completed",
			     bogus[i]);
	}
	check_alive("after admin garbage");
	bad_admin = rd64(RHN_REG_COUNTERS + 8 * RHN_CNT_BAD_ADMIN_CMDS);
	printf("rhinet-poke[node %d]: %u of 400 random admin commands refused;"
	       " bad_doorbells=%" PRIu64 " bad_admin_cmds=%" PRIu64 "\n",
	       node, refused, bad_db, bad_admin);
	print_counters();
	if (bad_admin < refused || refused < 100)
		fail("refused admin commands were not counted");

	/* 4. Function level reset: a clean engine. */
	{
		char path[400];
		FILE *f;

		snprintf(path, sizeof(path), "%s/reset", dev_dir);
		f = fopen(path, "w");
		if (!f || fputs("1", f) < 0 || fclose(f))
			fail("cannot reset through %s", path);
	}
	enable_device(); /* the reset cleared the command register */
	check_alive("after reset");
	if (rd32(RHN_REG_STATUS) & RHN_STATUS_ADMIN_ON)
		fail("admin queue still on after reset: status 0x%x",
		     rd32(RHN_REG_STATUS));
	for (i = 0; i < RHN_CNT_COUNT; i++)
		if (rd64(RHN_REG_COUNTERS + 8 * i))
			fail("counter %u is %" PRIu64 " after reset", i,
			     rd64(RHN_REG_COUNTERS + 8 * i));
	admin_start();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_PD;
	if (admin(&c, "CREATE_PD after reset") != 0)
		fail("first PD after reset is not PD 0: state survived");
	printf("rhinet-poke[node %d]: PASS: clean state after reset\n", node);
	return 0;
}
