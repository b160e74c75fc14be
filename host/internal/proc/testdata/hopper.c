/* hopper leaves the shell's process group and then keeps forking, each
 * parent exiting at once, so that no pid of it lives longer than a fork.
 * With "every" it also makes a new group on every hop,
 * so that killing the group it had when it was seen misses its child.
 * After the given milliseconds of hopping it writes its pid to "survived".
 * Usage: hopper once|every MILLISECONDS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	int every = strcmp(argv[1], "every") == 0;
	long long end = now_ms() + atoll(argv[2]);
	setpgid(0, 0);
	close(creat("ready", 0644));
	while (now_ms() < end) {
		if (fork() > 0)
			_exit(0);
		if (every)
			setpgid(0, 0);
	}
	FILE *f = fopen("survived", "w");
	fprintf(f, "%d\n", getpid());
	fclose(f);
	return 0;
}
