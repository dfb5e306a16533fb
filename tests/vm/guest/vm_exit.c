// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-vm-exit RC: ends the test VM with status RC through QEMU's
 * isa-debug-exit device (iobase 0xf4); QEMU then exits with 2 * RC + 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>

#define DEBUG_EXIT_PORT 0xf4

int main(int argc, char **argv)
{
	int rc = argc > 1 ? atoi(argv[1]) : 0;

	if (rc < 0 || rc > 127) {
		fprintf(stderr, "rhinet-vm-exit: status must be 0..127\n");
		return 2;
	}
	if (ioperm(DEBUG_EXIT_PORT, 4, 1)) {
		perror("rhinet-vm-exit: ioperm");
		return 1;
	}
	outb((unsigned char)rc, DEBUG_EXIT_PORT);
	fprintf(stderr, "rhinet-vm-exit: no isa-debug-exit device\n");
	return 1;
}
