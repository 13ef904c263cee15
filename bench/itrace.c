// SPDX-License-Identifier: GPL-2.0
/*
 * itrace: the instruction-fetch stream of a real program, replayed through
 * a two-level instruction TLB model. A host tool of make bench (not run in
 * the guest); scripts/rothp/itrace.py drives it.
 *
 *   itrace reduce OUT < LOG
 *	LOG is valgrind's lackey output with --trace-superblocks=yes and
 *	--basic-counts=yes: one "SB <hex address>" line per superblock
 *	entered, and a "guest instrs: N" count at the end. OUT gets the 4 KiB
 *	page number of each superblock entered, as native-endian uint64_t,
 *	one record per change of page (a fetch from the page fetched last
 *	cannot miss). Prints "instrs N sbs N records N".
 *
 *   itrace replay TRACE PAGES GEOMETRY...
 *	TRACE is reduce's OUT. PAGES has a line "<page> <key>" (hex) for each
 *	4 KiB page of the traced run that the replay is to see elsewhere: the
 *	TLB key of that page in the guest, (number << 1) | huge, number in
 *	units of the guest's page (4 KiB; 16 or 64 KiB on arm64), or of its
 *	PMD block (2 MiB; 32 or 512 MiB) when huge is 1. A page not listed is
 *	its own 4 KiB page. Each GEOMETRY is
 *	NAME:L1_4K_ENTRIES:L1_4K_WAYS:L1_2M_ENTRIES:L1_2M_WAYS:SHARED:L2_ENTRIES:L2_WAYS
 *	(4K: the guest's page, 2M: its PMD block; SHARED 1: one L1 array
 *	holds both sizes, with the page numbers), as
 *	scripts/rothp/itrace.py's geometry_specs() writes tlb_model's
 *	geometries: the x86 cores' (skl, zen2) and the Arm core's (a76,
 *	a76:48:48:48:48:1:1280:5). For each, prints "NAME accesses N
 *	l1_misses N walks N".
 *
 * The model is scripts/rothp/tlb_model.py's TwoLevel, in C for the tens of
 * millions of accesses of a real run (the host tests check that both count
 * the same): LRU sets, the set of a key its page number modulo the number
 * of sets, an L1 miss looks the shared L2 up, an L2 miss is a page walk,
 * and both fill.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GEOMETRIES	8

struct set_assoc {
	unsigned long nsets, ways;
	uint64_t *keys;		/* nsets * ways, each set oldest first */
	unsigned int *used;	/* keys in each set */
};

struct geometry {
	char name[32];
	struct set_assoc l1_4k, l1_2m_own, l2;
	struct set_assoc *l1_2m;
	unsigned long long accesses, l1_misses, walks;
};

struct page_map {
	uint64_t page, key;
};

static void fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "itrace: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

static void sa_init(struct set_assoc *sa, unsigned long entries, unsigned long ways)
{
	if (!ways || !entries || entries % ways)
		fail("%s: entries must be a multiple of ways", "geometry");
	sa->nsets = entries / ways;
	sa->ways = ways;
	sa->keys = calloc(entries, sizeof(*sa->keys));
	sa->used = calloc(sa->nsets, sizeof(*sa->used));
	if (!sa->keys || !sa->used)
		fail("%s", "out of memory");
}

/* Look key up, LRU: 1 on a hit, else 0 with key filled in. */
static int sa_access(struct set_assoc *sa, uint64_t key)
{
	uint64_t *s = sa->keys + ((key >> 1) % sa->nsets) * sa->ways;
	unsigned int *used = &sa->used[(key >> 1) % sa->nsets];
	unsigned int i;

	for (i = 0; i < *used; i++) {
		if (s[i] == key) {
			memmove(s + i, s + i + 1, (*used - i - 1) * sizeof(*s));
			s[*used - 1] = key;
			return 1;
		}
	}
	if (*used == sa->ways) {
		memmove(s, s + 1, (sa->ways - 1) * sizeof(*s));
		(*used)--;
	}
	s[(*used)++] = key;
	return 0;
}

static void geometry_parse(struct geometry *g, const char *spec)
{
	unsigned long e4, w4, e2, w2, shared, el2, wl2;
	int n = 0;

	if (sscanf(spec, "%31[^:]:%lu:%lu:%lu:%lu:%lu:%lu:%lu%n", g->name, &e4, &w4, &e2, &w2,
		   &shared, &el2, &wl2, &n) != 8 || spec[n])
		fail("bad geometry '%s'", spec);
	sa_init(&g->l1_4k, e4, w4);
	if (shared) {
		g->l1_2m = &g->l1_4k;
	} else {
		sa_init(&g->l1_2m_own, e2, w2);
		g->l1_2m = &g->l1_2m_own;
	}
	sa_init(&g->l2, el2, wl2);
}

static void geometry_access(struct geometry *g, uint64_t key)
{
	g->accesses++;
	if (sa_access(key & 1 ? g->l1_2m : &g->l1_4k, key))
		return;
	g->l1_misses++;
	if (!sa_access(&g->l2, key))
		g->walks++;
}

static int reduce(const char *out)
{
	unsigned long long instrs = 0, sbs = 0, records = 0;
	uint64_t page, last = UINT64_MAX;
	char line[512], digits[32], *p, *q;
	FILE *fp = fopen(out, "wb");

	if (!fp)
		fail("cannot write %s", out);
	while (fgets(line, sizeof(line), stdin)) {
		if (line[0] == 'S' && line[1] == 'B' && line[2] == ' ') {
			page = strtoull(line + 3, NULL, 16) >> 12;
			sbs++;
			if (page == last)
				continue;
			last = page;
			records++;
			if (fwrite(&page, sizeof(page), 1, fp) != 1)
				fail("cannot write %s", out);
			continue;
		}
		/* "==PID==   guest instrs:  772,423,571" */
		p = strstr(line, "guest instrs:");
		if (!p)
			continue;
		for (p += strlen("guest instrs:"), q = digits; *p && q < digits + 31; p++) {
			if (*p >= '0' && *p <= '9')
				*q++ = *p;
		}
		*q = 0;
		instrs = strtoull(digits, NULL, 10);
	}
	if (fclose(fp))
		fail("cannot write %s", out);
	if (!instrs || !sbs)
		fail("%s", "no 'guest instrs:' count or no 'SB' line in the log (lackey with --basic-counts=yes --trace-superblocks=yes?)");
	printf("instrs %llu sbs %llu records %llu\n", instrs, sbs, records);
	return 0;
}

static int cmp_page(const void *a, const void *b)
{
	const struct page_map *x = a, *y = b;

	return x->page < y->page ? -1 : x->page > y->page;
}

static int replay(const char *trace, const char *pages, int ngeo, char **specs)
{
	struct geometry geo[MAX_GEOMETRIES];
	struct page_map *map = NULL, want, *hit;
	size_t nmap = 0, cap = 0;
	unsigned long long page, key;
	uint64_t buf[4096], k, last = UINT64_MAX;
	size_t n, i;
	FILE *fp;
	int g;

	if (ngeo < 1 || ngeo > MAX_GEOMETRIES)
		fail("%s", "one to eight geometries");
	memset(geo, 0, sizeof(geo));
	for (g = 0; g < ngeo; g++)
		geometry_parse(&geo[g], specs[g]);
	fp = fopen(pages, "r");
	if (!fp)
		fail("cannot read %s", pages);
	while (fscanf(fp, "%llx %llx", &page, &key) == 2) {
		if (nmap == cap) {
			cap = cap ? 2 * cap : 1024;
			map = realloc(map, cap * sizeof(*map));
			if (!map)
				fail("%s", "out of memory");
		}
		map[nmap].page = page;
		map[nmap++].key = key;
	}
	if (!feof(fp))
		fail("bad line in %s", pages);
	fclose(fp);
	if (nmap)
		qsort(map, nmap, sizeof(*map), cmp_page);
	fp = fopen(trace, "rb");
	if (!fp)
		fail("cannot read %s", trace);
	while ((n = fread(buf, sizeof(buf[0]), sizeof(buf) / sizeof(buf[0]), fp)) > 0) {
		for (i = 0; i < n; i++) {
			want.page = buf[i];
			hit = nmap ? bsearch(&want, map, nmap, sizeof(*map), cmp_page) : NULL;
			k = hit ? hit->key : buf[i] << 1;
			/* Two 4 KiB pages of one PMD-mapped block: one entry. */
			if (k == last)
				continue;
			last = k;
			for (g = 0; g < ngeo; g++)
				geometry_access(&geo[g], k);
		}
	}
	if (ferror(fp))
		fail("cannot read %s", trace);
	fclose(fp);
	for (g = 0; g < ngeo; g++)
		printf("%s accesses %llu l1_misses %llu walks %llu\n", geo[g].name,
		       geo[g].accesses, geo[g].l1_misses, geo[g].walks);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "reduce"))
		return reduce(argv[2]);
	if (argc >= 5 && !strcmp(argv[1], "replay"))
		return replay(argv[2], argv[3], argc - 4, argv + 4);
	fprintf(stderr, "usage: itrace reduce OUT < LOG\n"
		"       itrace replay TRACE PAGES GEOMETRY...\n");
	return 2;
}
