/* Naming a data file, and creating and renaming it so that a reader never
 * sees half of one and nothing is overwritten that should not be. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* Whether to say a failure: the first of the process's own files only.  A
 * viewer's answer that cannot be written is the viewer's to notice (it gets
 * no answer): a request left behind by a killed viewer, naming a directory
 * gone since, must neither reach the program's stderr nor use up the one
 * line the process's own data file's failure gets. */
static bool say_failure(const struct output *output)
{
    return !output->quiet && log_first_failure();
}

static size_t append(char *to, size_t used, size_t capacity, const char *text)
{
    size_t length = strlen(text);
    if (used + length >= capacity)
        length = capacity - 1 - used;
    memcpy(to + used, text, length);
    to[used + length] = '\0';
    return used + length;
}

/* %p is the pid and %% a percent sign; without %p, every process but the
 * root gets .PID appended. */
void output_name(struct output *output, const char *pattern, pid_t pid, bool is_root)
{
    output->chosen = true;
    char pid_text[24];
    format_u64(pid_text, (unsigned long long)pid);
    size_t capacity = sizeof output->path, used = 0;
    output->path[0] = '\0';
    bool has_pid = false;
    for (const char *c = pattern; *c && used < capacity - 1; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            used = append(output->path, used, capacity, pid_text);
            has_pid = true;
            c++;
        } else {
            if (c[0] == '%' && c[1] == '%')
                c++;
            output->path[used++] = *c;
            output->path[used] = '\0';
        }
    }
    if (!has_pid && !is_root) {
        used = append(output->path, used, capacity, ".");
        append(output->path, used, capacity, pid_text);
    }
    output->replace = is_root && !has_pid;
}

void output_append(struct output *output, const char *text)
{
    append(output->path, strlen(output->path), sizeof output->path, text);
}

int output_above_standard(int fd)
{
    if (fd > STDERR_FILENO)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    close(fd);
    return moved;
}

int output_open(struct output *output, const char *pattern, pid_t pid, bool is_root)
{
    if (!output->chosen)
        output_name(output, pattern, pid, is_root);
    char pid_text[24];
    format_u64(pid_text, (unsigned long long)pid);
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        char attempt_text[24];
        size_t used = append(output->temporary, 0, sizeof output->temporary, output->path);
        used = append(output->temporary, used, sizeof output->temporary, ".tmp.");
        used = append(output->temporary, used, sizeof output->temporary, pid_text);
        used = append(output->temporary, used, sizeof output->temporary, ".");
        append(output->temporary, used, sizeof output->temporary, format_u64(attempt_text, attempt));
        int fd = open(output->temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if ((fd = output_above_standard(fd)) >= 0)
                return fd;
            int error = errno;
            unlink(output->temporary);
            errno = error;
        }
        if (errno != EEXIST) {
            if (say_failure(output))
                log_line("cannot create ", output->temporary, ": ", strerrordesc_np(errno), NULL);
            return -1;
        }
    }
    if (say_failure(output))
        log_line("cannot create a temporary file beside ", output->path, NULL);
    return -1;
}

int output_reopen(const struct output *output)
{
    int fd = open(output->temporary, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    return fd >= 0 ? output_above_standard(fd) : -1;
}

/* rename without replacing: renameat2 where the filesystem has it, else
 * link and unlink, which fails the same way on an existing name. */
static int rename_exclusive(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(from, to) != 0)
        return -1;
    unlink(from);
    return 0;
}

/* Whether a finished file may be renamed over path: nothing is there, or
 * a regular file, or a symbolic link (replaced, never followed).  A device,
 * FIFO, socket or directory named as the output is left as it is. */
static bool replaceable(const char *path)
{
    struct stat there;
    if (lstat(path, &there) != 0)
        return true;
    return S_ISREG(there.st_mode) || S_ISLNK(there.st_mode);
}

bool output_commit(struct output *output, int fd, bool ok)
{
    if (close(fd) != 0)
        ok = false;
    if (!ok) {
        unlink(output->temporary);
        return false;
    }
    if (output->named || output->replace) {
        if (!output->named && !replaceable(output->path)) {
            if (say_failure(output))
                log_line("cannot write ", output->path,
                         ": it is not a regular file, and only a regular file is replaced", NULL);
            unlink(output->temporary);
            return false;
        }
        if (rename(output->temporary, output->path) == 0) {
            output->named = true;
            return true;
        }
    } else {
        char base[sizeof output->path];
        memcpy(base, output->path, sizeof base);
        for (unsigned suffix = 0; suffix < 1000; suffix++) {
            if (suffix) {
                char suffix_text[24];
                size_t used = append(output->path, 0, sizeof output->path, base);
                used = append(output->path, used, sizeof output->path, ".");
                append(output->path, used, sizeof output->path, format_u64(suffix_text, suffix));
            }
            if (rename_exclusive(output->temporary, output->path) == 0) {
                output->named = true;
                return true;
            }
            if (errno != EEXIST)
                break;
        }
    }
    if (say_failure(output))
        log_line("cannot write ", output->path, ": ", strerrordesc_np(errno), NULL);
    unlink(output->temporary);
    return false;
}
