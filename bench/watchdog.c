/* What starting retry's watchdog costs, by itself (src/attempt/watchdog.rs).
 *
 * Does what retry does once per run, N times: a close-on-exec pipe, every
 * signal blocked, clone(CLONE_VM) onto a static stack, the mask restored,
 * the read end closed. The child does what the watchdog does (new process
 * group, its name, close_range, a blocking read). The parent's time for
 * those steps is what a run pays to start it; then, as retry does at its
 * end, the write end is closed and the child reaped: timed apart.
 *
 *     cc -O2 -o /tmp/watchdog bench/watchdog.c && /tmp/watchdog 20000
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static char stack[16 * 1024] __attribute__((aligned(16)));
static int readfd;

static int watch(void *arg) {
    (void)arg;
    setpgid(0, 0);
    prctl(PR_SET_NAME, "retry-watchdog");
    syscall(SYS_close_range, 0, readfd - 1, 0);
    syscall(SYS_close_range, readfd + 1, 0x7fffffff, 0);
    char b;
    while (syscall(SYS_read, readfd, &b, 1) > 0) {
    }
    return 0;
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    long long *t = calloc(n, sizeof *t);
    long long *u = calloc(n, sizeof *u);
    for (int i = 0; i < n; i++) {
        long long t0 = now_ns();
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0) return 1;
        readfd = fds[0];
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int pid = clone(watch, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(fds[0]);
        t[i] = now_ns() - t0;
        if (pid < 0) return 1;
        long long t1 = now_ns();
        close(fds[1]);
        waitpid(pid, NULL, 0);
        u[i] = now_ns() - t1;
    }
    qsort(t, n, sizeof *t, cmp);
    qsort(u, n, sizeof *u, cmp);
    printf("watchdog start, %d runs: median %.1f us, p90 %.1f us\n", n,
           t[n / 2] / 1000.0, t[n * 9 / 10] / 1000.0);
    printf("watchdog stop (close, reap), %d runs: median %.1f us, p90 %.1f us\n", n,
           u[n / 2] / 1000.0, u[n * 9 / 10] / 1000.0);
    return 0;
}
