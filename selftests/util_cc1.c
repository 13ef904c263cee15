// SPDX-License-Identifier: GPL-2.0
/* gcc's cc1: the source it compiles, and what it said on stderr. */
#include <stdio.h>

#include "kselftest.h"
#include "util_cc1.h"

/*
 * Write to fp nr_funcs functions with loops, a switch, structs and
 * floating point, and one that calls them all, run_all(): work for cc1
 * -O2's inliner, loop and vector passes, more of it the more functions.
 * No #include: the guest has no headers. The caller opens fp and checks
 * its fclose().
 */
void rothp_cc1_source(FILE *fp, int nr_funcs)
{
	int i;

	for (i = 0; i < nr_funcs; i++) {
		fprintf(fp, "struct s%d { int k[8]; long v; double w; };\n", i);
		fprintf(fp, "static long f%d(const int *a, int n, struct s%d *s, long seed)\n{\n",
			i, i);
		fprintf(fp, "\tlong acc = seed + %d;\n\tint i, j;\n\n", i * 7 + 3);
		fprintf(fp, "\tfor (i = 0; i < n; i++) {\n");
		fprintf(fp, "\t\tacc += (a[i] * %d) ^ (acc >> %d);\n", i + 13, i % 13 + 1);
		fprintf(fp, "\t\tfor (j = 0; j < 8; j++)\n");
		fprintf(fp, "\t\t\ts->k[j] += (a[(i + j) %% n] * %d) >> (j & 3);\n\t}\n",
			i % 5 + 3);
		fprintf(fp, "\tswitch (acc & 7) {\n");
		fprintf(fp, "\tcase 0: acc += %d; break;\n", i * 3);
		fprintf(fp, "\tcase 1: acc ^= %d; break;\n", i * 5);
		fprintf(fp, "\tcase 2: acc -= s->k[%d]; break;\n", i % 8);
		fprintf(fp, "\tcase 3: acc *= %d; break;\n", i % 9 + 2);
		fprintf(fp, "\tdefault: acc += s->v; break;\n\t}\n");
		fprintf(fp, "\ts->v = acc;\n");
		fprintf(fp, "\ts->w = s->w * %d.5 + (double)acc / (n + %d);\n", i % 7, i + 1);
		fprintf(fp, "\treturn acc + (long)s->w;\n}\n\n");
	}
	fprintf(fp, "long run_all(const int *a, int n)\n{\n\tlong acc = 0;\n\n");
	for (i = 0; i < nr_funcs; i++)
		fprintf(fp, "\t{ static struct s%d s; acc = f%d(a, n, &s, acc); }\n", i, i);
	fprintf(fp, "\treturn acc;\n}\n");
}

/* Print the first few lines of path, where cc1's stderr went, as "# cc1: ...". */
void rothp_cc1_print_errors(const char *path)
{
	char line[256];
	FILE *fp = fopen(path, "r");
	int n = 0;

	while (fp && n++ < 8 && fgets(line, sizeof(line), fp))
		ksft_print_msg("cc1: %s", line);
	if (fp)
		fclose(fp);
}
