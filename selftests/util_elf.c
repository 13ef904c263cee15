// SPDX-License-Identifier: GPL-2.0
/*
 * ELF program headers, read as the loader reads them, a program's text
 * mapped where the loader could map it, and textprog's stubs found in its
 * file without a symbol table.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "util_core.h"
#include "util_elf.h"
#include "util_maps.h"

/*
 * Read the ELF header and program headers of a 64-bit executable. Fails
 * (ENOEXEC) unless it has an executable, not writable PT_LOAD: its text.
 */
int rothp_elf_read(const char *path, struct rothp_elf *elf)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd, i, ret = -1;

	memset(elf, 0, sizeof(*elf));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	errno = ENOEXEC;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph))
		goto out;
	elf->type = eh.e_type;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph)) {
			errno = ENOEXEC;
			goto out;
		}
		if (ph.p_type == PT_INTERP)
			elf->interp = true;
		if (ph.p_type != PT_LOAD)
			continue;
		if (!elf->nr_load++)
			elf->first_vaddr = ph.p_vaddr;
		if (ph.p_align > elf->max_align)
			elf->max_align = ph.p_align;
		if ((ph.p_flags & (PF_X | PF_W)) != PF_X || elf->nr_text++)
			continue;
		elf->text_vaddr = ph.p_vaddr;
		elf->text_offset = ph.p_offset;
		elf->text_filesz = ph.p_filesz;
		elf->text_align = ph.p_align;
	}
	errno = ENOEXEC;
	if (elf->nr_text)
		ret = 0;
out:
	close(fd);
	return ret;
}

/* Is the text's p_vaddr congruent to its p_offset modulo 2 MiB? */
bool rothp_elf_text_congruent(const struct rothp_elf *elf)
{
	return !((elf->text_vaddr - elf->text_offset) % ROTHP_PMD_SIZE);
}

/* Whole 2 MiB-aligned blocks of addresses in p_vaddr..p_vaddr+p_filesz of the text. */
long rothp_elf_text_blocks(const struct rothp_elf *elf)
{
	return rothp_pmd_blocks(elf->text_vaddr, elf->text_vaddr + elf->text_filesz);
}

/* File offset of the first whole 2 MiB block of a 2 MiB-congruent text. */
off_t rothp_elf_text_block_offset(const struct rothp_elf *elf)
{
	return ROTHP_ALIGN_UP(elf->text_vaddr, ROTHP_PMD_SIZE) - elf->text_vaddr +
	       elf->text_offset;
}

/*
 * Can the text of the program at path be PMD-mapped on this kernel: is it
 * congruent modulo the PMD size, with a whole block? 1 if so; 0 if not,
 * saying why in why; -1 (errno) if it cannot be read. textprog's size and
 * 2 MiB alignment are fixed when it is linked, the PMD size is the running
 * kernel's: 32 MiB with arm64's 16 KiB pages, 512 MiB with 64 KiB ones,
 * more than textprog's text.
 */
int rothp_elf_text_fits(const char *path, char *why, size_t len)
{
	unsigned long pmd = ROTHP_PMD_SIZE;
	struct rothp_elf elf;

	if (rothp_elf_read(path, &elf))
		return -1;
	if (rothp_elf_text_congruent(&elf) && rothp_elf_text_blocks(&elf) > 0)
		return 1;
	if (elf.text_filesz < pmd)
		snprintf(why, len, "%s: text of %lu MiB is smaller than the PMD size %lu MiB of this kernel",
			 path, elf.text_filesz >> 20, pmd >> 20);
	else
		snprintf(why, len, "%s: text of %lu MiB is not linked for the PMD size %lu MiB of this kernel: no whole block, or not congruent",
			 path, elf.text_filesz >> 20, pmd >> 20);
	return 0;
}

/*
 * Map the text of the program at path r-x private as the ELF loader could,
 * at an address congruent to the text's p_vaddr modulo 2 MiB: all of its
 * text segment, from the page holding p_offset, or (blocks) only its whole
 * 2 MiB blocks (rothp_elf_text_blocks()), which a 2 MiB-congruent text
 * has at 2 MiB-aligned offsets. Their length in *len; MAP_FAILED with errno
 * set (ENOEXEC: no text, or no whole block of it) if it cannot be mapped.
 */
void *rothp_elf_map_text(const char *path, bool blocks, size_t *len)
{
	unsigned long vaddr, off;
	struct rothp_elf elf;
	int fd, err;
	void *p;

	*len = 0;
	if (rothp_elf_read(path, &elf))
		return MAP_FAILED;
	if (blocks) {
		vaddr = ROTHP_ALIGN_UP(elf.text_vaddr, ROTHP_PMD_SIZE);
		off = rothp_elf_text_block_offset(&elf);
		*len = rothp_elf_text_blocks(&elf) * ROTHP_PMD_SIZE;
	} else {
		vaddr = ROTHP_ALIGN_DOWN(elf.text_vaddr, ROTHP_PAGE_SIZE);
		off = ROTHP_ALIGN_DOWN(elf.text_offset, ROTHP_PAGE_SIZE);
		*len = elf.text_offset + elf.text_filesz - off;
	}
	if (!*len) {
		errno = ENOEXEC;
		return MAP_FAILED;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return MAP_FAILED;
	p = rothp_map_aligned(fd, *len, off, vaddr % ROTHP_PMD_SIZE, PROT_READ | PROT_EXEC);
	err = errno;
	close(fd);
	errno = err;
	return p;
}

/*
 * The instructions of textprog_blob.S, as the tests find them in the file
 * and in memory (all little-endian).
 */
#if defined(__x86_64__)
#define X86_MOVL_EAX		0xb8		/* movl $imm32, %eax */
#define X86_RET			0xc3
#define X86_INT3		0xcc		/* the padding */
#elif defined(__aarch64__)
#define A64_NOP			0xd503201fU
#define A64_LDR_W0_LIT8		0x18000040U	/* ldr w0, .+8 */
#define A64_RET			0xd65f03c0U
#define A64_MOVZ_W0		0x52800000U	/* movz w0, #imm16 (imm16 << 5) */
#define A64_MOVK_W0_16		0x72a00000U	/* movk w0, #imm16, lsl #16 */
#define A64_BRK0		0xd4200000U	/* brk #0: the padding */

static uint32_t insn_at(const unsigned char *b, int n)
{
	uint32_t insn;

	memcpy(&insn, b + 4 * n, sizeof(insn));
	return insn;
}
#endif

/* Is p the start of stub i of textprog? */
bool rothp_is_stub(const void *p, uint32_t i)
{
	const unsigned char *b = p;
	uint32_t imm;

	memcpy(&imm, b + ROTHP_STUB_IMM, sizeof(imm));
#if defined(__x86_64__)
	return b[0] == X86_MOVL_EAX && imm == i && b[ROTHP_STUB_IMM + sizeof(imm)] == X86_RET;
#else
	return insn_at(b, 0) == A64_NOP && insn_at(b, 1) == A64_LDR_W0_LIT8 &&
	       insn_at(b, 2) == A64_RET && imm == i;
#endif
}

/* Is p stub i's chain entry, ROTHP_CHAIN_ENTRY bytes into its page? */
bool rothp_is_chain_entry(const void *p, uint32_t i)
{
#if defined(__x86_64__)
	const unsigned char *b = p;
	uint32_t imm;

	memcpy(&imm, b + 1, sizeof(imm));
	return b[0] == X86_MOVL_EAX && imm == i;
#else
	return insn_at(p, 0) == (A64_MOVZ_W0 | (i & 0xffff) << 5) &&
	       insn_at(p, 1) == (A64_MOVK_W0_16 | (i >> 16) << 5);
#endif
}

/*
 * Is p in the padding of a stub page, which traps if run: int3 on x86-64,
 * BRK #0 on arm64 (p at an offset of its page that is a multiple of 4)?
 */
bool rothp_is_stub_pad(const void *p)
{
#if defined(__x86_64__)
	return *(const unsigned char *)p == X86_INT3;
#else
	return insn_at(p, 0) == A64_BRK0;
#endif
}

/*
 * Find textprog's stubs in the file fd: the longest run of 4 KiB pages, at
 * 4 KiB-aligned file offsets, whose starts are stubs 0, 1, 2, ... It needs
 * no symbol table, so it works on a stripped copy too. Returns the number of
 * stubs, with *off the file offset of stub 0; 0 if there is none, -1 on a
 * read error.
 */
long rothp_find_stubs(int fd, off_t *off)
{
	unsigned char *buf = malloc(ROTHP_IO_CHUNK);
	off_t pos = 0, run_start = 0;
	long run = 0, best = 0;
	size_t i;
	ssize_t n;

	if (!buf)
		return -1;
	while ((n = pread(fd, buf, ROTHP_IO_CHUNK, pos)) > 0) {
		for (i = 0; i + ROTHP_STUB_LEN <= (size_t)n; i += ROTHP_STUB_SIZE) {
			if (run && rothp_is_stub(buf + i, run)) {
				run++;
			} else if (rothp_is_stub(buf + i, 0)) {
				run_start = pos + i;
				run = 1;
			} else {
				run = 0;
			}
			if (run > best) {
				best = run;
				*off = run_start;
			}
		}
		pos += n;
	}
	free(buf);
	return n < 0 ? -1 : best;
}
