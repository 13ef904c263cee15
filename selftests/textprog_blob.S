/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The text that textprog turns into huge pages: TEXT_PAGES stubs, one at the
 * start of each 4 KiB page, stub i being "movl $i, %eax; ret" so a caller can
 * check it ran the page it meant to. The blob starts BLOB_ALIGN-aligned: by
 * default 2 MiB, and with TEXT_PAGES a multiple of 512 it is then a whole
 * number of 2 MiB blocks. The PIE variants use 4 KiB, because the linker
 * raises the segment's p_align to the largest section alignment and 6.12's
 * loader already aligns the load bias to that (maximum_alignment() in
 * fs/binfmt_elf.c), which would hide what the elf_align test looks at.
 */
#ifndef TEXT_PAGES
#define TEXT_PAGES 4096
#endif
#ifndef BLOB_ALIGN
#define BLOB_ALIGN 0x200000
#endif

	.section .text.rothp_blob, "ax", @progbits
	.balign BLOB_ALIGN
	.globl rothp_blob_start
	.type rothp_blob_start, @function
rothp_blob_start:
	.set rothp_stub, 0
	.rept TEXT_PAGES
	movl $rothp_stub, %eax
	ret
	.balign 4096, 0xcc
	.set rothp_stub, rothp_stub + 1
	.endr
	.size rothp_blob_start, . - rothp_blob_start
	.globl rothp_blob_end
rothp_blob_end:

	.section .note.GNU-stack, "", @progbits
