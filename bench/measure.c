/*
 * measure.c - run one command, report its wall time and peak RSS.
 *
 * Usage: measure OUTFILE|- CMD [ARGS...]
 *   The command's stdout goes to OUTFILE ("-" discards it); stderr is inherited.
 *   Prints one JSON line: {"rc": N, "wall": SECONDS, "maxrss_kb": KB}
 *
 * Why C and not a Python wrapper: on Linux a child's ru_maxrss includes the
 * high-water RSS of the address space it had before exec(), i.e. the parent's
 * (vfork/posix_spawn) or a copy of it (fork).  Spawned from Python that is a
 * ~10 MB floor; spawned from this program it is ~1 MB.  run_bench.py compiles
 * this file into its temp directory and falls back to a Python wrapper (and
 * says so) when no C compiler is available.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUTFILE|- CMD [ARGS...]\n", argv[0]);
        return 2;
    }
    const char *out = strcmp(argv[1], "-") == 0 ? "/dev/null" : argv[1];
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(out);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "measure: exec %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    close(fd);
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("wait4");
            return 2;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("{\"rc\": %d, \"wall\": %.9f, \"maxrss_kb\": %ld}\n", rc, wall, ru.ru_maxrss);
    return 0;
}
