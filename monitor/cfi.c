/* Reads the call frame information of a code address: the loaded object's
 * .eh_frame_hdr search table finds the FDE, and the CIE's and FDE's
 * instructions are run up to the address.  Only the rows a walk of return
 * addresses needs are kept (CFA, rbp, return address); anything the packed
 * rule cannot say exactly becomes RULE_UNKNOWN and the caller falls back to
 * libunwind, so an unusual frame costs speed, never correctness. */
#include "cfi.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include "compiler.h"

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* Pointer encodings of .eh_frame (LSB extensions to DWARF). */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APPLICATION 0x70
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

/* A bounded reader over mapped, trusted but not blindly trusted, bytes. */
struct reader {
    const uint8_t *at;
    const uint8_t *end;
    bool failed;
};

static bool take(struct reader *in, void *out, size_t size)
{
    if (in->failed || (size_t)(in->end - in->at) < size) {
        in->failed = true;
        memset(out, 0, size);
        return false;
    }
    memcpy(out, in->at, size);
    in->at += size;
    return true;
}

static uint8_t read_u8(struct reader *in)
{
    uint8_t value;
    take(in, &value, 1);
    return value;
}

static uint64_t read_uleb(struct reader *in)
{
    uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t byte = read_u8(in);
        if (in->failed)
            return 0;
        if (shift < 64)
            value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return value;
    }
}

static int64_t read_sleb(struct reader *in)
{
    uint64_t value = 0;
    unsigned shift = 0;
    uint8_t byte;
    do {
        byte = read_u8(in);
        if (in->failed)
            return 0;
        if (shift < 64)
            value |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40))
        value |= ~UINT64_C(0) << shift;
    return (int64_t)value;
}

/* An encoded pointer; data_base is what PE_DATAREL is relative to. */
static uintptr_t read_encoded(struct reader *in, uint8_t encoding, uintptr_t data_base)
{
    uintptr_t field = (uintptr_t)in->at;
    uint64_t value;
    switch (encoding & PE_FORMAT) {
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8: {
        uint64_t raw;
        take(in, &raw, 8);
        value = raw;
        break;
    }
    case PE_ULEB128:
        value = read_uleb(in);
        break;
    case PE_SLEB128:
        value = (uint64_t)read_sleb(in);
        break;
    case PE_UDATA2: {
        uint16_t raw;
        take(in, &raw, 2);
        value = raw;
        break;
    }
    case PE_SDATA2: {
        int16_t raw;
        take(in, &raw, 2);
        value = (uint64_t)(int64_t)raw;
        break;
    }
    case PE_UDATA4: {
        uint32_t raw;
        take(in, &raw, 4);
        value = raw;
        break;
    }
    case PE_SDATA4: {
        int32_t raw;
        take(in, &raw, 4);
        value = (uint64_t)(int64_t)raw;
        break;
    }
    default:
        in->failed = true;
        return 0;
    }
    switch (encoding & PE_APPLICATION) {
    case 0:
        return value;
    case PE_PCREL:
        return value + field;
    case PE_DATAREL:
        return value + data_base;
    default:
        in->failed = true; /* indirect and the rest: not in what compilers emit for FDEs */
        return 0;
    }
}

/* The FDE covering address, from the binary search table of .eh_frame_hdr. */
static const uint8_t *find_fde(const uint8_t *header, uintptr_t address)
{
    struct reader in = {header, header + 4 + 2 * 8, false};
    uint8_t version = read_u8(&in);
    uint8_t frame_pointer_encoding = read_u8(&in);
    uint8_t count_encoding = read_u8(&in);
    uint8_t table_encoding = read_u8(&in);
    /* The layout every binutils and lld writes: a table of 32-bit offsets
     * from the header, sorted by initial location. */
    if (version != 1 || count_encoding == PE_OMIT || table_encoding != (PE_DATAREL | PE_SDATA4))
        return NULL;
    read_encoded(&in, frame_pointer_encoding, (uintptr_t)header);
    uint64_t count = read_encoded(&in, count_encoding, (uintptr_t)header);
    if (in.failed || count == 0)
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)in.at;
    uint64_t low = 0, high = count;
    while (high - low > 1) {
        uint64_t middle = low + (high - low) / 2;
        if ((uintptr_t)header + (intptr_t)table[2 * middle] <= address)
            low = middle;
        else
            high = middle;
    }
    if ((uintptr_t)header + (intptr_t)table[2 * low] > address)
        return NULL;
    return header + (intptr_t)table[2 * low + 1];
}

/* The reader over one CIE or FDE's contents, after its length. */
static bool open_entry(const uint8_t *entry, struct reader *in)
{
    uint32_t length;
    memcpy(&length, entry, 4);
    /* 64-bit DWARF entries are not written by x86-64 toolchains. */
    if (length == 0 || length == UINT32_MAX)
        return false;
    *in = (struct reader){entry + 4, entry + 4 + length, false};
    return true;
}

struct register_rule {
    enum { SAME, UNDEFINED, OFFSET, OTHER } how;
    int64_t offset;
};

struct frame_row {
    unsigned cfa_register;
    int64_t cfa_offset;
    bool cfa_expression;
    struct register_rule bp, ra;
};

struct cie {
    uint64_t code_alignment;
    int64_t data_alignment;
    uint8_t fde_encoding;
    bool has_augmentation_data;
    bool signal_frame;
    struct reader instructions;
};

static bool parse_cie(const uint8_t *entry, struct cie *cie)
{
    struct reader in;
    if (!open_entry(entry, &in))
        return false;
    uint32_t id;
    take(&in, &id, 4);
    uint8_t version = read_u8(&in);
    if (in.failed || id != 0 || (version != 1 && version != 3))
        return false;
    const char *augmentation = (const char *)in.at;
    size_t augmentation_length = strnlen(augmentation, (size_t)(in.end - in.at));
    in.at += augmentation_length + 1;
    /* GCC's old "eh" augmentation: a pointer follows, and comes first. */
    if (augmentation_length >= 2 && augmentation[0] == 'e' && augmentation[1] == 'h')
        in.at += sizeof(uintptr_t);
    cie->code_alignment = read_uleb(&in);
    cie->data_alignment = read_sleb(&in);
    uint64_t return_register = version == 1 ? read_u8(&in) : read_uleb(&in);
    if (in.failed || return_register != REG_RA)
        return false;
    cie->fde_encoding = PE_ABSPTR;
    cie->has_augmentation_data = augmentation[0] == 'z';
    cie->signal_frame = false;
    if (cie->has_augmentation_data) {
        uint64_t data_length = read_uleb(&in);
        const uint8_t *instructions = in.at + data_length;
        for (const char *letter = augmentation + 1;
             letter < augmentation + augmentation_length && !in.failed; letter++) {
            if (*letter == 'R')
                cie->fde_encoding = read_u8(&in);
            else if (*letter == 'P')
                read_encoded(&in, read_u8(&in), 0);
            else if (*letter == 'L')
                read_u8(&in);
            else if (*letter == 'S')
                cie->signal_frame = true;
            else
                break; /* the data length still tells where the instructions are */
        }
        in.at = instructions;
    }
    if (in.failed || in.at > in.end)
        return false;
    cie->instructions = in;
    return true;
}

#define REMEMBERED_ROWS 8

struct interpreter {
    const struct cie *cie;
    struct frame_row row;
    struct frame_row initial; /* after the CIE's instructions: DW_CFA_restore */
    struct frame_row remembered[REMEMBERED_ROWS];
    unsigned remembered_count;
    uintptr_t location;
    uintptr_t target;
};

static struct register_rule *tracked(struct frame_row *row, uint64_t reg)
{
    return reg == REG_RBP ? &row->bp : reg == REG_RA ? &row->ra : NULL;
}

static void set_rule(struct interpreter *run, uint64_t reg, int how, int64_t offset)
{
    struct register_rule *rule = tracked(&run->row, reg);
    if (rule)
        *rule = (struct register_rule){how, offset};
}

static void restore_rule(struct interpreter *run, uint64_t reg)
{
    struct register_rule *rule = tracked(&run->row, reg);
    if (rule)
        *rule = *tracked(&run->initial, reg);
}

/* Runs instructions until the row for run->target is reached; false when
 * they cannot be followed. */
static bool execute(struct interpreter *run, struct reader in)
{
    const struct cie *cie = run->cie;
    while (in.at < in.end) {
        uint8_t op = read_u8(&in);
        uint64_t advance = 0;
        uint8_t low = op & 0x3f;
        switch (op >> 6) {
        case 1:
            advance = low;
            goto advance;
        case 2:
            set_rule(run, low, OFFSET, (int64_t)read_uleb(&in) * cie->data_alignment);
            continue;
        case 3:
            restore_rule(run, low);
            continue;
        }
        switch (op) {
        case 0x00: /* nop */
            break;
        case 0x01: /* set_loc */
            run->location = read_encoded(&in, cie->fde_encoding, 0);
            if (run->location > run->target)
                return !in.failed;
            break;
        case 0x02: {
            advance = read_u8(&in);
            goto advance;
        }
        case 0x03: {
            uint16_t delta;
            take(&in, &delta, 2);
            advance = delta;
            goto advance;
        }
        case 0x04: {
            uint32_t delta;
            take(&in, &delta, 4);
            advance = delta;
            goto advance;
        }
        case 0x05: { /* offset_extended */
            uint64_t reg = read_uleb(&in);
            set_rule(run, reg, OFFSET, (int64_t)read_uleb(&in) * cie->data_alignment);
            break;
        }
        case 0x06: /* restore_extended */
            restore_rule(run, read_uleb(&in));
            break;
        case 0x07: /* undefined */
            set_rule(run, read_uleb(&in), UNDEFINED, 0);
            break;
        case 0x08: /* same_value */
            set_rule(run, read_uleb(&in), SAME, 0);
            break;
        case 0x09: { /* register */
            uint64_t reg = read_uleb(&in);
            read_uleb(&in);
            set_rule(run, reg, OTHER, 0);
            break;
        }
        case 0x0a: /* remember_state */
            if (run->remembered_count == REMEMBERED_ROWS)
                return false;
            run->remembered[run->remembered_count++] = run->row;
            break;
        case 0x0b: /* restore_state: the CFA rule too, as GCC's epilogues expect */
            if (run->remembered_count == 0)
                return false;
            run->row = run->remembered[--run->remembered_count];
            break;
        case 0x0c: /* def_cfa */
            run->row.cfa_register = (unsigned)read_uleb(&in);
            run->row.cfa_offset = (int64_t)read_uleb(&in);
            run->row.cfa_expression = false;
            break;
        case 0x0d: /* def_cfa_register */
            run->row.cfa_register = (unsigned)read_uleb(&in);
            run->row.cfa_expression = false;
            break;
        case 0x0e: /* def_cfa_offset */
            run->row.cfa_offset = (int64_t)read_uleb(&in);
            break;
        case 0x0f: /* def_cfa_expression */
            in.at += read_uleb(&in);
            run->row.cfa_expression = true;
            break;
        case 0x10:   /* expression */
        case 0x16: { /* val_expression */
            uint64_t reg = read_uleb(&in);
            in.at += read_uleb(&in);
            set_rule(run, reg, OTHER, 0);
            break;
        }
        case 0x11: { /* offset_extended_sf */
            uint64_t reg = read_uleb(&in);
            set_rule(run, reg, OFFSET, read_sleb(&in) * cie->data_alignment);
            break;
        }
        case 0x12: /* def_cfa_sf */
            run->row.cfa_register = (unsigned)read_uleb(&in);
            run->row.cfa_offset = read_sleb(&in) * cie->data_alignment;
            run->row.cfa_expression = false;
            break;
        case 0x13: /* def_cfa_offset_sf */
            run->row.cfa_offset = read_sleb(&in) * cie->data_alignment;
            break;
        case 0x14:   /* val_offset */
        case 0x15: { /* val_offset_sf */
            uint64_t reg = read_uleb(&in);
            read_uleb(&in);
            set_rule(run, reg, OTHER, 0);
            break;
        }
        case 0x2e: /* GNU_args_size: only matters when landing in a handler */
            read_uleb(&in);
            break;
        case 0x2f: { /* GNU_negative_offset_extended */
            uint64_t reg = read_uleb(&in);
            set_rule(run, reg, OFFSET, -(int64_t)read_uleb(&in) * cie->data_alignment);
            break;
        }
        default:
            return false;
        }
        if (in.failed)
            return false;
        continue;
    advance:
        if (in.failed)
            return false;
        run->location += advance * cie->code_alignment;
        if (run->location > run->target)
            return true;
    }
    return !in.failed;
}

static bool fits(int64_t value, unsigned bits)
{
    int64_t limit = INT64_C(1) << (bits - 1);
    return value >= -limit && value < limit;
}

static frame_rule pack(const struct frame_row *row)
{
    if (row->ra.how == UNDEFINED)
        return RULE_END;
    if (row->cfa_expression || (row->cfa_register != REG_RSP && row->cfa_register != REG_RBP) ||
        row->ra.how != OFFSET || !fits(row->ra.offset, 8) || !fits(row->cfa_offset, 24))
        return RULE_UNKNOWN;
    frame_rule rule = RULE_STEP;
    if (row->cfa_register == REG_RBP)
        rule |= 1u << 2;
    if (row->bp.how == OFFSET) {
        if (!fits(row->bp.offset, 16))
            return RULE_UNKNOWN;
        rule |= 1u << 3;
        rule |= (frame_rule)(uint16_t)row->bp.offset << 24;
    } else if (row->bp.how != SAME) {
        return RULE_UNKNOWN; /* a later rbp-based CFA would be computed from garbage */
    }
    rule |= (frame_rule)(uint8_t)row->ra.offset << 16;
    rule |= (frame_rule)row->cfa_offset << 40;
    return rule;
}

MONITOR_TEXT frame_rule cfi_rule_at(uintptr_t address)
{
    struct dl_find_object object;
    if (_dl_find_object((void *)address, &object) != 0 || !object.dlfo_eh_frame)
        return RULE_UNKNOWN;
    const uint8_t *fde = find_fde(object.dlfo_eh_frame, address);
    if (!fde)
        return RULE_UNKNOWN;
    struct reader in;
    if (!open_entry(fde, &in))
        return RULE_UNKNOWN;
    uint32_t cie_offset;
    take(&in, &cie_offset, 4);
    if (in.failed || cie_offset == 0)
        return RULE_UNKNOWN;
    struct cie cie;
    /* The offset is back from the field itself. */
    if (!parse_cie(in.at - 4 - cie_offset, &cie) || cie.signal_frame)
        return RULE_UNKNOWN;
    uintptr_t begin = read_encoded(&in, cie.fde_encoding, 0);
    uintptr_t range = read_encoded(&in, cie.fde_encoding & PE_FORMAT, 0);
    if (in.failed || address < begin || address - begin >= range)
        return RULE_UNKNOWN;
    if (cie.has_augmentation_data)
        in.at += read_uleb(&in);
    if (in.failed || in.at > in.end)
        return RULE_UNKNOWN;

    struct interpreter run = {
        .cie = &cie,
        .row = {.cfa_register = REG_RSP, .bp = {SAME, 0}, .ra = {SAME, 0}},
        .location = begin,
        .target = address,
    };
    if (!execute(&run, cie.instructions))
        return RULE_UNKNOWN;
    run.initial = run.row;
    run.location = begin;
    if (!execute(&run, in))
        return RULE_UNKNOWN;
    return pack(&run.row);
}
#endif
