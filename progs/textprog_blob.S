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
 *
 * At offset ROTHP_CHAIN_ENTRY of each page, stub i also has a chain entry
 * for the iTLB benchmark: it sets %eax to i, counts %rcx down and, unless it
 * reached zero (then it returns), jumps to the address at index i of the
 * table at %rdi, the next stub's chain entry. rothp_chain_run() enters the
 * chain, so a random cyclic table makes every call an indirect jump to a
 * page no prefetcher can guess.
 */
#ifndef TEXT_PAGES
#define TEXT_PAGES 4096
#endif
#ifndef BLOB_ALIGN
#define BLOB_ALIGN 0x200000
#endif
/* Keep in sync with selftests/rothp_util.h. */
#define ROTHP_CHAIN_ENTRY 16

	.section .text.rothp_blob, "ax", @progbits
	.balign BLOB_ALIGN
	.globl rothp_blob_start
	.type rothp_blob_start, @function
rothp_blob_start:
	.set rothp_stub, 0
	.rept TEXT_PAGES
	movl $rothp_stub, %eax
	ret
	.balign ROTHP_CHAIN_ENTRY, 0xcc
	movl $rothp_stub, %eax
	dec %rcx
	jz 1f
	jmp *(rothp_stub * 8)(%rdi)
1:	ret
	.balign 4096, 0xcc
	.set rothp_stub, rothp_stub + 1
	.endr
	.size rothp_blob_start, . - rothp_blob_start
	.globl rothp_blob_end
rothp_blob_end:

/*
 * unsigned int rothp_chain_run(void *const *table, const void *entry,
 *				unsigned long calls): run calls (>= 1) chain
 * entries from entry on; returns the index of the last stub run.
 */
	.text
	.globl rothp_chain_run
	.type rothp_chain_run, @function
rothp_chain_run:
	mov %rdx, %rcx
	jmp *%rsi
	.size rothp_chain_run, . - rothp_chain_run

	.section .note.GNU-stack, "", @progbits
