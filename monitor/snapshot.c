/* Writes a data file (mprof(5)) from every thread's aggregates, without
 * calling the allocator: final, checkpoint and on-demand writes. */
#include "snapshot.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "format.h"
#include "lock.h"
#include "log.h"
#include "modules.h"
#include "output.h"
#include "ptable.h"
#include "runlog.h"
#include "state.h"
#include "writer.h"

/* Guards everything below: one write at a time (exit, exec, dump signal). */
static spinlock_t write_lock = SPINLOCK_INIT;
static struct output output;          /* the process's own file */
static struct output snapshot_output; /* the on-demand snapshot being written */
static unsigned snapshots_written;
static bool bounded_write; /* this write is a signal handler's: locks are taken with a bound */
static struct writer writer;

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

/* A leak record's counts summed over threads. */
struct record_total {
    const struct leak_chain *chain;
    uint64_t allocs, frees;
    uint64_t bytes[MPROF_SIZE_CLASSES];
    uint64_t freed[MPROF_SIZE_CLASSES];
};

struct site_total {
    uintptr_t address;
    uint64_t calls, frees;
    uint64_t bytes[MPROF_SIZE_CLASSES];
    uint64_t freed[MPROF_SIZE_CLASSES];
};

struct gathered {
    uint64_t counters[MPROF_SUM_FIELD_COUNT];
    uint64_t bin_allocs[MPROF_BIN_COUNT];
    uint64_t bin_frees[MPROF_BIN_COUNT];
    uint64_t large_bytes, large_freed;
    struct ptable pairs; /* struct pair_counts, merged */
    struct record_total *records; /* by id - first_id */
    uint32_t record_capacity;
    uint32_t first_id;
    struct ptable sites; /* struct site_total by address */
    uint64_t *addresses; /* every address the sections name, sorted, unique */
    size_t address_count;
    size_t address_capacity;
    bool out_of_memory;
};

static void merge_pair(struct gathered *all, const struct pair_counts *pair)
{
    uintptr_t key[2] = {pair->caller, pair->callee};
    uint64_t hash = pair_hash(pair->caller, pair->callee);
    struct pair_counts *merged = ptable_find(&all->pairs, hash, pair_has_key, key);
    if (!merged) {
        merged = scratch_alloc(sizeof(*merged));
        if (!merged || !ptable_add(&all->pairs, hash, merged)) {
            all->out_of_memory = true;
            return;
        }
        memset(merged, 0, sizeof(*merged));
        merged->caller = pair->caller;
        merged->callee = pair->callee;
    }
    merged->calls += pair->calls;
    for (unsigned c = 0; c < MPROF_SIZE_CLASSES; c++)
        merged->bytes[c] += pair->bytes[c];
}

static struct record_total *record_slot(struct gathered *all, uint32_t id)
{
    uint32_t index = id - all->first_id;
    if (index >= all->record_capacity) {
        uint32_t capacity = all->record_capacity ? all->record_capacity : 4096;
        while (capacity <= index)
            capacity *= 2;
        size_t old_size = all->record_capacity * sizeof(struct record_total);
        size_t new_size = capacity * sizeof(struct record_total);
        void *grown = all->records ? region_grow(all->records, old_size, new_size)
                                   : region_map(new_size);
        if (!grown) {
            all->out_of_memory = true;
            return NULL;
        }
        all->records = grown;
        all->record_capacity = capacity;
    }
    return &all->records[index];
}

static void gather_thread(struct thread_state *state, void *context)
{
    struct gathered *all = context;
    for (unsigned i = 0; i < MPROF_SUM_FIELD_COUNT; i++)
        all->counters[i] += state->counters[i];
    for (unsigned i = 0; i < MPROF_BIN_COUNT; i++) {
        all->bin_allocs[i] += state->bin_allocs[i];
        all->bin_frees[i] += state->bin_frees[i];
    }
    all->large_bytes += state->large_bytes;
    all->large_freed += state->large_freed;
    for (uint64_t i = 0; i < ptable_slots(&state->pairs); i++)
        if (state->pairs.items[i])
            merge_pair(all, state->pairs.items[i]);
    for (uint64_t i = 0; i < ptable_slots(&state->sites); i++) {
        const struct site_counts *site = state->sites.items[i];
        if (!site || site->chain->id < all->first_id)
            continue;
        struct record_total *total = record_slot(all, site->chain->id);
        if (!total)
            continue;
        total->chain = site->chain;
        total->allocs += site->allocs;
        total->frees += site->frees;
        for (unsigned c = 0; c < MPROF_SIZE_CLASSES; c++) {
            total->bytes[c] += site->bytes[c];
            total->freed[c] += site->freed[c];
        }
    }
}

static bool same_site(const void *entry, const void *key)
{
    return ((const struct site_total *)entry)->address == *(const uintptr_t *)key;
}

static void gather_sites(struct gathered *all)
{
    for (uint32_t i = 0; i < all->record_capacity; i++) {
        const struct record_total *record = &all->records[i];
        if (!record->chain)
            continue;
        uintptr_t address = record->chain->addrs[0];
        uint64_t hash = hash_words(0, address);
        struct site_total *site = ptable_find(&all->sites, hash, same_site, &address);
        if (!site) {
            site = scratch_alloc(sizeof(*site));
            if (!site || !ptable_add(&all->sites, hash, site)) {
                all->out_of_memory = true;
                return;
            }
            memset(site, 0, sizeof(*site));
            site->address = address;
        }
        site->calls += record->allocs;
        site->frees += record->frees;
        for (unsigned c = 0; c < MPROF_SIZE_CLASSES; c++) {
            site->bytes[c] += record->bytes[c];
            site->freed[c] += record->freed[c];
        }
    }
}

/* Heapsort: qsort may allocate, and the writer never calls the allocator. */
static void sift_down(uint64_t *values, size_t root, size_t count)
{
    for (size_t child; (child = 2 * root + 1) < count; root = child) {
        if (child + 1 < count && values[child + 1] > values[child])
            child++;
        if (values[root] >= values[child])
            return;
        uint64_t swap = values[root];
        values[root] = values[child];
        values[child] = swap;
    }
}

static void sort_values(uint64_t *values, size_t count)
{
    for (size_t i = count / 2; i-- > 0;)
        sift_down(values, i, count);
    for (size_t end = count; end-- > 1;) {
        uint64_t swap = values[0];
        values[0] = values[end];
        values[end] = swap;
        sift_down(values, 0, end);
    }
}

static unsigned leak_length(const struct leak_chain *chain)
{
    unsigned length = 0;
    while (length < monitor.options.leak_depth && chain->addrs[length])
        length++;
    return length;
}

/* The ADDR table: every address SITE, LEAK and PAIR name, sorted, unique. */
static void gather_addresses(struct gathered *all)
{
    size_t capacity = all->sites.used + 2 * all->pairs.used;
    for (uint32_t i = 0; i < all->record_capacity; i++)
        if (all->records[i].chain)
            capacity += leak_length(all->records[i].chain);
    all->addresses = region_map((capacity + 1) * sizeof(uint64_t));
    if (!all->addresses) {
        all->out_of_memory = true;
        return;
    }
    all->address_capacity = capacity + 1;
    size_t count = 0;
    for (uint64_t i = 0; i < ptable_slots(&all->sites); i++)
        if (all->sites.items[i])
            all->addresses[count++] = ((const struct site_total *)all->sites.items[i])->address;
    for (uint64_t i = 0; i < ptable_slots(&all->pairs); i++) {
        const struct pair_counts *pair = all->pairs.items[i];
        if (pair) {
            all->addresses[count++] = pair->caller;
            all->addresses[count++] = pair->callee;
        }
    }
    for (uint32_t i = 0; i < all->record_capacity; i++) {
        const struct leak_chain *chain = all->records[i].chain;
        unsigned length = chain ? leak_length(chain) : 0;
        for (unsigned d = 0; d < length; d++)
            all->addresses[count++] = chain->addrs[d];
    }
    sort_values(all->addresses, count);
    size_t unique = 0;
    for (size_t i = 0; i < count; i++)
        if (unique == 0 || all->addresses[i] != all->addresses[unique - 1])
            all->addresses[unique++] = all->addresses[i];
    all->address_count = unique;
}

static uint64_t address_index(const struct gathered *all, uint64_t address)
{
    size_t low = 0, high = all->address_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (all->addresses[middle] < address)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
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
    section_header(MPROF_TAG_PROGRAM, 8 + executable_size + monitor.command_line_size);
    writer_u32(&writer, executable_size);
    writer_bytes(&writer, monitor.executable, executable_size);
    writer_u32(&writer, monitor.command_line_size);
    writer_bytes(&writer, monitor.command_line, monitor.command_line_size);
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

static void emit_summary(const struct gathered *all)
{
    uint64_t values[MPROF_SUM_FIELD_COUNT];
    memcpy(values, all->counters, sizeof values);
    values[MPROF_SUM_MAX_LIVE_OBJECTS] = atomic_load(&monitor.max_live_objects);
    values[MPROF_SUM_MAX_LIVE_BYTES] = atomic_load(&monitor.max_live_bytes);
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
    section_header(MPROF_TAG_BINS, 8 + count * 36);
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

static uint64_t site_entries(const struct gathered *all, bool write)
{
    uint64_t size = 0;
    for (uint64_t i = 0; i < ptable_slots(&all->sites); i++) {
        const struct site_total *site = all->sites.items[i];
        if (!site)
            continue;
        uint64_t head[3] = {address_index(all, site->address), site->calls, site->frees};
        size += uv_sum(head, 3, write) + uv_sum(site->bytes, MPROF_SIZE_CLASSES, write) +
                uv_sum(site->freed, MPROF_SIZE_CLASSES, write);
    }
    return size;
}

static void emit_sites(const struct gathered *all)
{
    section_header(MPROF_TAG_SITES, 8 + site_entries(all, false));
    writer_u64(&writer, all->sites.used);
    site_entries(all, true);
}

static uint64_t sum(const uint64_t *values)
{
    uint64_t total = 0;
    for (unsigned c = 0; c < MPROF_SIZE_CLASSES; c++)
        total += values[c];
    return total;
}

static uint64_t leak_entries(const struct gathered *all, bool write)
{
    uint64_t size = 0;
    for (uint32_t i = 0; i < all->record_capacity; i++) {
        const struct record_total *record = &all->records[i];
        if (!record->chain)
            continue;
        unsigned length = leak_length(record->chain);
        uint64_t entry[64 + 5];
        entry[0] = length;
        for (unsigned d = 0; d < length; d++)
            entry[1 + d] = address_index(all, record->chain->addrs[d]);
        uint64_t *counts = entry + 1 + length;
        counts[0] = record->allocs;
        counts[1] = record->frees;
        counts[2] = sum(record->bytes);
        counts[3] = sum(record->freed);
        size += uv_sum(entry, length + 5, write);
    }
    return size;
}

static void emit_leaks(const struct gathered *all)
{
    uint64_t count = 0;
    for (uint32_t i = 0; i < all->record_capacity; i++)
        count += all->records[i].chain != NULL;
    section_header(MPROF_TAG_LEAKS, 8 + leak_entries(all, false));
    writer_u64(&writer, count);
    leak_entries(all, true);
}

static uint64_t pair_entries(const struct gathered *all, bool write)
{
    uint64_t size = 0;
    for (uint64_t i = 0; i < ptable_slots(&all->pairs); i++) {
        const struct pair_counts *pair = all->pairs.items[i];
        if (!pair)
            continue;
        uint64_t head[3] = {address_index(all, pair->caller), address_index(all, pair->callee), pair->calls};
        size += uv_sum(head, 3, write) + uv_sum(pair->bytes, MPROF_SIZE_CLASSES, write);
    }
    return size;
}

static void emit_pairs(const struct gathered *all)
{
    section_header(MPROF_TAG_PAIRS, 8 + pair_entries(all, false));
    writer_u64(&writer, all->pairs.used);
    pair_entries(all, true);
}

static void emit_file(const struct gathered *all, const struct snapshot_request *request)
{
    uint32_t flags = (monitor.options.call_graph ? MPROF_FLAG_CALL_GRAPH : 0) |
                     (request->kind == SNAPSHOT_FINAL ? MPROF_FLAG_FINAL : 0) |
                     (request->kind == SNAPSHOT_CHECKPOINT ? MPROF_FLAG_CHECKPOINT : 0) |
                     (monitor.forked ? MPROF_FLAG_FORKED : 0);
    emit_header(flags, (uint32_t)request->end_signal, 9);
    emit_program();
    emit_modules();
    emit_summary(all);
    emit_bins(all);
    emit_addresses(all);
    emit_sites(all);
    emit_leaks(all);
    emit_pairs(all);
    uint32_t crc = writer_crc(&writer);
    section_header(MPROF_TAG_END, 8);
    writer_u32(&writer, crc);
    writer_u32(&writer, 0);
}

/* Where this write goes: the process's file, or a new snapshot file named
 * after it. */
static struct output *destination(const struct snapshot_request *request)
{
    if (request->kind != SNAPSHOT_ON_DEMAND)
        return &output;
    memset(&snapshot_output, 0, sizeof snapshot_output);
    output_name(&snapshot_output, monitor.options.output, monitor.pid, monitor.is_root);
    char number[24];
    output_append(&snapshot_output, ".snap");
    output_append(&snapshot_output, format_u64(number, ++snapshots_written));
    return &snapshot_output;
}

static bool take_write_lock(const struct snapshot_request *request)
{
    if (request->kind == SNAPSHOT_CHECKPOINT)
        return spin_trylock(&write_lock);
    return spin_lock_within(&write_lock, request->end_signal != 0);
}

bool snapshot_write(const struct snapshot_request *request)
{
    if (!take_write_lock(request))
        return false;
    bounded_write = request->end_signal != 0;
    bool written = false;
    struct gathered *all = scratch_alloc(sizeof(*all));
    if (!all) {
        spin_unlock(&write_lock);
        if (log_first_failure())
            log_line("cannot write the data file: out of memory", NULL);
        return false;
    }
    memset(all, 0, sizeof(*all));
    all->first_id = records_first_own_id();
    thread_states_each(gather_thread, all, bounded_write);
    gather_sites(all);
    if (!all->out_of_memory)
        gather_addresses(all);

    const uint64_t *counted = all->counters;
    bool active = counted[MPROF_SUM_ALLOCS] || counted[MPROF_SUM_FREES] ||
                  counted[MPROF_SUM_UNKNOWN_FREES] || counted[MPROF_SUM_INHERITED_FREES];
    if (request->if_active && !active)
        goto release;
    struct output *target = destination(request);
    int fd = all->out_of_memory ? -1
                                : output_open(target, monitor.options.output, monitor.pid,
                                              monitor.is_root);
    if (fd >= 0) {
        writer_start(&writer, fd);
        emit_file(all, request);
        bool ok = writer_finish(&writer);
        if (!ok && log_first_failure())
            log_line("cannot write ", target->temporary, ": ", strerrordesc_np(writer.errno_value), NULL);
        written = output_commit(target, fd, ok);
        if (written) {
            static const char *const kinds[] = {
                [SNAPSHOT_FINAL] = "final", [SNAPSHOT_CHECKPOINT] = "checkpoint", [SNAPSHOT_ON_DEMAND] = "snapshot"};
            runlog_wrote(kinds[request->kind], target->path);
            if (monitor.options.verbose)
                log_line("wrote ", kinds[request->kind] , " ", target->path, NULL);
        }
    } else if (all->out_of_memory && log_first_failure()) {
        log_line("cannot write the data file: out of memory", NULL);
    }
release:
    ptable_release(&all->pairs);
    ptable_release(&all->sites);
    region_unmap(all->records, all->record_capacity * sizeof(struct record_total));
    region_unmap(all->addresses, all->address_capacity * sizeof(uint64_t));
    scratch_release();
    spin_unlock(&write_lock);
    return written;
}

void snapshot_forget_output(void)
{
    spin_reset(&write_lock);
    memset(&output, 0, sizeof output);
    snapshots_written = 0;
}
