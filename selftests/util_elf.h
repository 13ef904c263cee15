/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ELF program headers as the loader reads them, a program's text mapped as
 * the loader could map it, and textprog's stubs in its file.
 */
#ifndef __ROTHP_UTIL_ELF_H
#define __ROTHP_UTIL_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * textprog's stubs (progs/textprog_blob.S): stub i, at the start of its
 * 4 KiB page, returns i, which it holds as a 32-bit little-endian word at
 * ROTHP_STUB_IMM, so that a test changes what a stub returns by writing
 * that word, or one byte of it, and nothing else:
 *   x86-64  "movl $i, %eax; ret": b8 <i> c3, the word is the immediate.
 *   arm64   "nop; ldr w0, 1f; ret; 1: .word i": the word is a literal the
 *           ldr loads, data that a write changes without the rules of
 *           concurrently modified code or I-cache maintenance. The nop
 *           is where a uprobe at the stub goes: uprobes refuse an LDR
 *           (literal), which cannot be stepped out of line
 *           (arch/arm64/kernel/probes/decode-insn.c).
 * The stride is 4 KiB whatever the kernel's page size: it is fixed when
 * textprog is linked. The rest of each page is padding that traps
 * (rothp_is_stub_pad()).
 */
#define ROTHP_STUB_SIZE		4096UL
#if defined(__x86_64__)
#define ROTHP_STUB_IMM		1	/* offset of the word i in a stub */
#define ROTHP_STUB_LEN		6	/* bytes of a stub, the word included */
#elif defined(__aarch64__)
#define ROTHP_STUB_IMM		12
#define ROTHP_STUB_LEN		16
#else
#error "textprog's stubs are written for x86-64 and arm64 only"
#endif
/*
 * ... and its chain entry, for the iTLB benchmark: the return value set to
 * i, a count register decremented, a return at zero, else a jump to
 * ((void **)table)[i] (x86-64: %eax, %rcx, %rdi; arm64: w0, x10, x9).
 */
#define ROTHP_CHAIN_ENTRY	16

/* progs/textprog_blob.S: run calls (>= 1) chain entries from entry on. */
unsigned int rothp_chain_run(void *const *table, const void *entry, unsigned long calls);

/* What the ELF loader reads of a program: its type, PT_INTERP and text. */
struct rothp_elf {
	unsigned int type;		/* e_type: ET_EXEC, ET_DYN */
	bool interp;			/* it has a PT_INTERP */
	int nr_load;			/* PT_LOAD headers */
	unsigned long first_vaddr;	/* p_vaddr of the first PT_LOAD */
	unsigned long max_align;	/* largest p_align of a PT_LOAD */
	int nr_text;			/* executable, not writable PT_LOADs */
	unsigned long text_vaddr;	/* p_vaddr, p_offset, p_filesz and p_align */
	unsigned long text_offset;	/* of the first of those */
	unsigned long text_filesz;
	unsigned long text_align;
};

int rothp_elf_read(const char *path, struct rothp_elf *elf);
bool rothp_elf_text_congruent(const struct rothp_elf *elf);
long rothp_elf_text_blocks(const struct rothp_elf *elf);
off_t rothp_elf_text_block_offset(const struct rothp_elf *elf);
void *rothp_elf_map_text(const char *path, bool blocks, size_t *len);
long rothp_find_stubs(int fd, off_t *off);
bool rothp_is_stub(const void *p, uint32_t i);
bool rothp_is_chain_entry(const void *p, uint32_t i);
bool rothp_is_stub_pad(const void *p);
int rothp_elf_text_fits(const char *path, char *why, size_t len);

#endif /* __ROTHP_UTIL_ELF_H */
