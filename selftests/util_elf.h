/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ELF program headers as the loader reads them, a program's text mapped as
 * the loader could map it, and textprog's stubs in its file.
 */
#ifndef __ROTHP_UTIL_ELF_H
#define __ROTHP_UTIL_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * textprog's stubs: stub i, at the start of its 4 KiB page, is
 * "movl $i, %eax; ret" (b8 <i, 32-bit little-endian> c3).
 */
#define ROTHP_STUB_SIZE		4096UL
#define ROTHP_STUB_IMM		1	/* offset of the immediate in a stub */
/*
 * ... and its chain entry, for the iTLB benchmark (progs/textprog_blob.S):
 * %eax = i, then return if --%rcx is 0, else jump to ((void **)%rdi)[i].
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

#endif /* __ROTHP_UTIL_ELF_H */
