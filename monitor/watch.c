/* Looking for a viewer's request, and the thread that answers (watch.h). */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"
#include "log.h"
#include "options.h"
#include "output.h"
#include "own_thread.h"

/* How often the request is looked at: one fstatat a tenth of a second
 * costs nothing a program could measure. */
#define LOOK_EVERY_NS 100000000u
/* After an answer, no look for this many times as long as it took to
 * write, so that a viewer costs a process whose files are slow to write at
 * most 2% of its time. */
#define SPACING_FACTOR 50
/* A request gone this long ends the answering thread: the viewer has left. */
#define GONE_NS 10000000000u
/* A request unchanged this long ends it too: the viewer was killed.  Longer
 * than mprof run --push's intervals (15 s by default), so that a pushed
 * process is answered each interval whether it allocates or not. */
#define IDLE_NS 60000000000u

/* Written by watch_start only, while one thread runs. */
static char request_path[64];
static pid_t watched_pid;
static watch_writer write_snapshot;
/* Coarse monotonic time of the next look from the hot path; UINT64_MAX
 * while a thread looks: whichever thread moves it there looks, and moves it
 * on. */
static atomic_uint_least64_t next_look_ns;
/* Whether the answering thread runs: set by the thread that starts it,
 * cleared by the thread itself as it ends. */
static atomic_bool answering;
/* What tells one request from another: any change to the file, or a new
 * file, changes one of these, whatever the clock says (the change time is
 * the kernel's own, which no one can set), so that a request dated in the
 * future does not hide the changes after it. */
struct request_id {
    dev_t device;
    ino_t inode;
    off_t size;
    struct timespec modified, changed;
};
/* The request last answered: written only by the answering thread, read by
 * the hot path's look while none runs. */
static struct request_id answered;

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void watch_start(pid_t pid, watch_writer writer)
{
    char pid_text[24];
    strcpy(request_path, "/tmp/mprof-watch.");
    strcat(request_path, format_u64(pid_text, (unsigned long long)pid));
    watched_pid = pid;
    write_snapshot = writer;
    memset(&answered, 0, sizeof answered);
    atomic_store(&answering, false); /* a fork child has no thread of its parent's */
    atomic_store(&next_look_ns, 0);
}

static struct request_id id_of(const struct stat *request)
{
    return (struct request_id){.device = request->st_dev,
                               .inode = request->st_ino,
                               .size = request->st_size,
                               .modified = request->st_mtim,
                               .changed = request->st_ctim};
}

static bool same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool same_request(const struct request_id *a, const struct request_id *b)
{
    return a->device == b->device && a->inode == b->inode && a->size == b->size &&
           same_time(a->modified, b->modified) && same_time(a->changed, b->changed);
}

enum request { REQUEST_NONE, REQUEST_ANSWERED, REQUEST_NEW };

/* Whether there is a request, a regular file of this user's (read_target
 * checks again what it opens), and whether it differs from the last
 * answered. */
static enum request look_for_request(void)
{
    struct stat request;
    if (fstatat(AT_FDCWD, request_path, &request, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(request.st_mode) ||
        request.st_uid != geteuid())
        return REQUEST_NONE;
    struct request_id id = id_of(&request);
    return same_request(&id, &answered) ? REQUEST_ANSWERED : REQUEST_NEW;
}

/* The file the request names: its first line, an absolute name.  Read
 * without following a symbolic link, and from a file of this user's only:
 * nobody else can have the process write. */
static bool read_target(char *target, size_t capacity, struct request_id *id)
{
    int fd = open(request_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || (fd = output_above_standard(fd)) < 0)
        return false;
    ssize_t length = -1;
    struct stat request;
    if (fstat(fd, &request) == 0 && S_ISREG(request.st_mode) && request.st_uid == geteuid()) {
        length = read(fd, target, capacity - 1);
        *id = id_of(&request);
    }
    close(fd);
    if (length <= 0)
        return false;
    target[length] = '\0';
    char *end = memchr(target, '\n', (size_t)length);
    if (end)
        *end = '\0';
    return target[0] == '/' && strlen(target) == (size_t)(end ? end - target : length);
}

static void *answer_requests(void *unused)
{
    (void)unused;
    uint64_t asked_ns = clock_ns(CLOCK_MONOTONIC), seen_ns = asked_ns;
    for (;;) {
        uint64_t wait = LOOK_EVERY_NS;
        char target[MPROF_PATH_MAX];
        enum request request = look_for_request();
        uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
        if (request != REQUEST_NONE)
            seen_ns = now_ns;
        if (request == REQUEST_NEW) {
            asked_ns = now_ns;
            struct request_id id;
            /* Answered once, written or not: a request naming a file that
             * cannot be written is not tried again until it changes. */
            if (read_target(target, sizeof target, &id)) {
                answered = id;
                write_snapshot(target);
                uint64_t took = clock_ns(CLOCK_MONOTONIC) - asked_ns;
                if (took > wait / SPACING_FACTOR)
                    wait = took * SPACING_FACTOR;
            }
        } else if (now_ns - seen_ns > GONE_NS || now_ns - asked_ns > IDLE_NS) {
            atomic_store(&answering, false);
            return NULL;
        }
        struct timespec pause = {.tv_sec = (time_t)(wait / 1000000000u), .tv_nsec = (long)(wait % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, &pause) == EINTR)
            ;
    }
}

static void start_answering(void)
{
    if (!atomic_exchange(&answering, true) && !own_thread_start(answer_requests))
        atomic_store(&answering, false);
}

MONITOR_TEXT void watch_tick(void)
{
    uint64_t due = atomic_load_explicit(&next_look_ns, memory_order_relaxed);
    if (clock_ns(CLOCK_MONOTONIC_COARSE) < due ||
        !atomic_compare_exchange_strong(&next_look_ns, &due, UINT64_MAX))
        return;
    int saved_errno = errno; /* a missing request is not the program's error */
    /* A vfork child shares the memory but not the request, and must not
     * start threads. */
    if (!atomic_load(&answering) && look_for_request() == REQUEST_NEW && getpid() == watched_pid)
        start_answering();
    atomic_store(&next_look_ns, clock_ns(CLOCK_MONOTONIC_COARSE) + LOOK_EVERY_NS);
    errno = saved_errno;
}
