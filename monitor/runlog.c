/* Records for mprof run (see runlog.h).  The file DIR/PID-START (START: the
 * image's start time in nanoseconds) holds records of two NUL-terminated
 * fields each: "start" and the executable, "final", "checkpoint",
 * "snapshot" or "trace" and a file's path, "exec" with an empty path, and
 * "problem" with a line the monitor would otherwise print (log.h).  Each
 * record is one write(2) with O_APPEND, so threads cannot interleave. */
#include "runlog.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "state.h"

/* Chosen by runlog_start while the image or fork child has one thread. */
static char record_path[MPROF_PATH_MAX + 64];

static void add_record(const char *kind, const char *value)
{
    if (!record_path[0])
        return;
    char record[MPROF_PATH_MAX + 32];
    size_t kind_size = strlen(kind) + 1, value_size = strlen(value) + 1;
    if (kind_size + value_size > sizeof record)
        value_size = sizeof record - kind_size;
    memcpy(record, kind, kind_size);
    memcpy(record + kind_size, value, value_size);
    record[kind_size + value_size - 1] = '\0';
    int fd = open(record_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    ssize_t ignored = write(fd, record, kind_size + value_size);
    (void)ignored;
    close(fd);
}

static void add_problem(const char *line)
{
    add_record("problem", line);
}

void runlog_start(void)
{
    record_path[0] = '\0';
    log_set_sink(NULL);
    if (!monitor.options.run_dir[0])
        return;
    char pid[24], start[24];
    format_u64(pid, (unsigned long long)monitor.pid);
    format_u64(start, (unsigned long long)monitor.start_unix_ns);
    size_t used = strlen(monitor.options.run_dir);
    memcpy(record_path, monitor.options.run_dir, used);
    record_path[used++] = '/';
    for (const char *piece = pid; *piece;)
        record_path[used++] = *piece++;
    record_path[used++] = '-';
    for (const char *piece = start; *piece;)
        record_path[used++] = *piece++;
    record_path[used] = '\0';
    add_record("start", monitor.executable);
    log_set_sink(add_problem);
}

void runlog_wrote(const char *kind, const char *path)
{
    add_record(kind, path);
}

void runlog_exec(void)
{
    add_record("exec", "");
}
