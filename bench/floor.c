/* The floor for a process wrapper: fork, exec the command, wait for it,
 * exit with its status. No retry logic, no signal handling, no logging:
 * what any wrapper must pay at the least to put itself in front of a
 * command. bench/run.py compiles it with `cc -O2` and times
 * `floor true` beside `retry --max 1 -- true`.
 *
 * Usage: floor PROGRAM [ARG...]
 */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: floor PROGRAM [ARG...]\n", stderr);
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("floor: fork");
        return 125;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("floor: exec");
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("floor: waitpid");
            return 125;
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
