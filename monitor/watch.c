/* Looking for a viewer's request, and the thread that answers (watch.h). */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"
#include "log.h"
#include "options.h"
#include "output.h"
#include "own_thread.h"

/* How often the request is looked for: two fstatat a tenth of a second
 * cost nothing a program could measure. */
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
/* The directories a request may be in: the user's own runtime directory
 * (or root's under /run), else the one the viewer makes in /tmp. */
#define PLACES 2

/* Written by watch_start only, while one thread runs: the request's
 * directories, most private first, and its name in each. */
static char directories[PLACES][40];
static char request_paths[PLACES][64];
static char request_name[32];
static pid_t watched_pid;
static watch_writer write_snapshot;
/* The credentials the process started with (kept by a fork child: its
 * parent's start is its start too), and whose files and directories are
 * trusted; written by the first watch_start only. */
static bool credentials_known;
static uid_t started_uids[3];
static gid_t started_gids[3];
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
    if (!credentials_known) {
        getresuid(&started_uids[0], &started_uids[1], &started_uids[2]);
        getresgid(&started_gids[0], &started_gids[1], &started_gids[2]);
        credentials_known = true;
    }
    /* Room enough: the longest uid and pid have 10 digits. */
    char uid_text[24], pid_text[24];
    format_u64(uid_text, (unsigned long long)started_uids[1]);
    strcpy(directories[0], started_uids[1] == 0 ? "/run/mprof" : "/run/user/");
    if (started_uids[1] != 0)
        strcat(directories[0], uid_text);
    strcat(strcpy(directories[1], "/tmp/mprof-"), uid_text);
    strcat(strcpy(request_name, "mprof-watch."), format_u64(pid_text, (unsigned long long)pid));
    for (unsigned place = 0; place < PLACES; place++)
        strcat(strcat(strcpy(request_paths[place], directories[place]), "/"), request_name);
    watched_pid = pid;
    write_snapshot = writer;
    memset(&answered, 0, sizeof answered);
    atomic_store(&answering, false); /* a fork child has no thread of its parent's */
    atomic_store(&next_look_ns, 0);
}

/* Answers go only to the user the process started as, and only while the
 * kernel would let that user read its memory: not once it has changed its
 * user or group (a daemon that dropped root), nor while it is not dumpable
 * (the kernel's mark of a process whose memory its user may not see). */
static bool may_answer(void)
{
    uid_t uids[3];
    gid_t gids[3];
    return getresuid(&uids[0], &uids[1], &uids[2]) == 0 && getresgid(&gids[0], &gids[1], &gids[2]) == 0 &&
           memcmp(uids, started_uids, sizeof uids) == 0 && memcmp(gids, started_gids, sizeof gids) == 0 &&
           prctl(PR_GET_DUMPABLE) == 1;
}

/* A directory only the user can change: no one else can plant, link,
 * replace or remove a request in it. */
static bool private_directory(const struct stat *directory)
{
    return S_ISDIR(directory->st_mode) && directory->st_uid == started_uids[1] &&
           (directory->st_mode & (S_IRWXG | S_IRWXO)) == 0;
}

/* A request: a regular file of the user's, with no other name (a hard
 * link made to a file elsewhere is not a request). */
static bool valid_request(const struct stat *request)
{
    return S_ISREG(request->st_mode) && request->st_uid == started_uids[1] && request->st_nlink == 1;
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

/* Whether there is a request the process may answer, in which of its
 * places, and whether it differs from the last answered.  By name, with no
 * descriptor (the hot path's look must not take one of the program's
 * numbers even briefly); read_request checks again what it opens. */
static enum request look_for_request(unsigned *place)
{
    for (unsigned at = 0; at < PLACES; at++) {
        struct stat request, directory;
        if (fstatat(AT_FDCWD, request_paths[at], &request, AT_SYMLINK_NOFOLLOW) != 0 || !valid_request(&request) ||
            fstatat(AT_FDCWD, directories[at], &directory, AT_SYMLINK_NOFOLLOW) != 0 ||
            !private_directory(&directory))
            continue;
        if (!may_answer())
            return REQUEST_NONE;
        *place = at;
        struct request_id id = id_of(&request);
        return same_request(&id, &answered) ? REQUEST_ANSWERED : REQUEST_NEW;
    }
    return REQUEST_NONE;
}

/* The second line that asks for the live blocks classified; any other is
 * ignored, as later versions may ask for more. */
#define CLASSIFY_LINE "classify"

/* The request's lines: the file to answer with (the first, an absolute
 * name), and whether the second asks for the blocks classified.  Read
 * through a descriptor of the directory, checked as look_for_request
 * checks it by name, without following a symbolic link. */
static bool read_request(unsigned place, char *target, size_t capacity, bool *classify, struct request_id *id)
{
    int directory_fd = open(directories[place], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (directory_fd < 0 || (directory_fd = output_above_standard(directory_fd)) < 0)
        return false;
    struct stat directory, request;
    int fd = -1;
    if (fstat(directory_fd, &directory) == 0 && private_directory(&directory))
        fd = openat(directory_fd, request_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(directory_fd);
    if (fd < 0 || (fd = output_above_standard(fd)) < 0)
        return false;
    ssize_t length = -1;
    if (fstat(fd, &request) == 0 && valid_request(&request)) {
        length = read(fd, target, capacity - 1);
        *id = id_of(&request);
    }
    close(fd);
    if (length <= 0)
        return false;
    target[length] = '\0';
    char *end = memchr(target, '\n', (size_t)length);
    const char *second = "";
    if (end) {
        *end = '\0';
        second = end + 1;
    }
    size_t name_length = strlen(target);
    *classify = strncmp(second, CLASSIFY_LINE, strlen(CLASSIFY_LINE)) == 0 &&
                (second[strlen(CLASSIFY_LINE)] == '\n' || second[strlen(CLASSIFY_LINE)] == '\0');
    return target[0] == '/' && name_length == (size_t)(end ? end - target : length) && name_length < MPROF_PATH_MAX;
}

static void *answer_requests(void *unused)
{
    (void)unused;
    uint64_t asked_ns = clock_ns(CLOCK_MONOTONIC), seen_ns = asked_ns;
    for (;;) {
        uint64_t wait = LOOK_EVERY_NS;
        /* Room for the name and the line after it. */
        char target[MPROF_PATH_MAX + sizeof CLASSIFY_LINE];
        unsigned place = 0;
        enum request request = look_for_request(&place);
        uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
        if (request != REQUEST_NONE)
            seen_ns = now_ns;
        if (request == REQUEST_NEW) {
            asked_ns = now_ns;
            struct request_id id;
            bool classify = false;
            /* Answered once, written or not: a request naming a file that
             * cannot be written is not tried again until it changes. */
            if (read_request(place, target, sizeof target, &classify, &id)) {
                answered = id;
                write_snapshot(target, classify);
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

static const struct own_thread answerer = {answer_requests, "mprof-watch"};

static void start_answering(void)
{
    if (!atomic_exchange(&answering, true) && !own_thread_start(&answerer))
        atomic_store(&answering, false);
}

MONITOR_TEXT void watch_tick(void)
{
    uint64_t due = atomic_load_explicit(&next_look_ns, memory_order_relaxed);
    if (clock_ns(CLOCK_MONOTONIC_COARSE) < due ||
        !atomic_compare_exchange_strong(&next_look_ns, &due, UINT64_MAX))
        return;
    int saved_errno = errno; /* a missing request is not the program's error */
    unsigned place;
    /* A vfork child shares the memory but not the request, and must not
     * start threads. */
    if (!atomic_load(&answering) && look_for_request(&place) == REQUEST_NEW && getpid() == watched_pid)
        start_answering();
    atomic_store(&next_look_ns, clock_ns(CLOCK_MONOTONIC_COARSE) + LOOK_EVERY_NS);
    errno = saved_errno;
}
