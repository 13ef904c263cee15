/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The text that textprog turns into huge pages: TEXT_PAGES stubs, one at the
 * start of each 4 KiB page, stub i returning i so a caller can check it ran
 * the page it meant to. The blob starts BLOB_ALIGN-aligned: by default
 * 2 MiB, and with TEXT_PAGES a multiple of 512 it is then a whole number of
 * 2 MiB blocks. The PIE variants use 4 KiB, because the linker raises the
 * segment's p_align to the largest section alignment and 6.12's loader
 * already aligns the load bias to that (maximum_alignment() in
 * fs/binfmt_elf.c), which would hide what the elf_align test looks at.
 * The 4 KiB stride and the 2 MiB alignment are properties of the binary,
 * whatever the page and PMD sizes of the kernel that runs it.
 *
 * At offset ROTHP_CHAIN_ENTRY of each page, stub i also has a chain entry
 * for the iTLB benchmark: it sets the return value to i, counts a register
 * down and, unless it reached zero (then it returns), jumps to the address
 * at index i of the table, the next stub's chain entry. rothp_chain_run()
 * enters the chain, so a random cyclic table makes every call an indirect
 * jump to a page no prefetcher can guess. The rest of each page is padding
 * that traps if run.
 *
 * One flavour for each architecture the compiler targets; selftests/util_elf.h
 * and util_elf.c describe the bytes the tests look for in the file:
 *
 *   x86-64  stub "movl $i, %eax; ret", chain entry %eax = i, --%rcx, then
 *           jmp *(i * 8)(%rdi); padding int3 (0xcc).
 *   arm64   stub "nop; ldr w0, 1f; ret; 1: .word i": i is a data word, as
 *           x86's 32-bit immediate is, so the tests that rewrite it write
 *           data, not code (no I-cache maintenance or rules of concurrent
 *           modification to meet); the nop is where uprobes go, as they
 *           refuse an LDR (literal). Chain entry "movz/movk w0, i" (any i
 *           up to 2^32 - 1), x10 counted down, then "ldr x16, [x9, x0,
 *           lsl #3]; br x16": the entry loads nothing from its own page,
 *           so the chain touches the text through the iTLB alone.
 *           Padding BRK #0.
 */
#ifndef TEXT_PAGES
#define TEXT_PAGES 4096
#endif
#ifndef BLOB_ALIGN
#define BLOB_ALIGN 0x200000
#endif
/* Keep in sync with selftests/util_elf.h. */
#define ROTHP_STUB_SIZE 4096
#define ROTHP_CHAIN_ENTRY 16

/*
 * Per architecture: the blob's section, and as macros the code of stub
 * rothp_stub (stub_page) and of rothp_chain_run (chain_run_code).
 */
#if defined(__x86_64__)

#define BLOB_SECTION .text.rothp_blob

	.macro stub_page
	movl $rothp_stub, %eax
	ret
	.balign ROTHP_CHAIN_ENTRY, 0xcc
	movl $rothp_stub, %eax
	dec %rcx
	jz 1f
	jmp *(rothp_stub * 8)(%rdi)
1:	ret
	.balign ROTHP_STUB_SIZE, 0xcc
	.endm

	/* table in %rdi, entry in %rsi, calls in %rdx */
	.macro chain_run_code
	mov %rdx, %rcx
	jmp *%rsi
	.endm

#elif defined(__aarch64__)

/*
 * A section ld places after all of .text, not among it: a bl reaches
 * +-128 MiB, and textprog_big's 256 MiB of stubs amid .text would put the
 * code after them out of reach of what comes before (glibc's IFUNC PLT,
 * .iplt, ahead of .text). Nothing branches into the blob but through a
 * register.
 */
#define BLOB_SECTION .rothp_blob
/* brk #0: a debugger's breakpoint, as x86's int3; the uprobes' is brk #5. */
#define A64_BRK0 0xd4200000

	.macro stub_page
	nop
	ldr w0, 1f
	ret
1:	.word rothp_stub
	.balignl ROTHP_CHAIN_ENTRY, A64_BRK0
	movz w0, #(rothp_stub & 0xffff)
	movk w0, #(rothp_stub >> 16), lsl #16
	subs x10, x10, #1
	b.eq 2f
	ldr x16, [x9, x0, lsl #3]
	br x16
2:	ret
	.balignl ROTHP_STUB_SIZE, A64_BRK0
	.endm

	/* AAPCS64: table in x0, entry in x1, calls in x2 */
	.macro chain_run_code
	mov x9, x0
	mov x10, x2
	br x1
	.endm

#else
#error "textprog_blob.S has stubs for x86-64 and arm64 only"
#endif

	.section BLOB_SECTION, "ax", %progbits
	.balign BLOB_ALIGN
	.globl rothp_blob_start
	.type rothp_blob_start, %function
rothp_blob_start:
	.set rothp_stub, 0
	.rept TEXT_PAGES
	stub_page
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
	.type rothp_chain_run, %function
rothp_chain_run:
	chain_run_code
	.size rothp_chain_run, . - rothp_chain_run

	.section .note.GNU-stack, "", %progbits
