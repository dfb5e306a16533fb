/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Start-up of the link firmware on qemu-system-riscv32's virt machine
 * (loaded with -bios none -kernel, entered in machine mode on hart 0):
 * a stack, a zeroed .bss, a trap vector that ends the emulator (the
 * firmware takes no traps: it sleeps with interrupts masked and lets wfi
 * wake it), then main. main's return value is the emulator's exit status.
 */
	/* The CSR instructions: part of rv32imac before they became an
	 * extension of their own, which this assembler wants named. */
	.option arch, +zicsr
	.section .text.start, "ax"
	.globl _start
_start:
	.option push
	.option norelax
	la gp, __global_pointer$
	.option pop
	la sp, __stack_top
	la t0, trap
	csrw mtvec, t0
	csrw mie, zero
	csrw mstatus, zero
	la t0, __bss_start
	la t1, __bss_end
1:	bgeu t0, t1, 2f
	sw zero, 0(t0)
	addi t0, t0, 4
	j 1b
2:	call main
	call rhn_virt_exit
3:	j 3b

	.balign 4
trap:
	li a0, 92 /* RHN_LINK_EXIT_TRAP */
	call rhn_virt_exit
4:	j 4b
