/* Safe points and refusals (see safe_point.h). */
#include "safe_point.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool safe_call(long number)
{
    static const long waits[] = {
        SYS_read,      SYS_poll,         SYS_select,        SYS_pause,   SYS_nanosleep,  SYS_accept,
        SYS_recvfrom,  SYS_recvmsg,      SYS_wait4,         SYS_waitid,  SYS_rt_sigsuspend,
        SYS_rt_sigtimedwait, SYS_epoll_wait, SYS_clock_nanosleep, SYS_pselect6, SYS_ppoll, SYS_epoll_pwait,
        SYS_accept4,   SYS_recvmmsg,     SYS_epoll_pwait2,
    };
    for (size_t i = 0; i < sizeof waits / sizeof *waits; i++)
        if (number == waits[i])
            return true;
    return false;
}

/* The system call the thread waits in, from /proc: -1 when it runs or
 * waits elsewhere. */
static long waiting_in(pid_t pid, pid_t tid)
{
    char path[64], text[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    FILE *file = fopen(path, "re");
    if (!file)
        return -1;
    if (!fgets(text, sizeof text, file))
        text[0] = '\0';
    fclose(file);
    char *end;
    long number = strtol(text, &end, 10);
    return end == text ? -1 : number;
}

pid_t thread_at_safe_point(pid_t pid)
{
    if (safe_call(waiting_in(pid, pid)))
        return pid;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (!tasks)
        return -1;
    pid_t found = 0;
    for (struct dirent *entry; !found && (entry = readdir(tasks));) {
        pid_t tid = atoi(entry->d_name);
        if (tid > 0 && safe_call(waiting_in(pid, tid)))
            found = tid;
    }
    closedir(tasks);
    return found;
}

bool at_safe_point(const struct user_regs_struct *regs)
{
    long result = (long)regs->rax;
    return safe_call((long)regs->orig_rax) &&
           (result == -EINTR || (result <= -ERESTARTSYS && result >= -ERESTART_RESTARTBLOCK));
}

/* The first number after "Name:\t" in /proc/PID/status, or -1. */
static long status_number(pid_t pid, const char *name)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *status = fopen(path, "re");
    if (!status)
        return -1;
    long value = -1;
    size_t length = strlen(name);
    while (fgets(line, sizeof line, status))
        if (!strncmp(line, name, length) && line[length] == ':') {
            value = strtol(line + length + 1, NULL, 10);
            break;
        }
    fclose(status);
    return value;
}

static void program_name(pid_t pid, char *name, size_t capacity)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *comm = fopen(path, "re");
    name[0] = '\0';
    if (comm) {
        if (fgets(name, (int)capacity, comm))
            name[strcspn(name, "\n")] = '\0';
        fclose(comm);
    }
}

void ptrace_refusal(pid_t pid, int error, char *why, size_t why_size)
{
    if (error == ESRCH) {
        snprintf(why, why_size, "no such process");
        return;
    }
    if (error != EPERM) {
        snprintf(why, why_size, "cannot trace it: %s", strerror(error));
        return;
    }
    long tracer = status_number(pid, "TracerPid");
    if (tracer > 0) {
        char name[64];
        program_name((pid_t)tracer, name, sizeof name);
        snprintf(why, why_size, "it is traced already, by process %ld (%s): a process has one tracer at a "
                 "time; end that one (a debugger, strace) first", tracer, name[0] ? name : "?");
        return;
    }
    long owner = status_number(pid, "Uid");
    if (geteuid() != 0 && owner >= 0 && owner != (long)geteuid()) {
        snprintf(why, why_size, "it belongs to another user (uid %ld): run mprof attach as that user, or as root",
                 owner);
        return;
    }
    FILE *yama = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int scope = 0;
    if (yama) {
        if (fscanf(yama, "%d", &scope) != 1)
            scope = 0;
        fclose(yama);
    }
    if (scope > 0) {
        snprintf(why, why_size, "ptrace is not permitted: kernel.yama.ptrace_scope is %d, which lets a process "
                 "trace %s; as root, set it to 0 (sysctl kernel.yama.ptrace_scope=0), or run mprof attach as "
                 "root", scope, scope == 1 ? "only its own children" : scope == 2 ? "only as root" : "nothing");
        return;
    }
    snprintf(why, why_size, "ptrace is not permitted here (a container without CAP_SYS_PTRACE, or a seccomp "
             "filter): run the container with --cap-add=SYS_PTRACE, or start the program under mprof run");
}

bool shadow_stack_enabled(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *status = fopen(path, "re");
    if (!status)
        return false;
    bool enabled = false;
    while (!enabled && fgets(line, sizeof line, status))
        enabled = !strncmp(line, "x86_Thread_features:", 20) && strstr(line, "shstk");
    fclose(status);
    return enabled;
}
