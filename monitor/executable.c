/* The executable's own functions, found in its file's symbol tables
 * (executable.h). */
#include "executable.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"

/* The symbol's value (its address before the load bias), or 0. */
static uint64_t symbol_value(const unsigned char *image, size_t size, const char *name)
{
    const Elf64_Ehdr *header = (const Elf64_Ehdr *)image;
    if (size < sizeof *header || memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
        header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_shentsize != sizeof(Elf64_Shdr) ||
        header->e_shoff > size || (size - header->e_shoff) / sizeof(Elf64_Shdr) < header->e_shnum)
        return 0;
    const Elf64_Shdr *sections = (const Elf64_Shdr *)(image + header->e_shoff);
    size_t wanted_size = strlen(name) + 1;
    for (Elf64_Word wanted = SHT_SYMTAB;; wanted = SHT_DYNSYM) {
        for (unsigned i = 0; i < header->e_shnum; i++) {
            const Elf64_Shdr *table = &sections[i];
            if (table->sh_type != wanted || table->sh_link >= header->e_shnum)
                continue;
            const Elf64_Shdr *names = &sections[table->sh_link];
            if (table->sh_offset > size || table->sh_size > size - table->sh_offset ||
                names->sh_offset > size || names->sh_size > size - names->sh_offset)
                continue;
            const Elf64_Sym *symbols = (const Elf64_Sym *)(image + table->sh_offset);
            const char *text = (const char *)image + names->sh_offset;
            for (size_t n = 0; n < table->sh_size / sizeof(Elf64_Sym); n++) {
                const Elf64_Sym *symbol = &symbols[n];
                if (ELF64_ST_TYPE(symbol->st_info) != STT_FUNC || symbol->st_shndx == SHN_UNDEF ||
                    symbol->st_name >= names->sh_size || names->sh_size - symbol->st_name < wanted_size)
                    continue;
                if (memcmp(text + symbol->st_name, name, wanted_size) == 0)
                    return symbol->st_value;
            }
        }
        if (wanted == SHT_DYNSYM)
            return 0;
    }
}

static int first_object(struct dl_phdr_info *info, size_t size, void *bias)
{
    (void)size;
    *(uintptr_t *)bias = (uintptr_t)info->dlpi_addr;
    return 1; /* the first is the executable */
}

uintptr_t executable_function(const char *name)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat status;
    void *image = NULL;
    if (fstat(fd, &status) == 0 && status.st_size > 0)
        image = region_map_as((size_t)status.st_size, PROT_READ, fd, 0);
    close(fd);
    if (!image)
        return 0;
    uint64_t value = symbol_value(image, (size_t)status.st_size, name);
    region_unmap(image, (size_t)status.st_size);
    if (!value)
        return 0;
    uintptr_t bias = 0;
    dl_iterate_phdr(first_object, &bias);
    return bias + (uintptr_t)value;
}
