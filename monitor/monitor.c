/* The monitor's life: start, threads, fork, exec, dlclose, signals, exit. */
#include "monitor.h"
#include "mprof.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <sys/auxv.h>
#include <time.h>
#include <x86intrin.h>
#include <unistd.h>

#include "arena.h"
#include "checkpoint.h"
#include "leak_scan.h"
#include "live.h"
#include "log.h"
#include "modules.h"
#include "own_thread.h"
#include "real.h"
#include "paths.h"
#include "mapped.h"
#include "pools.h"
#include "prefixed.h"
#include "timeline.h"
#include "trace.h"
#include "unwind.h"
#include "watch.h"
#include "rules.h"
#include "runlog.h"
#include "signals.h"
#include "snapshot.h"
#include "state.h"

_Atomic int monitor_status = MONITOR_UNINITIALISED;
__thread struct monitor_tls monitor_tls __attribute__((tls_model("initial-exec")));
struct monitor_globals monitor;

/* Made once by the constructor; read-only afterwards. */
static pthread_key_t thread_exit_key;
static bool thread_exit_key_made;
/* The dump signal's handler posts it, the dump thread waits on it: no
 * descriptor that the program could close and reuse. */
static sem_t dump_requests;
/* Set as this process's final write starts, and as it ends (both reset in
 * a fork child). */
static atomic_bool finished, finish_done;

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void start_clocks(void)
{
    monitor.start_unix_ns = clock_ns(CLOCK_REALTIME);
    monitor.start_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
    monitor.start_tsc = __rdtsc();
}

/* Whether the dynamic loader was run as the program (ld.so PROGRAM): the
 * program then has a loader (PT_INTERP) but the kernel started none, so
 * AT_BASE is 0. */
static bool started_through_the_loader(void)
{
    const ElfW(Phdr) *headers = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    unsigned long count = getauxval(AT_PHNUM);
    for (unsigned long i = 0; headers && i < count; i++)
        if (headers[i].p_type == PT_INTERP)
            return getauxval(AT_BASE) == 0;
    return false;
}

/* The program's own file.  /proc/self/exe names it, but not without /proc,
 * nor when the loader was run as the program: then AT_EXECFN, which the
 * loader points at the program, taken from the start-up directory. */
static void find_executable(void)
{
    ssize_t length = readlink("/proc/self/exe", monitor.executable, sizeof monitor.executable - 1);
    monitor.executable[length > 0 ? length : 0] = '\0';
    if (length > 0 && !started_through_the_loader())
        return;
    const char *name = (const char *)getauxval(AT_EXECFN);
    size_t size = name ? strlen(name) : 0, used = 0;
    if (!size)
        return;
    if (name[0] != '/' && getcwd(monitor.executable, sizeof monitor.executable - size - 2)) {
        used = strlen(monitor.executable);
        monitor.executable[used++] = '/';
    }
    if (used + size < sizeof monitor.executable) {
        memcpy(monitor.executable + used, name, size + 1);
        return;
    }
    monitor.executable[0] = '\0';
}

/* The arguments glibc hands every constructor, NUL-separated as
 * /proc/self/cmdline has them, without needing /proc; the loader has
 * already taken its own off when it was run as the program. */
static void keep_command_line(int argc, char **argv)
{
    size_t size = 0;
    for (int i = 0; argv && i < argc && argv[i]; i++)
        size += strlen(argv[i]) + 1;
    char *copy = size ? region_map(size) : NULL;
    if (!copy)
        return;
    size_t used = 0;
    for (int i = 0; i < argc && argv[i]; i++) {
        size_t length = strlen(argv[i]) + 1;
        memcpy(copy + used, argv[i], length);
        used += length;
    }
    monitor.command_line = copy;
    monitor.command_line_size = (uint32_t)used;
}

static void fork_prepare(void)
{
    monitor_tls.busy++;
    mapped_fork_prepare(); /* its lock comes before the states' */
    thread_states_fork_prepare();
    trace_fork_prepare();
    paths_fork_prepare();
    pools_fork_prepare();
    block_map_fork_prepare();
    modules_fork_prepare();
    rules_fork_prepare();
    arena_fork_prepare();
}

static void fork_parent(void)
{
    arena_fork_parent();
    rules_fork_parent();
    modules_fork_parent();
    block_map_fork_parent();
    pools_fork_parent();
    paths_fork_parent();
    trace_fork_parent();
    thread_states_fork_parent();
    mapped_fork_parent();
    monitor_tls.busy--;
}

static void write_watched(const char *path, bool classify);
static void write_checkpoint(void);
static void thread_exit(void *state);
static void write_at_exit(void);

/* How many threads the process has, from /proc; 2 when it cannot tell. */
static unsigned threads_running(void)
{
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks)
        return 2;
    unsigned count = 0;
    for (struct dirent *entry; (entry = readdir(tasks));)
        count += entry->d_name[0] != '.';
    closedir(tasks);
    return count;
}

/* The child starts from zero: its file describes only what it does, and a
 * parent's file and its children's can be reduced together. */
static void fork_child(void)
{
    arena_fork_child();
    own_thread_fork_child();
    rules_fork_child();
    modules_fork_child();
    block_map_fork_child();
    pools_fork_child();
    mapped_fork_child();
    paths_fork_child();
    monitor.pid = getpid();
    trace_fork_child();
    thread_states_fork_child(monitor_tls.state);
    monitor.is_root = false;
    monitor.forked = true;
    atomic_store(&monitor.threads_started, false);
    atomic_store(&monitor.states_read_elsewhere, false);
    start_clocks();
    live_fork_child();
    atomic_store(&monitor.untracked_allocs, 0);
    atomic_store(&monitor.early_allocs, 0);
    atomic_store(&monitor.early_frees, 0);
    atomic_store(&finished, false);
    atomic_store(&finish_done, false);
    snapshot_forget_output();
    log_forget_failure();
    checkpoint_start(&monitor.options, monitor.start_monotonic_ns, monitor.pid, write_checkpoint);
    timeline_start(monitor.start_monotonic_ns);
    watch_start(monitor.pid, write_watched);
    if (monitor.options.follow_children)
        runlog_start();
    else
        atomic_store(&monitor_status, MONITOR_OFF);
    monitor_tls.busy--;
}

/* Before a thread of the monitor's own exists: it reads the threads'
 * states (a checkpoint, a viewer's answer, a dump), so from now on a thread
 * takes its state's lock with a locked instruction even while it is the
 * program's only one (record.c's lock_own). */
static void starting_own_thread(void)
{
    atomic_store(&monitor.states_read_elsewhere, true);
}

/* The monitor's own threads never record: what the C library allocates
 * and frees on them (its buffers at a thread's end) is not the program's. */
static void enter_own_thread(void)
{
    monitor_tls.own_thread = true;
    monitor_tls.busy = 1;
}

/* What every start does once the options are set: preloaded or attached. */
static void start_recording(void)
{
    mapped_monitor_library(unwind_library_function());
    own_thread_hooks(starting_own_thread, enter_own_thread);
    paths_init();
    monitor.pid = getpid();
    start_clocks();
    find_executable();
    checkpoint_start(&monitor.options, monitor.start_monotonic_ns, monitor.pid, write_checkpoint);
    timeline_start(monitor.start_monotonic_ns);
    watch_start(monitor.pid, write_watched);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Set by the dynamic loader to the initial stack: argc, argv and its NULL,
 * then the environment. */
extern void *__libc_stack_end;

/* A program's .preinit_array runs before the C library's initialiser sets
 * environ, from the array the kernel left on the initial stack: a monitor
 * started by a call from there would read no setting (MPROF_OUTPUT
 * ignored).  environ is pointed at that same array, as the C library is
 * about to point it; nothing changes for the program. */
static void environment_before_libc(void)
{
    if (environ || !__libc_stack_end)
        return;
    long *start = __libc_stack_end;
    environ = (char **)(start + 1 + start[0] + 1);
}

void monitor_init(void)
{
    int expected = MONITOR_UNINITIALISED;
    if (!atomic_compare_exchange_strong(&monitor_status, &expected, MONITOR_STARTING))
        return;
    int saved_errno = errno; /* dlsym's and /proc's failures are not the program's */
    monitor_tls.busy++;
    int status = MONITOR_ACTIVE;
    if (!real_functions_resolve(false) || getauxval(AT_SECURE))
        status = MONITOR_OFF; /* secure-execution programs are left alone */
    if (status == MONITOR_ACTIVE) {
        environment_before_libc();
        options_read(&monitor.options);
        bool glibc = real_allocator_is_glibc();
        monitor.block_headers = monitor.options.block_headers && glibc;
        if (!glibc)
            mapped_allocator_module((const void *)real.malloc);
        trace_enabled = monitor.options.trace[0] != '\0';
        start_recording();
    }
    monitor_tls.busy--;
    errno = saved_errno;
    atomic_store_explicit(&monitor_status, status, memory_order_release);
}

bool monitor_start_attached(const char *output)
{
    int expected = MONITOR_UNINITIALISED;
    if (!atomic_compare_exchange_strong(&monitor_status, &expected, MONITOR_STARTING))
        return false; /* attached already, or preloaded */
    int saved_errno = errno;
    monitor_tls.busy++;
    int status = real_functions_resolve(true) && !getauxval(AT_SECURE) ? MONITOR_ACTIVE : MONITOR_OFF;
    if (status == MONITOR_ACTIVE) {
        /* The process's environment was not set for the monitor: the
         * defaults, the file named, and no headers, since the blocks it
         * allocated before and will allocate after have none. */
        options_default(&monitor.options);
        size_t length = strlen(output);
        if (length < sizeof monitor.options.output - 32)
            memcpy(monitor.options.output, output, length + 1);
        monitor.options.follow_children = false;
        monitor.options.block_headers = false;
        monitor.block_headers = false;
        monitor.attached = true;
        monitor.is_root = true;
        /* The threads running now; those started later come through the
         * routed pthread_create (attach.c). */
        atomic_store(&monitor.threads_started, threads_running() > 1);
        start_recording();
        thread_exit_key_made = pthread_key_create(&thread_exit_key, thread_exit) == 0;
        monitor.lsan_suppressions = lsan_suppressions_find();
        atexit(write_at_exit);
    }
    monitor_tls.busy--;
    errno = saved_errno;
    atomic_store_explicit(&monitor_status, status, memory_order_release);
    return status == MONITOR_ACTIVE;
}

static void thread_exit(void *state)
{
    /* Destructors that run after this one may still free: their counts go
     * to the shared state, since this one may now be handed on. */
    monitor_tls.busy++;
    monitor_tls.state = thread_state_shared(monitor.options.stack_depth);
    monitor_tls.busy--;
    thread_state_release(state);
}

struct thread_state *monitor_claim_state(void)
{
    /* The first claim is the first allocating thread's; any later one means
     * another thread, in case it was started without pthread_create. */
    static atomic_bool claimed_before; /* atomic: any thread */
    if (atomic_exchange(&claimed_before, true))
        atomic_store(&monitor.threads_started, true);
    struct thread_state *state = thread_state_claim(monitor.options.stack_depth);
    monitor_tls.state = state;
    if (state && thread_exit_key_made)
        pthread_setspecific(thread_exit_key, state);
    return state;
}

static bool write_file(const struct snapshot_request *request)
{
    int saved_errno = errno;
    monitor_tls.busy++;
    bool written = snapshot_write(request);
    monitor_tls.busy--;
    errno = saved_errno;
    return written;
}

/* The trace's end, with the guard up: zstd and the file calls must not be
 * recorded. */
static void trace_finish_guarded(bool bounded)
{
    int saved_errno = errno;
    monitor_tls.busy++;
    trace_finish(bounded);
    monitor_tls.busy--;
    errno = saved_errno;
}

void monitor_finish(int end_signal, const struct leak_caller *caller)
{
    /* A vfork child shares the parent's memory and must not touch it. */
    if (getpid() != monitor.pid)
        return;
    if (atomic_load(&monitor_status) != MONITOR_ACTIVE && !atomic_load(&finished))
        return;
    if (atomic_exchange(&finished, true)) {
        /* Another thread is writing it: a second fatal signal must not end
         * the process half-way.  Bounded, in case that thread is this one. */
        for (unsigned i = 0; i < 20000 && !atomic_load(&finish_done); i++)
            sched_yield();
        return;
    }
    write_file(&(struct snapshot_request){.kind = SNAPSHOT_FINAL, .end_signal = end_signal, .classify = caller});
    trace_finish_guarded(end_signal != 0);
    /* Frees after this point would describe a file already written. */
    atomic_store(&monitor_status, MONITOR_OFF);
    atomic_store(&finish_done, true);
}

/* A checkpoint (checkpoint.h), from the monitor's writing thread. */
static void write_checkpoint(void)
{
    if (atomic_load(&monitor_status) == MONITOR_ACTIVE && !atomic_load(&finished))
        write_file(&(struct snapshot_request){.kind = SNAPSHOT_CHECKPOINT});
}

/* What a thread of the monitor's own passes as the caller of a scan: its
 * stack and registers are no roots, and leak_scan stops every thread of
 * the program's itself. */
static const struct leak_caller no_program_frames;

/* A viewer's snapshot (watch.h), from the monitor's answering thread; its
 * blocks classified only when the viewer asked, since the scan stops every
 * thread of the program's for a walk of the whole heap. */
static void write_watched(const char *path, bool classify)
{
    if (atomic_load(&monitor_status) == MONITOR_ACTIVE && !atomic_load(&finished) && getpid() == monitor.pid)
        write_file(&(struct snapshot_request){
            .kind = SNAPSHOT_WATCH, .path = path, .classify = classify ? &no_program_frames : NULL});
}

static void write_at_exit(void)
{
    struct leak_caller caller;
    LEAK_CALLER_INIT(&caller);
    /* The frames of the C library's exit path hold, in the words they never
     * wrote, what earlier calls left there: memcheck, which knows them
     * undefined, skips them, and so does the scan. */
    monitor_tls.busy++;
    uintptr_t program_stack = unwind_program_stack();
    monitor_tls.busy--;
    if (program_stack > caller.stack_from)
        caller.stack_from = program_stack;
    monitor_finish(0, &caller);
}

/* A snapshot classifies the blocks live so far too, every program thread
 * stopped for the scan: a server's lost blocks, found while it runs. */
static void write_on_demand(const struct leak_caller *caller)
{
    if (atomic_load(&monitor_status) == MONITOR_ACTIVE && getpid() == monitor.pid)
        write_file(&(struct snapshot_request){.kind = SNAPSHOT_ON_DEMAND, .classify = caller});
}

static void request_dump(int signal_number)
{
    (void)signal_number;
    int saved_errno = errno;
    sem_post(&dump_requests);
    errno = saved_errno;
}

static void *dump_thread(void *unused)
{
    (void)unused;
    for (;;) {
        if (sem_wait(&dump_requests) == 0)
            write_on_demand(&no_program_frames);
    }
    return NULL;
}

static const struct own_thread dumper = {dump_thread, "mprof-dump"};

static void start_dump_thread(int signal_number)
{
    /* The dump thread must not take the signal, or it could block itself:
     * own threads block every signal. */
    if (sem_init(&dump_requests, 0, 0) != 0 || !own_thread_start(&dumper))
        return;
    struct sigaction action = {.sa_handler = request_dump, .sa_flags = SA_RESTART};
    sigemptyset(&action.sa_mask);
    signals_install_own(signal_number, &action);
}

/* Removes the monitor from LD_PRELOAD in place, so that exec'd programs run
 * unprofiled when children are not followed. */
static void stop_following(void)
{
    Dl_info self;
    char *preload = getenv("LD_PRELOAD");
    if (!preload || !dladdr((void *)stop_following, &self) || !self.dli_fname)
        return;
    const char *name = strrchr(self.dli_fname, '/');
    name = name ? name + 1 : self.dli_fname;
    char *out = preload;
    for (char *word = preload; *word;) {
        size_t length = strcspn(word, ": ");
        const char *base = memrchr(word, '/', length);
        base = base ? base + 1 : word;
        bool ours = (size_t)(word + length - base) == strlen(name) && !memcmp(base, name, strlen(name));
        if (!ours) {
            if (out != preload)
                *out++ = ':';
            memmove(out, word, length);
            out += length;
        }
        word += length;
        word += strspn(word, ": ");
    }
    *out = '\0';
}

/* Whether mprof attach loaded this library with dlopen into a process that
 * had started: it loads a copy from a directory of its own, named so
 * (src/mprof/attach/inject.py).  Which malloc a lookup finds cannot tell:
 * a program built without -fPIE has every lookup of malloc give its own PLT
 * entry. */
static bool loaded_by_attach(void)
{
    Dl_info own;
    return dladdr((void *)loaded_by_attach, &own) && own.dli_fname && strstr(own.dli_fname, "/mprof-attach-");
}

/* MPROF_ALLOCATOR_PREFIX: a second allocator's calls routed to the monitor,
 * or why they cannot be, in the file (a refused setting, which the report
 * explains) and in mprof run's words after the program. */
static void route_prefixed_allocator(const char *prefix)
{
    enum prefixed_outcome outcome = prefixed_route(prefix);
    if (outcome == PREFIXED_ROUTED)
        return;
    bool in_executable = outcome == PREFIXED_IN_EXECUTABLE;
    char value[sizeof monitor.options.allocator_prefix + 16];
    strcpy(value, prefix);
    strcat(value, in_executable ? ":executable" : ":absent");
    options_refuse(&monitor.options, "MPROF_ALLOCATOR_PREFIX", value);
    if (!monitor.options.run_dir[0])
        return; /* the program's stderr is not the monitor's */
    if (in_executable)
        log_line(prefix, "malloc is linked into the executable itself, whose calls mprof cannot route: "
                 "the profile holds none of its blocks", NULL);
    else
        log_line("no library of the process defines ", prefix, "malloc and ", prefix,
                 "free: the profile holds none of their blocks", NULL);
}

__attribute__((constructor)) static void monitor_constructor(int argc, char **argv, char **envp)
{
    (void)envp;
    int saved_errno = errno;
    if (atomic_load(&monitor_status) == MONITOR_UNINITIALISED && loaded_by_attach()) {
        /* Loaded by mprof attach: nothing starts until mprof_attach. */
        keep_command_line(argc, argv);
        errno = saved_errno;
        return;
    }
    monitor_init();
    if (atomic_load(&monitor_status) != MONITOR_ACTIVE)
        return;
    monitor_tls.busy++;
    keep_command_line(argc, argv);
    monitor.lsan_suppressions = lsan_suppressions_find();
    /* The first process of a run writes FILE, the others FILE.PID.  mprof
     * run names the first process in MPROF_ROOT_PID before it execs the
     * program; a process started some other way with the variable unset is
     * the first, and sets it so that what it starts (system and popen
     * included) is not. */
    const char *root = getenv("MPROF_ROOT_PID");
    if (!root) {
        char pid[24];
        monitor.is_root = true;
        setenv("MPROF_ROOT_PID", format_u64(pid, (unsigned long long)monitor.pid), 1);
    } else {
        char pid[24];
        monitor.is_root = !strcmp(root, format_u64(pid, (unsigned long long)monitor.pid));
    }
    if (!monitor.options.follow_children)
        stop_following();
    thread_exit_key_made = pthread_key_create(&thread_exit_key, thread_exit) == 0;
    if (monitor_tls.state && thread_exit_key_made)
        pthread_setspecific(thread_exit_key, monitor_tls.state);
    runlog_start();
    if (monitor.options.allocator_prefix[0])
        route_prefixed_allocator(monitor.options.allocator_prefix);
    atexit(write_at_exit);
    at_quick_exit(write_at_exit);
    signals_watch(monitor.options.dump_signal);
    if (monitor.options.dump_signal)
        start_dump_thread(monitor.options.dump_signal);
    monitor_tls.busy--;
    errno = saved_errno;
}

void monitor_before_exec(void)
{
    if (atomic_load(&monitor_status) == MONITOR_UNINITIALISED)
        monitor_init();
    /* A vfork child shares the parent's memory and must not touch it. */
    if (atomic_load(&monitor_status) == MONITOR_ACTIVE && getpid() == monitor.pid &&
        !write_file(&(struct snapshot_request){.kind = SNAPSHOT_FINAL, .if_active = true}))
        runlog_exec();
    if (atomic_load(&monitor_status) == MONITOR_ACTIVE && getpid() == monitor.pid)
        trace_finish_guarded(false);
}

char *const *monitor_exec_environment(char *const *envp)
{
    static const char marker[] = "MPROF_ROOT_PID=";
    static const char not_root[] = "MPROF_ROOT_PID=0";
    if (atomic_load(&monitor_status) != MONITOR_ACTIVE || !envp || getpid() != monitor.pid)
        return envp;
    /* The new image keeps this pid, so it must be told it is not the first
     * process; a custom environment without the variable needs it too. */
    size_t count = 0, found = SIZE_MAX;
    for (; envp[count]; count++)
        if (!strncmp(envp[count], marker, sizeof marker - 1))
            found = count;
    if (found != SIZE_MAX && !monitor.is_root)
        return envp;
    /* Lost only if the exec fails, once. */
    char **copy = region_map((count + 2) * sizeof(char *));
    if (!copy)
        return envp;
    memcpy(copy, envp, count * sizeof(char *));
    if (found == SIZE_MAX)
        copy[count++] = (char *)not_root;
    else
        copy[found] = (char *)not_root;
    copy[count] = NULL;
    return copy;
}

void monitor_before_dlclose(void)
{
    if (atomic_load(&monitor_status) != MONITOR_ACTIVE)
        return;
    monitor_tls.busy++;
    modules_note_loaded(monitor.executable);
    monitor_tls.busy--;
}

void monitor_after_dlclose(void)
{
    /* The unloaded code's addresses may be given to other code. */
    rules_forget();
    if (atomic_load(&monitor_status) != MONITOR_ACTIVE)
        return;
    monitor_tls.busy++;
    modules_note_unloaded(monitor.executable);
    monitor_tls.busy--;
}

EXPORT void mprof_dump(void)
{
    struct leak_caller caller;
    LEAK_CALLER_INIT(&caller);
    write_on_demand(&caller);
}
