/* Runs the monitor's reader of call frame information (monitor/cfi.c,
 * linked in) over .eh_frame_hdr, CIE and FDE bytes written by hand, for a
 * function that pushes rbp and then makes it the frame pointer, and over
 * an FDE whose last instruction is cut short.  Each entry ends where a
 * page without access begins, so a read past an entry's end is a crash,
 * not a silent misreading.  Prints the rule found at each address:
 *
 *     NAME: step cfa=REG+OFFSET ra=OFFSET bp=OFFSET|same
 *     NAME: unknown|end
 *
 * The expected lines are in tests/e2e/test_unwinder.py, worked out from the
 * bytes below by the DWARF rules, not by the reader under test. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi.h"

/* What the stand-in for the loader's _dl_find_object returns; set by
 * place_entries before each lookup (one thread). */
static const uint8_t *current_header;

int _dl_find_object(void *address, struct dl_find_object *result)
{
    (void)address;
    memset(result, 0, sizeof *result);
    result->dlfo_eh_frame = (void *)current_header;
    return 0;
}

/* The code the FDE describes lies this far past the header; it is never
 * read, only looked up. */
#define CODE_OFFSET 0x100000
#define CODE_RANGE 0x100

static void put32(uint8_t *at, int64_t value)
{
    int32_t narrow = (int32_t)value;
    memcpy(at, &narrow, 4);
}

/* Maps a readable page followed by one without access, writes the search
 * header at the first page's start and a CIE then an FDE with the given
 * instructions so that the FDE's last byte is the page's last.  Returns
 * the code address the FDE starts at. */
static uintptr_t place_entries(const uint8_t *instructions, size_t instructions_size)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED || mprotect(pages + page, (size_t)page, PROT_NONE) != 0) {
        perror("mmap");
        _exit(1);
    }
    /* CIE: version 1, "zR", code alignment 1, data alignment -8, return
     * address in register 16, FDE pointers pc-relative 4-byte signed; at
     * entry the CFA is rsp+8 and the return address is at CFA-8. */
    static const uint8_t cie_body[] = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
                                       0x0c, 7, 8, 0x90, 1};
    size_t cie_size = 4 + sizeof cie_body;
    size_t fde_body_size = 4 + 4 + 4 + 1 + instructions_size;
    size_t fde_size = 4 + fde_body_size;
    uint8_t *cie = pages + page - cie_size - fde_size;
    uint8_t *fde = cie + cie_size;
    put32(cie, (int64_t)sizeof cie_body);
    memcpy(cie + 4, cie_body, sizeof cie_body);

    uint8_t *header = pages;
    uintptr_t code = (uintptr_t)header + CODE_OFFSET;
    put32(fde, (int64_t)fde_body_size);
    put32(fde + 4, fde + 4 - cie);                         /* back to the CIE */
    put32(fde + 8, (int64_t)(code - (uintptr_t)(fde + 8))); /* pc-relative start */
    put32(fde + 12, CODE_RANGE);
    fde[16] = 0; /* no augmentation data */
    memcpy(fde + 17, instructions, instructions_size);

    /* .eh_frame_hdr: version 1, .eh_frame pointer pc-relative sdata4, count
     * udata4, table of header-relative sdata4 pairs; one entry. */
    header[0] = 1;
    header[1] = 0x1b;
    header[2] = 0x03;
    header[3] = 0x3b;
    put32(header + 4, cie - (header + 4));
    put32(header + 8, 1);
    put32(header + 12, CODE_OFFSET);
    put32(header + 16, fde - header);
    current_header = header;
    return code;
}

static void show(const char *name, frame_rule rule)
{
    switch (rule_kind(rule)) {
    case RULE_STEP:
        printf("%s: step cfa=%s%+lld ra=%lld bp=", name, rule_cfa_from_bp(rule) ? "rbp" : "rsp",
               (long long)rule_cfa_offset(rule), (long long)rule_ra_offset(rule));
        if (rule_bp_saved(rule))
            printf("%lld\n", (long long)rule_bp_offset(rule));
        else
            printf("same\n");
        break;
    case RULE_END:
        printf("%s: end\n", name);
        break;
    default:
        printf("%s: unknown\n", name);
        break;
    }
    fflush(stdout);
}

int main(void)
{
    /* push %rbp (1 byte): CFA rsp+16, rbp saved at CFA-16; mov %rsp,%rbp
     * (3 bytes): CFA rbp+16. */
    static const uint8_t prologue[] = {0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6};
    uintptr_t code = place_entries(prologue, sizeof prologue);
    show("entry", cfi_rule_at(code));
    show("after push", cfi_rule_at(code + 1));
    show("before mov ends", cfi_rule_at(code + 3));
    show("frame pointer", cfi_rule_at(code + 4));
    show("last byte", cfi_rule_at(code + CODE_RANGE - 1));
    show("past the end", cfi_rule_at(code + CODE_RANGE));

    /* The return address marked undefined: the outermost frame. */
    static const uint8_t outermost[] = {0x07, 16};
    code = place_entries(outermost, sizeof outermost);
    show("outermost", cfi_rule_at(code));

    /* def_cfa_offset whose ULEB128 operand says more bytes follow, at the
     * entry's (and the page's) last byte. */
    static const uint8_t cut_short[] = {0x41, 0x0e, 0x80};
    code = place_entries(cut_short, sizeof cut_short);
    show("cut short", cfi_rule_at(code + 2));
    return 0;
}
