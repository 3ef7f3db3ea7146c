/* Regions the program maps side by side and cuts in the middle, moves and
 * maps over: after each step it has the monitor write a snapshot
 * (mprof_dump, FILE.snapN) and prints what the kernel has in its area,
 * read from /proc/self/maps, as one line:
 *
 *   STEP: FIRST-END PROT KIND, ...
 *
 * the page ranges of the area's mappings in address order, in pages from
 * the area's start, their protection (r--, rw-...) and "anon" for an
 * anonymous mapping or "file" for the reservation's file.  Every function
 * that maps a region maps it with a protection of its own, so a
 * protection's pages are its region's.  argv[1] chooses the case; P is a
 * page, [a,b) a range of the area in pages.
 *
 *   neighbours  left r-- [0,4), middle rw- [4,8), right r-x [8,12) placed
 *               with MAP_FIXED_NOREPLACE; munmap [3,5) across left and
 *               middle; munmap [5,8), middle's rest, between a hole and
 *               right; fill -w- [3,8) placed in the hole between left and
 *               right (a MAP_FIXED_NOREPLACE over left's page 2 failing
 *               first); munmap [0,12).
 *   hole        whole rw- [0,10) and beside r-- [10,12); munmap [3,5) in
 *               whole's middle; munmap [7,8) in the middle of the part
 *               above; munmap [9,11) across the part above and beside;
 *               mremap [1,2), the middle of whole's first part, to
 *               [14,15) (move_out); munmap [0,16).
 *   remap       moved rw- [0,4) and still r-- [8,12); mremap moved to
 *               [4,8), next to still (move_next); mremap still over [2,6),
 *               onto half of move_next's region (move_over); mremap
 *               move_next's [6,8) grown in place to [6,10), next to
 *               move_over's (grow_next); mremap move_over's [2,6) shrunk
 *               to [2,3) (shrink); mremap grow_next's [6,10) to [12,16)
 *               with MREMAP_DONTUNMAP, which leaves [6,10) mapped
 *               (keep_old); munmap [0,16).
 *   fixed_over  first r-- [0,4), second rw- [4,8), third r-x [8,12); an
 *               anonymous MAP_FIXED -w- over [2,6) (over); the
 *               reservation's file mapped MAP_FIXED over [5,9); its first
 *               2 pages moved with mremap over [10,12), third's last two;
 *               munmap [0,12).
 *   carved      reserve --- [0,16), PROT_NONE, where the kernel chooses:
 *               the area; carve_first rw- [0,4) and carve_second r--
 *               [4,8) mapped over it with MAP_FIXED; carve_last r-x
 *               [12,16); munmap [2,14); munmap [0,16).
 *   many        40 regions of 2 pages side by side, even r-- [4i,4i+2)
 *               and odd rw- [4i+2,4i+4) for i in 0..19; munmap [1,79),
 *               which takes some of all 40; munmap [0,80).
 *   many_over   three rows of 20 pairs of regions of 2 pages, even r-- and
 *               odd rw- as in many, at [0,40) (A), [80,120) (B) and
 *               [120,160) (C), and source --x [40,78) between A and B;
 *               cover -w- MAP_FIXED over [121,159), some of all C's
 *               (covered); mremap source to [1,39), some of all A's, below
 *               where it was (move_down); mremap that to [81,119), some of
 *               all B's, above (move_up); munmap [0,200).
 *   break       the area from the break: sbrk of 2 pages (break_low), 2
 *               more (break_high), sbrk of -3 pages across both
 *               (break_back), brk back to the start (break_end).  The
 *               area's kind is "heap" ([heap] in the maps).
 *   lengths     odd_length rw- [0,3) mapped with a length of 2 pages and a
 *               byte; munmap of a page and a byte at 0, [0,2); mremap of
 *               one byte at 2, [2,3), to a page and a byte at 5, [5,7)
 *               (move_odd); munmap [0,8).  The kernel takes each length
 *               as the whole pages it touches.
 *   spanning    span r-x [0,2), then 15 regions of a page, even r-- and
 *               odd rw- by turns, over [2,17); mremap span's first page to
 *               [1,17) grown to 16 pages (move_span): 16 regions in the
 *               span the call takes, and 17 cuts, span cut by both the old
 *               range and the new; munmap [0,17).
 *   grown_many  17 regions of a page side by side, odd rw- over [0,17), one
 *               mapping to the kernel; munmap [17,20), the area's file
 *               above; mremap [0,17) grown in place to [0,20) (grow_many),
 *               which takes all 17; munmap [0,20).
 *   breaks      the area from the break: 18 sbrk of a page (break_page);
 *               sbrk of -17 pages (break_back_many), which takes 17 of
 *               them; brk back to the start (break_end).
 *
 * Except in carved, the area is a file's PROT_NONE mapping (a memfd's),
 * which no region is: regions are mapped over it, and a munmap of it
 * counts nothing.  No region is left at exit; nothing is allocated with
 * malloc (stdout's buffer is the program's own), so the break is the
 * program's alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mprof.h"

#define P ((size_t)4096)
#define ANONYMOUS (MAP_PRIVATE | MAP_ANONYMOUS)

static char *area;
static size_t area_pages;
static int area_file = -1;

static void fail(const char *what)
{
    fprintf(stderr, "mapped_neighbours: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void check(int ok, const char *what)
{
    if (!ok)
        fail(what);
}

static char *at(size_t page)
{
    return area + page * P;
}

/* The snapshot, and the kernel's view of the area beside it. */
static void step(const char *name)
{
    static char maps[1 << 20];
    if (mprof_dump)
        mprof_dump();
    int fd = open("/proc/self/maps", O_RDONLY);
    check(fd >= 0, "/proc/self/maps");
    size_t length = 0;
    ssize_t got;
    while ((got = read(fd, maps + length, sizeof maps - 1 - length)) > 0)
        length += (size_t)got;
    check(got == 0, "/proc/self/maps");
    close(fd);
    maps[length] = '\0';
    uintptr_t low = (uintptr_t)area, high = low + area_pages * P;
    printf("%s:", name);
    const char *separator = " ";
    for (char *line = maps; *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        unsigned long start, stop;
        char protection[5];
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &start, &stop, protection, &name_at) == 3 &&
            start < high && stop > low) {
            start = start > low ? start : low;
            stop = stop < high ? stop : high;
            const char *name = name_at ? line + name_at : "";
            printf("%s%zu-%zu %.3s %s", separator, (size_t)(start - low) / P, (size_t)(stop - low) / P, protection,
                   !*name ? "anon" : strcmp(name, "[heap]") == 0 ? "heap" : "file");
            separator = ", ";
        }
        line = end ? end + 1 : line + strlen(line);
    }
    printf("\n");
    fflush(stdout);
}

/* The area: a memfd's pages, mapped PROT_NONE where the kernel chooses. */
static void reserve_file(size_t pages)
{
    area_file = memfd_create("mapped_neighbours", 0);
    check(area_file >= 0 && ftruncate(area_file, (off_t)(pages * P)) == 0, "memfd");
    area = mmap(NULL, pages * P, PROT_NONE, MAP_PRIVATE, area_file, 0);
    check(area != MAP_FAILED, "the area");
    area_pages = pages;
}

static void unmap(size_t first, size_t end)
{
    check(munmap(at(first), (end - first) * P) == 0, "munmap");
}

/* Each mapping function: its own call path, its own protection. */
#define FIXED(name, protection, how)                                                                         \
    __attribute__((noinline)) static void name(size_t first, size_t end)                                    \
    {                                                                                                        \
        char *region = mmap(at(first), (end - first) * P, protection, ANONYMOUS | how, -1, 0);              \
        check(region == at(first), #name);                                                                   \
    }
#define MOVE(name, how)                                                                                      \
    __attribute__((noinline)) static void name(size_t first, size_t end, size_t new_first, size_t new_end)   \
    {                                                                                                        \
        char *moved = mremap(at(first), (end - first) * P, (new_end - new_first) * P, how, at(new_first));   \
        check(moved == at(new_first), #name);                                                                \
    }

FIXED(left, PROT_READ, MAP_FIXED_NOREPLACE)
FIXED(middle, PROT_READ | PROT_WRITE, MAP_FIXED_NOREPLACE)
FIXED(right, PROT_READ | PROT_EXEC, MAP_FIXED_NOREPLACE)
FIXED(fill, PROT_WRITE, MAP_FIXED_NOREPLACE)

static void neighbours(void)
{
    reserve_file(12);
    unmap(0, 12);
    left(0, 4);
    middle(4, 8);
    right(8, 12);
    step("placed");
    unmap(3, 5);
    step("across");
    unmap(5, 8);
    step("exact");
    check(mmap(at(2), 4 * P, PROT_WRITE, ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED && errno == EEXIST,
          "MAP_FIXED_NOREPLACE over a region");
    fill(3, 8);
    step("filled");
    unmap(0, 12);
    step("gone");
}

FIXED(whole, PROT_READ | PROT_WRITE, MAP_FIXED)
FIXED(beside, PROT_READ, MAP_FIXED)
MOVE(move_out, MREMAP_MAYMOVE | MREMAP_FIXED)

static void hole(void)
{
    reserve_file(16);
    whole(0, 10);
    beside(10, 12);
    step("placed");
    unmap(3, 5);
    step("hole");
    unmap(7, 8);
    step("second hole");
    unmap(9, 11);
    step("across");
    move_out(1, 2, 14, 15);
    step("moved out");
    unmap(0, 16);
    step("gone");
}

FIXED(moved, PROT_READ | PROT_WRITE, MAP_FIXED)
FIXED(still, PROT_READ, MAP_FIXED)
MOVE(move_next, MREMAP_MAYMOVE | MREMAP_FIXED)
MOVE(move_over, MREMAP_MAYMOVE | MREMAP_FIXED)
MOVE(keep_old, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)

__attribute__((noinline)) static void grow_next(size_t first, size_t end, size_t new_end)
{
    check(mremap(at(first), (end - first) * P, (new_end - first) * P, 0) == at(first), "grow_next");
}

__attribute__((noinline)) static void shrink(size_t first, size_t end, size_t new_end)
{
    check(mremap(at(first), (end - first) * P, (new_end - first) * P, 0) == at(first), "shrink");
}

static void remap(void)
{
    reserve_file(16);
    moved(0, 4);
    still(8, 12);
    step("placed");
    move_next(0, 4, 4, 8);
    step("next");
    move_over(8, 12, 2, 6);
    step("over");
    grow_next(6, 8, 10);
    step("grown");
    shrink(2, 6, 3);
    step("shrunk");
    keep_old(6, 10, 12, 16);
    step("kept");
    unmap(0, 16);
    step("gone");
}

FIXED(first, PROT_READ, MAP_FIXED)
FIXED(second, PROT_READ | PROT_WRITE, MAP_FIXED)
FIXED(third, PROT_READ | PROT_EXEC, MAP_FIXED)
FIXED(over, PROT_WRITE, MAP_FIXED)

static void fixed_over(void)
{
    reserve_file(12);
    first(0, 4);
    second(4, 8);
    third(8, 12);
    step("placed");
    over(2, 6);
    step("over");
    check(mmap(at(5), 4 * P, PROT_READ, MAP_PRIVATE | MAP_FIXED, area_file, 0) == at(5), "the file over");
    step("file");
    check(mremap(at(5), 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, at(10)) == at(10), "the file moved over");
    step("file moved");
    unmap(0, 12);
    step("gone");
}

FIXED(carve_first, PROT_READ | PROT_WRITE, MAP_FIXED)
FIXED(carve_second, PROT_READ, MAP_FIXED)
FIXED(carve_last, PROT_READ | PROT_EXEC, MAP_FIXED)

__attribute__((noinline)) static void reserve(size_t pages)
{
    area = mmap(NULL, pages * P, PROT_NONE, ANONYMOUS | MAP_NORESERVE, -1, 0);
    check(area != MAP_FAILED, "reserve");
    area_pages = pages;
}

static void carved(void)
{
    reserve(16);
    step("reserved");
    carve_first(0, 4);
    carve_second(4, 8);
    step("carved");
    carve_last(12, 16);
    step("last");
    unmap(2, 14);
    step("across");
    unmap(0, 16);
    step("gone");
}

FIXED(even, PROT_READ, MAP_FIXED)
FIXED(odd, PROT_READ | PROT_WRITE, MAP_FIXED)

static void many(void)
{
    reserve_file(80);
    for (size_t i = 0; i < 20; i++) {
        even(4 * i, 4 * i + 2);
        odd(4 * i + 2, 4 * i + 4);
    }
    step("placed");
    unmap(1, 79);
    step("across");
    unmap(0, 80);
    step("gone");
}

FIXED(source, PROT_EXEC, MAP_FIXED)
FIXED(cover, PROT_WRITE, MAP_FIXED)
MOVE(move_down, MREMAP_MAYMOVE | MREMAP_FIXED)
MOVE(move_up, MREMAP_MAYMOVE | MREMAP_FIXED)

static void many_over(void)
{
    static const size_t rows[] = {0, 80, 120};
    reserve_file(200);
    for (size_t row = 0; row < 3; row++) {
        for (size_t i = 0; i < 10; i++) {
            even(rows[row] + 4 * i, rows[row] + 4 * i + 2);
            odd(rows[row] + 4 * i + 2, rows[row] + 4 * i + 4);
        }
    }
    source(40, 78);
    step("placed");
    cover(121, 159);
    step("covered");
    move_down(40, 78, 1, 39);
    step("down");
    move_up(1, 39, 81, 119);
    step("up");
    unmap(0, 200);
    step("gone");
}

__attribute__((noinline)) static void break_low(void)
{
    check(sbrk((intptr_t)(2 * P)) == area, "break_low");
}

__attribute__((noinline)) static void break_high(void)
{
    check(sbrk((intptr_t)(2 * P)) == at(2), "break_high");
}

__attribute__((noinline)) static void break_back(void)
{
    check(sbrk(-(intptr_t)(3 * P)) == at(4), "break_back");
}

__attribute__((noinline)) static void break_end(void)
{
    check(brk(area) == 0, "break_end");
}

static void break_area(void)
{
    area = sbrk(0);
    area_pages = 4;
    check((uintptr_t)area % P == 0, "the break is not page-aligned");
    break_low();
    step("low");
    break_high();
    step("high");
    break_back();
    step("back");
    break_end();
    step("gone");
}

/* A page and a byte: the byte's page is mapped whole. */
__attribute__((noinline)) static void odd_length(size_t first, size_t end)
{
    char *region = mmap(at(first), (end - first - 1) * P + 1, PROT_READ | PROT_WRITE, ANONYMOUS | MAP_FIXED, -1, 0);
    check(region == at(first), "odd_length");
}

__attribute__((noinline)) static void move_odd(size_t first, size_t new_first, size_t new_end)
{
    char *moved = mremap(at(first), 1, (new_end - new_first - 1) * P + 1, MREMAP_MAYMOVE | MREMAP_FIXED,
                         at(new_first));
    check(moved == at(new_first), "move_odd");
}

static void lengths(void)
{
    reserve_file(8);
    odd_length(0, 3);
    step("placed");
    check(munmap(at(0), P + 1) == 0, "munmap of a page and a byte");
    step("cut");
    move_odd(2, 5, 7);
    step("moved");
    unmap(0, 8);
    step("gone");
}

FIXED(span, PROT_READ | PROT_EXEC, MAP_FIXED)
MOVE(move_span, MREMAP_MAYMOVE | MREMAP_FIXED)

static void spanning(void)
{
    reserve_file(17);
    span(0, 2);
    for (size_t page = 2; page < 17; page++) {
        if (page % 2 == 0)
            even(page, page + 1);
        else
            odd(page, page + 1);
    }
    step("placed");
    move_span(0, 1, 1, 17);
    step("moved");
    unmap(0, 17);
    step("gone");
}

__attribute__((noinline)) static void grow_many(size_t first, size_t end, size_t new_end)
{
    check(mremap(at(first), (end - first) * P, (new_end - first) * P, 0) == at(first), "grow_many");
}

static void grown_many(void)
{
    reserve_file(20);
    for (size_t page = 0; page < 17; page++)
        odd(page, page + 1);
    step("placed");
    unmap(17, 20);
    grow_many(0, 17, 20);
    step("grown");
    unmap(0, 20);
    step("gone");
}

__attribute__((noinline)) static void break_page(size_t page)
{
    check(sbrk((intptr_t)P) == at(page), "break_page");
}

__attribute__((noinline)) static void break_back_many(size_t pages)
{
    check(sbrk(-(intptr_t)(pages * P)) == at(area_pages), "break_back_many");
}

static void breaks(void)
{
    area = sbrk(0);
    area_pages = 18;
    check((uintptr_t)area % P == 0, "the break is not page-aligned");
    for (size_t page = 0; page < 18; page++)
        break_page(page);
    step("up");
    break_back_many(17);
    step("back");
    break_end();
    step("gone");
}

int main(int argc, char **argv)
{
    static char output[1 << 16];
    setvbuf(stdout, output, _IOFBF, sizeof output);
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"neighbours", neighbours}, {"hole", hole},     {"remap", remap},
                 {"fixed_over", fixed_over}, {"carved", carved}, {"many", many},
                 {"many_over", many_over}, {"break", break_area}, {"lengths", lengths},
                 {"spanning", spanning}, {"grown_many", grown_many}, {"breaks", breaks}};
    for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].run();
            return 0;
        }
    }
    fprintf(stderr, "usage: mapped_neighbours neighbours|hole|remap|fixed_over|carved|many|many_over|break|lengths|"
                    "spanning|grown_many|breaks\n");
    return 2;
}
