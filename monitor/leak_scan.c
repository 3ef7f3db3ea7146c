/* Runs the leak scan: which memory is a root, which blocks there are, and
 * in what order, since nothing may move while they are read.
 *
 * The roots are memcheck's: the writable segments of each loaded object
 * (but the monitor's own library, whose tables are no program's), each
 * thread's stack from its stack pointer (and the 128 bytes below it that a
 * leaf function may use), its registers, the mapping of its thread pointer
 * (the main thread's TCB and static TLS lie apart from its stack; dynamic
 * TLS blocks are malloc'ed, reached from there), the regions the program
 * mapped itself, and every other anonymous mapping but the heaps.  The
 * monitor's own threads run on its own memory and are no roots. */
#include "leak_scan.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "block_map.h"
#include "heap_walk.h"
#include "mapped.h"
#include "memory_map.h"
#include "paths.h"
#include "pools.h"
#include "reach.h"
#include "real.h"
#include "state.h"
#include "world.h"

#define RED_ZONE 128u
#define PAGE 4096u
/* A thread pointer in a mapping larger than this (a heap) is no TCB's
 * mapping of its own: only the words around it are scanned. */
#define TLS_MAPPING_MAX (64u << 20)
#define TLS_WINDOW (64u * 1024)

struct range {
    uintptr_t start, end;
    bool libc; /* a writable segment of the C library's */
};

struct ranges {
    struct range *items;
    size_t count, room;
};

static void add_range(struct ranges *ranges, uintptr_t start, uintptr_t end, bool libc)
{
    if ((ranges->count + 1) * sizeof(struct range) > ranges->room) {
        size_t room = ranges->room ? 2 * ranges->room : 4096;
        void *grown = ranges->items ? region_grow(ranges->items, ranges->room, room) : region_map(room);
        if (!grown)
            return;
        ranges->items = grown;
        ranges->room = room;
    }
    ranges->items[ranges->count++] = (struct range){start, end, libc};
}

struct module_search {
    struct ranges *ranges;
    uintptr_t own;  /* an address in the monitor's library */
    uintptr_t libc; /* the C library's base */
};

static int writable_segments(struct dl_phdr_info *module, size_t size, void *data)
{
    (void)size;
    struct module_search *search = data;
    bool own = false;
    for (ElfW(Half) i = 0; i < module->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &module->dlpi_phdr[i];
        uintptr_t start = module->dlpi_addr + segment->p_vaddr;
        if (segment->p_type == PT_LOAD && search->own >= start && search->own < start + segment->p_memsz)
            own = true;
    }
    /* Linked into the program, the monitor's globals share its segments:
     * they hold no block of the program's, and stay. */
    if (own && module->dlpi_name && module->dlpi_name[0])
        return 0;
    for (ElfW(Half) i = 0; i < module->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &module->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_W))
            continue;
        uintptr_t start = module->dlpi_addr + segment->p_vaddr;
        add_range(search->ranges, start, start + segment->p_memsz, module->dlpi_addr == search->libc);
    }
    return 0;
}

/* [from, to) of a mapping that holds large blocks' chunks: the memory
 * around them (none, but their pages' slack, where they fill it).  Each
 * chunk is whole pages, its block in the first. */
static void scan_around_chunks(struct reach *reach, uintptr_t from, uintptr_t to)
{
    uintptr_t block_start, block_end;
    while (from < to && reach_next_block(reach, from, to, &block_start, &block_end)) {
        reach_scan_root(reach, from, block_start & ~(uintptr_t)(PAGE - 1));
        from = (block_end + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    }
    reach_scan_root(reach, from, to);
}

/* Scans what of [start, end) is mapped readable now, and not the
 * monitor's (its arena's, or the scan's own), nor a block. */
static void scan_readable(struct reach *reach, const struct memory_map *map, uintptr_t start, uintptr_t end)
{
    for (size_t i = 0; i < map->count && start < end; i++) {
        const struct mapping *mapping = &map->mappings[i];
        if (mapping->end <= start || mapping->start >= end)
            continue;
        if (!mapping->readable || mapping->own)
            continue;
        uintptr_t from = start > mapping->start ? start : mapping->start;
        uintptr_t to = end < mapping->end ? end : mapping->end;
        if (mapping->chunks)
            scan_around_chunks(reach, from, to);
        else
            reach_scan_root(reach, from, to);
    }
}

/* A writable segment, but the main arena's state in the C library's: the
 * allocator's own pointers, as LeakSanitizer leaves its allocator's out. */
static void scan_module(struct reach *reach, const struct memory_map *map, const struct range *segment,
                        uintptr_t main_top)
{
    size_t arena_size;
    uintptr_t arena = segment->libc ? heap_main_arena(segment->start, segment->end, main_top, &arena_size) : 0;
    if (!arena) {
        scan_readable(reach, map, segment->start, segment->end);
        return;
    }
    scan_readable(reach, map, segment->start, arena);
    scan_readable(reach, map, arena + arena_size, segment->end);
}

struct region_scan {
    struct reach *reach;
    const struct memory_map *map;
};

static void scan_region(void *context, uintptr_t start, uintptr_t end)
{
    struct region_scan *scan = context;
    scan_readable(scan->reach, scan->map, start, end);
}

/* A thread's stack from sp, and its TLS. */
static void scan_thread(struct reach *reach, const struct memory_map *map, uintptr_t sp, uintptr_t thread_pointer)
{
    const struct mapping *stack = memory_map_find(map, sp);
    if (stack && !stack->heap) {
        uintptr_t from = sp - RED_ZONE > stack->start && sp > RED_ZONE ? sp - RED_ZONE : stack->start;
        scan_readable(reach, map, from, stack->end);
    }
    const struct mapping *tls = memory_map_find(map, thread_pointer);
    if (!tls || tls == stack)
        return;
    if (tls->heap || tls->end - tls->start > TLS_MAPPING_MAX) {
        uintptr_t from = thread_pointer - tls->start > TLS_WINDOW ? thread_pointer - TLS_WINDOW : tls->start;
        uintptr_t to = tls->end - thread_pointer > 4096 ? thread_pointer + 4096 : tls->end;
        scan_readable(reach, map, from, to);
    } else {
        scan_readable(reach, map, tls->start, tls->end);
    }
}

static uintptr_t own_thread_pointer(void)
{
    uintptr_t pointer;
    __asm__("mov %%fs:0, %0" : "=r"(pointer));
    return pointer;
}

/* Whether mapping holds the stack pointer of a thread scanned from it. */
static bool live_stack(const struct mapping *mapping, const struct leak_caller *caller, const struct world *world)
{
    if (caller->stack_from >= mapping->start && caller->stack_from < mapping->end)
        return true;
    for (size_t i = 0; i < world->count; i++)
        if (world->threads[i].stack_pointer >= mapping->start && world->threads[i].stack_pointer < mapping->end)
            return true;
    return false;
}

/* The other anonymous memory, as memcheck scans all of it: the stacks
 * glibc keeps of threads that ended (their TLS blocks hang from them),
 * the threads' that could not be stopped (whole), memory the loader and
 * libraries mapped with system calls of their own.  Not the live stacks,
 * scanned from their stack pointers, the frames below them dead; not the
 * monitor's memory, nor the allocator's heaps, which hold the blocks,
 * unless heaps: where blocks from before an attach are in no list, their
 * words are roots, so that nothing they may point to is called lost. */
static void scan_anonymous(struct reach *reach, const struct memory_map *map, bool heaps,
                           const struct leak_caller *caller, const struct world *world)
{
    for (size_t i = 0; i < map->count; i++) {
        const struct mapping *mapping = &map->mappings[i];
        if (!mapping->readable || !mapping->writable || mapping->file || live_stack(mapping, caller, world))
            continue;
        uintptr_t block_start, block_end;
        if (heaps || mapping->chunks ||
            (!mapping->heap && !reach_next_block(reach, mapping->start, mapping->end, &block_start, &block_end)))
            scan_readable(reach, map, mapping->start, mapping->end);
    }
}

static void collect_block(void *context, uintptr_t start, uint64_t size, uint32_t record)
{
    /* A pool's backing is in no figure: its objects are the blocks. */
    if (record != BACKING_RECORD)
        reach_add(context, start, size, record);
}

static void collect_headed(void *context, uintptr_t start, uint64_t size, uint32_t record)
{
    if (record != BACKING_RECORD)
        reach_add_headed(context, start, size, record);
}

/* One block of kind into its record's figures, when the record is a path
 * of this file's. */
static void count_block(struct leak_scan *scan, const struct reach_block *block, unsigned kind)
{
    uint32_t record = reach_record(block);
    uint32_t index = record - scan->first_record;
    if (record < scan->first_record || index >= scan->record_count)
        return;
    scan->by_record[index][2 * kind]++;
    scan->by_record[index][2 * kind + 1] += reach_size(block);
}

static void tally(struct leak_scan *scan, const struct reach *reach)
{
    static const unsigned kind_of_state[] = {
        [REACH_UNREACHED] = MPROF_LEAK_DEFINITE,
        [REACH_INDIRECT] = MPROF_LEAK_INDIRECT,
        [REACH_POSSIBLE] = MPROF_LEAK_POSSIBLE,
        [REACH_REACHABLE] = MPROF_LEAK_REACHABLE,
    };
    for (size_t i = 0; i < reach->count; i++)
        count_block(scan, &reach->blocks[i], kind_of_state[reach->states[i]]);
    for (size_t i = 0; i < reach->outer_count; i++)
        count_block(scan, &reach->outer[i], MPROF_LEAK_REACHABLE);
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

bool leak_scan(struct leak_scan *scan, const struct leak_caller *caller, uint32_t first_record,
               uint32_t record_count)
{
    int saved_errno = errno;
    uint64_t started = now_ns();
    memset(scan, 0, sizeof *scan);
    scan->first_record = first_record;
    scan->record_count = record_count;
    scan->by_record_room = (record_count ? record_count : 1) * sizeof(*scan->by_record);
    scan->by_record = region_map(scan->by_record_room);
    struct ranges modules = {0};
    Dl_info libc;
    struct module_search search = {&modules, (uintptr_t)leak_scan,
                                   dladdr((const void *)exit, &libc) ? (uintptr_t)libc.dli_fbase : 0};
    /* Before the world stops: the loader's lock may be a stopped thread's
     * (dladdr takes it too); and after, nothing takes a lock of the
     * monitor's, nor maps memory through its arena (scan_memory.h). */
    dl_iterate_phdr(writable_segments, &search);
    bool glibc = real_allocator_is_glibc();
    struct world world;
    world_stop(&world);
    struct memory_map map;
    struct reach reach = {0};
    bool done = false;
    if (scan->by_record && memory_map_read(&map)) {
        bool locking = world.count == 0;
        /* The headers may hold the scan's marks only while no other code
         * can read them: every other thread stopped, no signal handled. */
        sigset_t all, previous;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &previous);
        reach.headers_in_use = world.unstopped == 0;
        uintptr_t main_top = 0;
        if (monitor.block_headers)
            heap_walk(&map, collect_headed, &reach, &main_top);
        block_map_each(locking, collect_block, &reach);
        pools_each_object(locking, collect_block, &reach);
        reach.glibc_chunks = glibc;
        if (reach_prepare(&reach, &map)) {
            for (size_t i = 0; i < modules.count; i++)
                scan_module(&reach, &map, &modules.items[i], main_top);
            if (caller->stack_from) {
                scan_thread(&reach, &map, caller->stack_from, own_thread_pointer());
                reach_root_words(&reach, caller->registers, LEAK_CALLER_REGISTERS);
            }
            for (size_t i = 0; i < world.count; i++) {
                const struct stopped_thread *thread = &world.threads[i];
                const struct mapping *stack = memory_map_find(&map, thread->stack_pointer);
                if (stack && stack->own)
                    continue; /* the monitor's own */
                scan_thread(&reach, &map, thread->stack_pointer, thread->thread_pointer);
                reach_root_words(&reach, thread->registers, WORLD_REGISTERS);
            }
            struct region_scan regions = {&reach, &map};
            mapped_each_region(locking, scan_region, &regions);
            if (world.unstopped)
                scan->flags |= MPROF_LEAK_THREADS_UNSTOPPED;
            if (monitor.attached)
                scan->flags |= MPROF_LEAK_UNKNOWN_ROOTS;
            scan_anonymous(&reach, &map, monitor.attached, caller, &world);
            reach_finish(&reach);
            /* A block left unscanned for want of memory could make others
             * look lost: no figures rather than wrong ones. */
            done = !reach.out_of_memory;
        }
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
        memory_map_release(&map);
    }
    scan->threads_stopped = world.count;
    scan->threads_unstopped = world.unstopped;
    world_resume(&world);
    if (done)
        tally(scan, &reach);
    scan->root_bytes = reach.root_bytes;
    scan->block_bytes = reach.block_bytes;
    reach_release(&reach);
    if (modules.items)
        region_unmap(modules.items, modules.room);
    scan->ns = now_ns() - started;
    if (!done)
        leak_scan_release(scan);
    errno = saved_errno;
    return done;
}

void leak_scan_release(struct leak_scan *scan)
{
    if (scan->by_record)
        region_unmap(scan->by_record, scan->by_record_room);
    scan->by_record = NULL;
    scan->record_count = 0;
}
