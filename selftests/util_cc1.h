/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gcc's cc1 (<dir>/gcc/cc1, its libraries in <dir>/gcc/lib, put there by
 * image.sh), the real program always_text runs and bench_prompt times: the
 * C source it is given to compile, and what it said on stderr.
 */
#ifndef __ROTHP_UTIL_CC1_H
#define __ROTHP_UTIL_CC1_H

#include <stdio.h>

void rothp_cc1_source(FILE *fp, int nr_funcs);
void rothp_cc1_print_errors(const char *path);

#endif /* __ROTHP_UTIL_CC1_H */
