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

/* Is b the start of stub i of textprog? */
static bool is_stub(const unsigned char *b, uint32_t i)
{
	uint32_t imm;

	memcpy(&imm, b + ROTHP_STUB_IMM, sizeof(imm));
	return b[0] == 0xb8 && imm == i && b[ROTHP_STUB_IMM + sizeof(imm)] == 0xc3;
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
		for (i = 0; i + ROTHP_STUB_IMM + 5 <= (size_t)n; i += ROTHP_STUB_SIZE) {
			if (run && is_stub(buf + i, run)) {
				run++;
			} else if (is_stub(buf + i, 0)) {
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
