// SPDX-License-Identifier: GPL-2.0
/*
 * Linked into textprog_nosep only: 6 MiB of .bss after its data. That
 * static PIE's first PT_LOAD is its text (ld -z noseparate-code), which
 * execve() maps over the image's whole size before it maps data and bss
 * over the rest, so the range hinted at exec holds whole 2 MiB blocks
 * that are not text by the time the task collapses it.
 */
char textprog_bss_pad[6 << 20];
