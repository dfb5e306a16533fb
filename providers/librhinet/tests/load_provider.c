// SPDX-License-Identifier: BSD-2-Clause
/*
 * Loads a provider library the way libibverbs does (dlopen, so its
 * constructor runs against whatever libibverbs the process gets) and says
 * whether that worked. What the constructor decided, it printed.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "load_provider: %s\n", dlerror());
		return 1;
	}
	printf("load_provider: loaded %s\n", argv[1]);
	return 0;
}
