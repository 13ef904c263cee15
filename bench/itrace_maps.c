// SPDX-License-Identifier: GPL-2.0
/*
 * itrace_maps.so: preloaded into the program make bench traces under
 * valgrind (LD_PRELOAD), it copies the program's /proc/self/maps to the
 * file $ITRACE_MAPS as the program exits. Valgrind maps the program and
 * its libraries with plain mmap() at addresses of its choosing, so these
 * are the addresses of the trace; scripts/rothp/itrace.py turns each into
 * a file and an offset, and that into the page the guest had there.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((destructor)) static void itrace_maps(void)
{
	const char *out = getenv("ITRACE_MAPS");
	char buf[4096];
	ssize_t n;
	int in, fd;

	if (!out)
		return;
	in = open("/proc/self/maps", O_RDONLY);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	while (in >= 0 && fd >= 0 && (n = read(in, buf, sizeof(buf))) > 0) {
		if (write(fd, buf, n) != n)
			break;
	}
	if (fd >= 0)
		close(fd);
	if (in >= 0)
		close(in);
}
