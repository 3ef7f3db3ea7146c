/* Writes a data file (mprof(5)) from every thread's aggregates, without
 * calling the allocator: final, checkpoint and on-demand writes. */
#include "snapshot.h"

#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "arena.h"
#include "format.h"
#include "lock.h"
#include "leak_scan.h"
#include "live.h"
#include "log.h"
#include "modules.h"
#include "output.h"
#include "pools.h"
#include "radix.h"
#include "entry_table.h"
#include "runlog.h"
#include "state.h"
#include "timeline.h"
#include "writer.h"

/* Guards everything below: one write at a time (exit, exec, dump signal). */
static spinlock_t write_lock = SPINLOCK_INIT;
static struct output output;          /* the process's own file */
static struct output snapshot_output; /* the on-demand or watched snapshot being written */
static unsigned snapshots_written;
/* The final file was written: a checkpoint asked for before it, written
 * after it by the monitor's writing thread, must not replace it. */
static bool final_written;
static bool bounded_write; /* this write is a signal handler's: locks are taken with a bound */
static struct writer writer;

/* zlib's level for the sections (MPROF_FLAG_COMPRESSED): on GCC's cc1plus
 * (2.9 MB of sections), level 1 took 23 ms to 820 KB, 3 took 27 ms to
 * 757 KB; 6 took twice as long for 8% less. */
#define DEFLATE_LEVEL 3

/* Scratch memory for one write, released at its end. */
struct scratch_region {
    struct scratch_region *next;
    size_t size;
    size_t used;
};
static struct scratch_region *scratch;

static void *scratch_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (!scratch || scratch->used + size > scratch->size) {
        size_t region_size = size + sizeof(struct scratch_region) + 15 > 1024 * 1024
                                 ? size + sizeof(struct scratch_region) + 15
                                 : 1024 * 1024;
        struct scratch_region *region = region_map(region_size);
        if (!region)
            return NULL;
        region->next = scratch;
        region->size = region_size;
        region->used = (sizeof(*region) + 15) & ~(size_t)15;
        scratch = region;
    }
    void *object = (char *)scratch + scratch->used;
    scratch->used += size;
    return object;
}

static void scratch_release(void)
{
    while (scratch) {
        struct scratch_region *next = scratch->next;
        region_unmap(scratch, scratch->size);
        scratch = next;
    }
}

/* A path's counts summed over threads. */
struct path_total {
    bool used;
    uint32_t node_ref; /* in the file: 0 for the root, else its node's index + 1 */
    uint64_t allocs, frees;
    uint64_t bytes[MPROF_SIZE_CLASSES];
    uint64_t freed[MPROF_SIZE_CLASSES];
    uint64_t temporaries;
    int64_t peak_blocks, peak_bytes; /* summed over the threads' shares */
    uint64_t leak[MPROF_LEAK_FIELD_COUNT]; /* the leak kinds of its live blocks, when classified */
};

/* A node as the file has it. */
struct file_node {
    uint32_t up;          /* 0: the parent is the root; else this index minus the parent's */
    uint32_t address_ref; /* its address's index in the ADDR table, set by gather_addresses */
    uintptr_t address;
};

struct gathered {
    uint64_t counters[MPROF_SUM_FIELD_COUNT];
    uint64_t bin_allocs[MPROF_BIN_COUNT];
    uint64_t bin_frees[MPROF_BIN_COUNT];
    uint64_t bin_temporaries[MPROF_BIN_COUNT];
    int64_t bin_peak_blocks[MPROF_BIN_COUNT], bin_peak_bytes[MPROF_BIN_COUNT];
    uint64_t large_bytes, large_freed;
    uint64_t highest, highest_blocks; /* the most live bytes and blocks, read with the figures (read_highs) */
    uint64_t peak_tsc, peak_index; /* of the thread that set that peak */
    struct path_total *paths; /* by id - first_path */
    uint32_t path_capacity;
    uint32_t first_path;
    uint64_t path_count;
    struct timeline_point *points; /* memory over the run, oldest first */
    unsigned point_count;
    struct file_node *nodes; /* the tree's nodes on the paths written, parents first */
    uint64_t node_count;
    uint32_t node_room; /* the entries nodes and addresses were made with */
    uint64_t *addresses; /* every address the nodes hold, sorted, unique */
    size_t address_count;
    bool out_of_memory;
    struct leak_scan leaks;
    bool classified;
};

static void *region_array(uint64_t count, size_t entry_size)
{
    return region_map((count ? count : 1) * entry_size);
}

static struct path_total *path_slot(struct gathered *all, uint32_t id)
{
    uint32_t index = id - all->first_path;
    if (index >= all->path_capacity) {
        uint32_t capacity = all->path_capacity ? all->path_capacity : 4096;
        while (capacity <= index)
            capacity *= 2;
        size_t old_size = all->path_capacity * sizeof(struct path_total);
        size_t new_size = capacity * sizeof(struct path_total);
        void *grown = all->paths ? region_grow(all->paths, old_size, new_size) : region_map(new_size);
        if (!grown) {
            all->out_of_memory = true;
            return NULL;
        }
        all->paths = grown;
        all->path_capacity = capacity;
    }
    return &all->paths[index];
}

static void read_highs(struct gathered *all)
{
    all->highest = (uint64_t)__atomic_load_n(&live_ledger.highest_bytes, __ATOMIC_ACQUIRE);
    all->highest_blocks = (uint64_t)__atomic_load_n(&live_ledger.highest_blocks, __ATOMIC_RELAXED);
}

static void gather_thread(struct thread_state *state, void *context)
{
    struct gathered *all = context;
    for (unsigned i = 0; i < MPROF_SUM_FIELD_COUNT; i++)
        all->counters[i] += state->counters[i];
    for (unsigned i = 0; i < MPROF_BIN_COUNT; i++) {
        all->bin_allocs[i] += state->bin_allocs[i];
        all->bin_frees[i] += state->bin_frees[i];
        all->bin_temporaries[i] += state->bin_temporaries[i];
        int64_t bytes, blocks;
        peak_settled(&state->bin_peak[i], all->highest, &bytes, &blocks);
        all->bin_peak_bytes[i] += bytes;
        all->bin_peak_blocks[i] += blocks;
    }
    all->large_bytes += state->large_bytes;
    all->large_freed += state->large_freed;
    if (state->set_highest == all->highest) {
        if (state->set_pending)
            thread_state_stamp_peak(state);
        all->peak_tsc = state->set_tsc;
        all->peak_index = state->set_index;
    }
    for (uint32_t path = all->first_path; path < state->counts_capacity; path++) {
        const struct path_counts *counts = state->counts_by_path[path];
        if (!counts)
            continue;
        struct path_total *total = path_slot(all, path);
        if (!total)
            continue;
        total->used = true;
        total->allocs += counts->allocs;
        total->frees += counts->frees;
        for (unsigned c = 0; c < MPROF_SIZE_CLASSES; c++) {
            total->bytes[c] += counts->bytes[c];
            total->freed[c] += counts->freed[c];
        }
        total->temporaries += counts->temporaries;
        int64_t bytes, blocks;
        peak_settled(&counts->peak, all->highest, &bytes, &blocks);
        total->peak_bytes += bytes;
        total->peak_blocks += blocks;
    }
}

/* The nodes of the paths used, each with its ancestors, numbered parents
 * first (a node is made after its parent, so in the order of their ids).
 * Holds the registry while it reads the tree. */
/* Arrays of room entries each, their pages touched: made before the
 * registry is held, so that no new path waits on the writer's page faults. */
struct node_arrays {
    uint32_t *index; /* index[n - root]: 0 while node n is not written, else its file index + 1 */
    struct file_node *nodes;
    uint64_t *addresses;
    uint32_t room;
};

static bool map_node_arrays(struct node_arrays *arrays, uint32_t room)
{
    arrays->room = room;
    arrays->index = region_array(room, sizeof(uint32_t));
    arrays->nodes = region_array(room, sizeof(struct file_node));
    arrays->addresses = region_array(room, sizeof(uint64_t));
    if (!arrays->index || !arrays->nodes || !arrays->addresses)
        return false;
    memset(arrays->index, 0, room * sizeof(uint32_t));
    memset(arrays->nodes, 0, room * sizeof(struct file_node));
    memset(arrays->addresses, 0, room * sizeof(uint64_t));
    return true;
}

static void unmap_node_arrays(struct node_arrays *arrays)
{
    region_unmap(arrays->index, (arrays->room ? arrays->room : 1) * sizeof(uint32_t));
    region_unmap(arrays->nodes, (arrays->room ? arrays->room : 1) * sizeof(struct file_node));
    region_unmap(arrays->addresses, (arrays->room ? arrays->room : 1) * sizeof(uint64_t));
    memset(arrays, 0, sizeof *arrays);
}

/* Room for the nodes made while the arrays are made. */
#define NODES_TO_SPARE 4096u

static void gather_nodes(struct gathered *all, bool bounded)
{
    struct node_arrays arrays = {0};
    bool mapped = map_node_arrays(&arrays, paths_node_count() + NODES_TO_SPARE);
    if (!paths_hold(bounded)) {
        all->out_of_memory = true; /* as good as: the tree cannot be read */
        unmap_node_arrays(&arrays);
        return;
    }
    uint32_t root = paths_root();
    uint32_t span = paths_held_node_count() - root;
    if (!mapped || span > arrays.room) { /* more came than were spared for */
        unmap_node_arrays(&arrays);
        if (!map_node_arrays(&arrays, span)) {
            all->out_of_memory = true;
            paths_release();
            unmap_node_arrays(&arrays);
            return;
        }
    }
    uint32_t *index = arrays.index;
    for (uint32_t i = 0; i < all->path_capacity; i++) {
        if (!all->paths[i].used)
            continue;
        all->path_count++;
        for (uint32_t n = paths_held_node_of_path(all->first_path + i); n != root && !index[n - root];
             n = paths_held_node(n)->parent)
            index[n - root] = 1;
    }
    uint32_t next = 0;
    for (uint32_t n = 1; n < span; n++) {
        if (!index[n])
            continue;
        const struct path_node *node = paths_held_node(root + n);
        uint32_t parent = index[node->parent - root];
        arrays.nodes[next] = (struct file_node){.up = parent ? next + 1 - parent : 0, .address = node->address};
        arrays.addresses[next] = node->address;
        index[n] = ++next;
    }
    for (uint32_t i = 0; i < all->path_capacity; i++)
        if (all->paths[i].used)
            all->paths[i].node_ref = index[paths_held_node_of_path(all->first_path + i) - root];
    paths_release();
    all->node_count = next;
    all->nodes = arrays.nodes;
    all->addresses = arrays.addresses;
    all->node_room = arrays.room;
    region_unmap(arrays.index, (arrays.room ? arrays.room : 1) * sizeof(uint32_t));
}

/* The ADDR table: every address the nodes hold, sorted, unique; and each
 * node's index in it. */
static void gather_addresses(struct gathered *all)
{
    struct keyed_pair *items = scratch_alloc(all->node_count * sizeof(*items));
    struct keyed_pair *spare = scratch_alloc(all->node_count * sizeof(*spare));
    if (!items || !spare) {
        all->out_of_memory = true;
        return;
    }
    /* Each node's address, keyed, with the node's index. */
    for (uint64_t i = 0; i < all->node_count; i++)
        items[i] = (struct keyed_pair){all->nodes[i].address, i};
    items = radix_sort_pairs(items, spare, all->node_count);
    size_t unique = 0;
    for (uint64_t i = 0; i < all->node_count; i++) {
        if (unique == 0 || items[i].key != all->addresses[unique - 1])
            all->addresses[unique++] = items[i].key;
        all->nodes[items[i].value].address_ref = (uint32_t)(unique - 1);
    }
    all->address_count = unique;
}

static void section_header(uint32_t tag, uint64_t payload_size)
{
    writer_u32(&writer, tag);
    writer_u32(&writer, 0);
    writer_u64(&writer, payload_size);
}

static void emit_header(uint32_t flags, uint32_t end_signal, uint32_t section_count)
{
    writer_bytes(&writer, MPROF_MAGIC, MPROF_MAGIC_SIZE);
    writer_u16(&writer, MPROF_FORMAT_VERSION);
    writer_u16(&writer, MPROF_HEADER_SIZE);
    writer_u32(&writer, flags);
    writer_u32(&writer, monitor.options.stack_depth);
    writer_u32(&writer, monitor.options.leak_depth);
    writer_u32(&writer, (uint32_t)monitor.pid);
    writer_u32(&writer, (uint32_t)getppid());
    writer_u64(&writer, monitor.start_unix_ns);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    writer_u64(&writer, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec -
                            monitor.start_monotonic_ns);
    writer_u32(&writer, section_count);
    writer_u32(&writer, end_signal);
    writer_u64(&writer, 0);
}

static void emit_program(void)
{
    uint32_t executable_size = (uint32_t)strlen(monitor.executable);
    uint32_t suppressions_size = monitor.lsan_suppressions.size;
    uint32_t refused_size = monitor.options.refused_size;
    section_header(MPROF_TAG_PROGRAM,
                   16 + executable_size + monitor.command_line_size + suppressions_size + refused_size);
    writer_u32(&writer, executable_size);
    writer_bytes(&writer, monitor.executable, executable_size);
    writer_u32(&writer, monitor.command_line_size);
    writer_bytes(&writer, monitor.command_line, monitor.command_line_size);
    writer_u32(&writer, suppressions_size);
    if (suppressions_size)
        writer_bytes(&writer, monitor.lsan_suppressions.text, suppressions_size);
    writer_u32(&writer, refused_size);
    writer_bytes(&writer, monitor.options.refused, refused_size);
}

static void emit_modules(void)
{
    struct module *modules = modules_current(monitor.executable, bounded_write);
    uint64_t count = 0, size = 8;
    for (struct module *m = modules; m; m = m->next, count++)
        size += 8 * 3 + 1 + 1 + 2 + m->build_id_size + m->path_size;
    section_header(MPROF_TAG_MODULES, size);
    writer_u64(&writer, count);
    for (struct module *m = modules; m; m = m->next) {
        writer_u64(&writer, m->bias);
        writer_u64(&writer, m->start);
        writer_u64(&writer, m->end);
        writer_u8(&writer, m->unloaded ? 1 : 0);
        writer_u8(&writer, m->build_id_size);
        writer_u16(&writer, m->path_size);
        writer_bytes(&writer, m->build_id, m->build_id_size);
        writer_bytes(&writer, m->path, m->path_size);
    }
    modules_release_current();
}

/* The time of a peak set at tsc, from the start: cycles counted since the
 * start and converted at the rate they ran at since then. */
static uint64_t peak_ns(uint64_t tsc)
{
    if (!tsc)
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t elapsed_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec - monitor.start_monotonic_ns;
    uint64_t elapsed_tsc = __rdtsc() - monitor.start_tsc;
    if (!elapsed_tsc || tsc < monitor.start_tsc)
        return 0;
    return (uint64_t)((unsigned __int128)(tsc - monitor.start_tsc) * elapsed_ns / elapsed_tsc);
}

static uint64_t positive(int64_t value)
{
    return value > 0 ? (uint64_t)value : 0;
}

static void emit_summary(const struct gathered *all)
{
    uint64_t values[MPROF_SUM_FIELD_COUNT];
    memcpy(values, all->counters, sizeof values);
    values[MPROF_SUM_MAX_LIVE_OBJECTS] = all->highest_blocks;
    values[MPROF_SUM_MAX_LIVE_BYTES] = all->highest;
    values[MPROF_SUM_PEAK_NS] = peak_ns(all->peak_tsc);
    values[MPROF_SUM_PEAK_ALLOCS] = all->peak_index;
    values[MPROF_SUM_EARLY_ALLOCS] = atomic_load(&monitor.early_allocs);
    values[MPROF_SUM_EARLY_FREES] = atomic_load(&monitor.early_frees);
    values[MPROF_SUM_UNTRACKED_ALLOCS] = atomic_load(&monitor.untracked_allocs);
    values[MPROF_SUM_MONITOR_BYTES] = monitor_mapped_bytes();
    section_header(MPROF_TAG_SUMMARY, 8 + 8 * MPROF_SUM_FIELD_COUNT);
    writer_u64(&writer, MPROF_SUM_FIELD_COUNT);
    for (unsigned i = 0; i < MPROF_SUM_FIELD_COUNT; i++)
        writer_u64(&writer, values[i]);
}

static void emit_bins(const struct gathered *all)
{
    uint64_t count = 0;
    for (unsigned size = 0; size < MPROF_BIN_COUNT; size++)
        count += all->bin_allocs[size] || all->bin_frees[size];
    section_header(MPROF_TAG_BINS, 8 + count * 60);
    writer_u64(&writer, count);
    for (unsigned size = 0; size < MPROF_BIN_COUNT; size++) {
        if (!all->bin_allocs[size] && !all->bin_frees[size])
            continue;
        bool large = size == MPROF_BIN_LARGE;
        writer_u32(&writer, size);
        writer_u64(&writer, all->bin_allocs[size]);
        writer_u64(&writer, all->bin_frees[size]);
        writer_u64(&writer, large ? all->large_bytes : all->bin_allocs[size] * size);
        writer_u64(&writer, large ? all->large_freed : all->bin_frees[size] * size);
        writer_u64(&writer, all->bin_temporaries[size]);
        writer_u64(&writer, positive(all->bin_peak_blocks[size]));
        writer_u64(&writer, positive(all->bin_peak_bytes[size]));
    }
}

static void emit_addresses(const struct gathered *all)
{
    uint64_t size = 8;
    for (size_t i = 0; i < all->address_count; i++)
        size += uv_size(all->addresses[i] - (i ? all->addresses[i - 1] : 0));
    section_header(MPROF_TAG_ADDRESSES, size);
    writer_u64(&writer, all->address_count);
    for (size_t i = 0; i < all->address_count; i++)
        writer_uv(&writer, all->addresses[i] - (i ? all->addresses[i - 1] : 0));
}

/* Each emitter runs twice over its entries: once to size the payload for
 * the section header, once to write it. */
static uint64_t uv_sum(const uint64_t *values, unsigned count, bool write)
{
    uint64_t size = 0;
    for (unsigned i = 0; i < count; i++) {
        size += uv_size(values[i]);
        if (write)
            writer_uv(&writer, values[i]);
    }
    return size;
}

static uint64_t node_entries(const struct gathered *all, bool write)
{
    uint64_t size = 0;
    for (uint64_t i = 0; i < all->node_count; i++) {
        uint64_t entry[2] = {all->nodes[i].up, all->nodes[i].address_ref};
        size += uv_sum(entry, 2, write);
    }
    return size;
}

static void emit_nodes(const struct gathered *all)
{
    section_header(MPROF_TAG_NODES, 8 + node_entries(all, false));
    writer_u64(&writer, all->node_count);
    node_entries(all, true);
}

static uint64_t path_entries(const struct gathered *all, bool write)
{
    uint64_t size = 0;
    for (uint32_t i = 0; i < all->path_capacity; i++) {
        const struct path_total *path = &all->paths[i];
        if (!path->used)
            continue;
        uint64_t head[3] = {path->node_ref, path->allocs, path->frees};
        uint64_t tail[3] = {path->temporaries, positive(path->peak_blocks), positive(path->peak_bytes)};
        size += uv_sum(head, 3, write) + uv_sum(path->bytes, MPROF_SIZE_CLASSES, write) +
                uv_sum(path->freed, MPROF_SIZE_CLASSES, write) + uv_sum(tail, 3, write);
    }
    return size;
}

static void emit_paths(const struct gathered *all)
{
    section_header(MPROF_TAG_PATHS, 16 + path_entries(all, false));
    writer_u64(&writer, all->path_count);
    writer_u64(&writer, MPROF_PATH_FIELD_COUNT);
    path_entries(all, true);
}

static uint64_t point_entries(const struct gathered *all, bool write)
{
    uint64_t size = 0;
    for (unsigned i = 0; i < all->point_count; i++) {
        const struct timeline_point *point = &all->points[i];
        uint64_t entry[5] = {point->ns - (i ? all->points[i - 1].ns : 0), point->live_bytes, point->live_blocks,
                             point->resident_bytes, point->mapped_bytes};
        size += uv_sum(entry, 5, write);
    }
    return size;
}

static void emit_timeline(const struct gathered *all)
{
    section_header(MPROF_TAG_TIMELINE, 8 + point_entries(all, false));
    writer_u64(&writer, all->point_count);
    point_entries(all, true);
}

static void emit_pools(void)
{
    uint32_t count = pools_frame_count();
    uint64_t size = 8;
    for (uint32_t id = 0; id < count; id++) {
        uintptr_t creator;
        const char *name;
        pools_frame(id, &creator, &name);
        size += 8 + 2 + strlen(name);
    }
    section_header(MPROF_TAG_POOLS, size);
    writer_u64(&writer, count);
    for (uint32_t id = 0; id < count; id++) {
        uintptr_t creator;
        const char *name;
        pools_frame(id, &creator, &name);
        uint16_t name_size = (uint16_t)strlen(name);
        writer_u64(&writer, creator);
        writer_u16(&writer, name_size);
        writer_bytes(&writer, name, name_size);
    }
}

static bool has_leaks(const struct path_total *path)
{
    for (unsigned i = 0; i < MPROF_LEAK_FIELD_COUNT; i++)
        if (path->leak[i])
            return true;
    return false;
}

static uint64_t leak_entries(const struct gathered *all, bool write, uint64_t *count)
{
    uint64_t size = 0, index = 0;
    *count = 0;
    for (uint32_t i = 0; i < all->path_capacity; i++) {
        const struct path_total *path = &all->paths[i];
        if (!path->used)
            continue;
        if (has_leaks(path)) {
            ++*count;
            size += uv_sum(&index, 1, write) + uv_sum(path->leak, MPROF_LEAK_FIELD_COUNT, write);
        }
        index++;
    }
    return size;
}

static void emit_leaks(const struct gathered *all)
{
    uint64_t count;
    uint64_t size = leak_entries(all, false, &count);
    const struct leak_scan *scan = &all->leaks;
    section_header(MPROF_TAG_LEAKS, 8 * 8 + size);
    uint64_t head[] = {scan->flags, scan->threads_stopped, scan->threads_unstopped, scan->root_bytes,
                       scan->block_bytes, scan->ns, count, MPROF_LEAK_FIELD_COUNT};
    for (unsigned i = 0; i < sizeof head / sizeof head[0]; i++)
        writer_u64(&writer, head[i]);
    leak_entries(all, true, &count);
}

/* The scan's figures into the paths' totals. */
static void gather_leaks(struct gathered *all)
{
    const struct leak_scan *scan = &all->leaks;
    for (uint32_t i = 0; i < scan->record_count; i++) {
        uint32_t index = scan->first_record + i - all->first_path;
        if (index >= all->path_capacity || !all->paths[index].used)
            continue;
        for (unsigned k = 0; k < MPROF_LEAK_FIELD_COUNT; k++)
            all->paths[index].leak[k] += scan->by_record[i][k];
    }
}

static uint64_t sum_of(const uint64_t *values, unsigned count)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < count; i++)
        sum += values[i];
    return sum;
}

/* Makes one kind of figure (blocks: 0, bytes: 1) of a path add up to what
 * it has live: the figures were read after the scan, and threads that ran
 * on in between freed blocks (taken from the reachable first: the program
 * held them) or made new ones (reachable: it holds them). */
static void reconcile(uint64_t *leak, unsigned figure, uint64_t live)
{
    uint64_t classified = 0;
    for (unsigned kind = 0; kind < MPROF_LEAK_KIND_COUNT; kind++)
        classified += leak[2 * kind + figure];
    if (classified <= live) {
        leak[2 * MPROF_LEAK_REACHABLE + figure] += live - classified;
        return;
    }
    uint64_t excess = classified - live;
    static const unsigned order[] = {MPROF_LEAK_REACHABLE, MPROF_LEAK_POSSIBLE, MPROF_LEAK_INDIRECT,
                                     MPROF_LEAK_DEFINITE};
    for (unsigned i = 0; i < MPROF_LEAK_KIND_COUNT && excess; i++) {
        uint64_t *value = &leak[2 * order[i] + figure];
        uint64_t taken = *value < excess ? *value : excess;
        *value -= taken;
        excess -= taken;
    }
}

/* Each path's kinds add up to its live blocks and bytes (mprof(5)); the
 * regions' paths (the mmap and brk frames) have none. */
static void reconcile_leaks(struct gathered *all)
{
    for (uint32_t i = 0; i < all->path_capacity; i++) {
        struct path_total *path = &all->paths[i];
        if (!path->used)
            continue;
        uintptr_t innermost = path->node_ref ? all->nodes[path->node_ref - 1].address : 0;
        if (innermost == MPROF_MMAP_FRAME || innermost == MPROF_BRK_FRAME) {
            memset(path->leak, 0, sizeof path->leak);
            continue;
        }
        uint64_t live_blocks = path->allocs > path->frees ? path->allocs - path->frees : 0;
        uint64_t bytes = sum_of(path->bytes, MPROF_SIZE_CLASSES), freed = sum_of(path->freed, MPROF_SIZE_CLASSES);
        reconcile(path->leak, 0, live_blocks);
        reconcile(path->leak, 1, bytes > freed ? bytes - freed : 0);
    }
}

static void emit_file(const struct gathered *all, const struct snapshot_request *request)
{
    uint32_t flags = MPROF_FLAG_COMPRESSED | (monitor.options.call_graph ? MPROF_FLAG_CALL_GRAPH : 0) |
                     (request->kind == SNAPSHOT_FINAL ? MPROF_FLAG_FINAL : 0) |
                     (request->kind == SNAPSHOT_CHECKPOINT ? MPROF_FLAG_CHECKPOINT : 0) |
                     (monitor.forked ? MPROF_FLAG_FORKED : 0) | (monitor.attached ? MPROF_FLAG_ATTACHED : 0);
    emit_header(flags, (uint32_t)request->end_signal, all->classified ? 11 : 10);
    emit_program();
    emit_modules();
    emit_summary(all);
    emit_bins(all);
    emit_addresses(all);
    emit_nodes(all);
    emit_paths(all);
    emit_timeline(all);
    emit_pools();
    if (all->classified)
        emit_leaks(all);
    uint32_t crc = writer_crc(&writer);
    section_header(MPROF_TAG_END, 8);
    writer_u32(&writer, crc);
    writer_u32(&writer, 0);
}

/* Where this write goes: the process's file, or a new snapshot file named
 * after it. */
static struct output *destination(const struct snapshot_request *request)
{
    if (request->kind == SNAPSHOT_FINAL || request->kind == SNAPSHOT_CHECKPOINT)
        return &output;
    memset(&snapshot_output, 0, sizeof snapshot_output);
    if (request->kind == SNAPSHOT_WATCH) {
        output_append(&snapshot_output, request->path);
        snapshot_output.chosen = true;
        snapshot_output.replace = true; /* the viewer's file, each answer over the last */
        snapshot_output.quiet = true;
        return &snapshot_output;
    }
    output_name(&snapshot_output, monitor.options.output, monitor.pid, monitor.is_root);
    char number[24];
    output_append(&snapshot_output, ".snap");
    output_append(&snapshot_output, format_u64(number, ++snapshots_written));
    return &snapshot_output;
}

/* A checkpoint waits for the write under way (a viewer's snapshot, the
 * dump signal's): it comes from the monitor's own thread, and skipped it
 * would leave the high it was asked for unwritten until the next. */
static bool take_write_lock(const struct snapshot_request *request)
{
    if (request->kind == SNAPSHOT_WATCH)
        return spin_trylock(&write_lock);
    return spin_lock_within(&write_lock, request->end_signal != 0);
}

bool snapshot_write(const struct snapshot_request *request)
{
    if (!take_write_lock(request))
        return false;
    if (request->kind == SNAPSHOT_CHECKPOINT && final_written) {
        spin_unlock(&write_lock);
        return false;
    }
    bounded_write = request->end_signal != 0;
    bool written = false;
    struct gathered *all = scratch_alloc(sizeof(*all));
    if (!all) {
        spin_unlock(&write_lock);
        if (request->kind != SNAPSHOT_WATCH && log_first_failure())
            log_line("cannot write the data file: out of memory", NULL);
        return false;
    }
    memset(all, 0, sizeof(*all));
    all->first_path = paths_first_own_path();
    /* First, while no thread's lock is held: the scan stops the others
     * wherever they are, and reads no lock they may hold. */
    if (request->classify && monitor.options.leak_check && paths_count() > all->first_path)
        all->classified = leak_scan(&all->leaks, request->classify, all->first_path,
                                    paths_count() - all->first_path);
    /* The totals' pages are made and touched before any thread's lock is
     * taken: a thread waits on its lock only while the figures are read. */
    uint32_t path_count = paths_count();
    if (path_count > all->first_path && path_slot(all, path_count - 1))
        memset(all->paths, 0, all->path_capacity * sizeof(struct path_total));
    /* The figures of one moment: every thread's and the highs, read with
     * every lock held, as the threads go on while a thread of the monitor's
     * writes (a checkpoint the moment a burst reached 58 MiB said the high
     * was 11).  The changes waiting in the threads' logs are in the highs,
     * and in the records' figures at them, before they are read.  A signal
     * handler that finds a lock held (its interrupted thread's) reads each
     * thread's figures as it can get them. */
    if (thread_states_lock_all_within(bounded_write)) {
        live_merge_logs_held();
        read_highs(all);
        thread_states_each_held(gather_thread, all);
        thread_states_unlock_all();
    } else {
        live_merge_logs(bounded_write);
        read_highs(all);
        thread_states_each(gather_thread, all, bounded_write);
    }
    if (all->classified && !all->out_of_memory)
        gather_leaks(all);
    if (!all->out_of_memory)
        gather_nodes(all, bounded_write);
    if (!all->out_of_memory)
        gather_addresses(all);
    /* Alone, the process did nothing between the scan and the figures:
     * they agree, and any block the scan missed shows. */
    if (all->classified && !all->out_of_memory && all->leaks.threads_stopped + all->leaks.threads_unstopped)
        reconcile_leaks(all);
    all->points = scratch_alloc((TIMELINE_POINTS + 1) * sizeof(struct timeline_point));
    if (all->points)
        all->point_count = timeline_points(all->points, bounded_write);
    else
        all->out_of_memory = true;

    const uint64_t *counted = all->counters;
    bool active = counted[MPROF_SUM_ALLOCS] || counted[MPROF_SUM_FREES] ||
                  counted[MPROF_SUM_UNKNOWN_FREES] || counted[MPROF_SUM_INHERITED_FREES];
    if (request->if_active && !active)
        goto release;
    struct output *target = destination(request);
    int fd = all->out_of_memory ? -1
                                : output_open(target, monitor.options.output, monitor.pid,
                                              monitor.is_root);
    if (fd >= 0 && !writer_start(&writer, fd, MPROF_HEADER_SIZE, DEFLATE_LEVEL)) {
        output_commit(target, fd, false); /* the temporary file goes */
        fd = -1;
        all->out_of_memory = true;
    }
    if (fd >= 0) {
        emit_file(all, request);
        bool ok = writer_finish(&writer);
        if (!ok && !target->quiet && log_first_failure())
            log_line("cannot write ", target->temporary, ": ", strerrordesc_np(writer.errno_value), NULL);
        written = output_commit(target, fd, ok);
        final_written |= written && request->kind == SNAPSHOT_FINAL;
        if (written && request->kind != SNAPSHOT_WATCH) { /* the viewer's, not the run's */
            static const char *const kinds[] = {
                [SNAPSHOT_FINAL] = "final", [SNAPSHOT_CHECKPOINT] = "checkpoint", [SNAPSHOT_ON_DEMAND] = "snapshot"};
            runlog_wrote(kinds[request->kind], target->path);
            if (monitor.options.verbose)
                log_verbose("wrote ", kinds[request->kind], " ", target->path, NULL);
        }
    } else if (all->out_of_memory && request->kind != SNAPSHOT_WATCH && log_first_failure()) {
        log_line("cannot write the data file: out of memory", NULL);
    }
release:
    leak_scan_release(&all->leaks);
    region_unmap(all->paths, all->path_capacity * sizeof(struct path_total));
    region_unmap(all->nodes, (all->node_room ? all->node_room : 1) * sizeof(struct file_node));
    region_unmap(all->addresses, (all->node_room ? all->node_room : 1) * sizeof(uint64_t));
    scratch_release();
    spin_unlock(&write_lock);
    return written;
}

void snapshot_forget_output(void)
{
    spin_reset(&write_lock);
    /* A write of the parent's other thread, cut short by the fork: its
     * scratch memory is this child's copy, which nobody here uses. */
    scratch_release();
    memset(&output, 0, sizeof output);
    snapshots_written = 0;
    final_written = false;
}
