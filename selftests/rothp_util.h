/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rothp helper library, shared by the kselftests, the benchmarks and
 * textprog, the program whose text they turn into read-only file THPs:
 * this header includes the headers of all its units (util_*.h, textproc.h),
 * for the files that use several of them.
 */
#ifndef __ROTHP_UTIL_H
#define __ROTHP_UTIL_H

#include "util_core.h"
#include "util_files.h"
#include "util_settings.h"
#include "util_maps.h"
#include "util_cache.h"
#include "util_elf.h"
#include "util_child.h"
#include "textproc.h"
#include "util_prompt.h"
#include "util_bench.h"
#include "util_trace.h"
#include "util_cc1.h"

#endif /* __ROTHP_UTIL_H */
