/* Finding and keeping the program's __lsan_default_suppressions (see
 * lsan_suppressions.h).  A program defines it for LeakSanitizer's runtime,
 * linked into the program, to find; it does not export it, so dlsym would
 * not see it from a preloaded library: the executable's own symbol tables
 * are read instead (executable.h). */
#include "lsan_suppressions.h"

#include <string.h>

#include "arena.h"
#include "executable.h"

#define HOOK_NAME "__lsan_default_suppressions"
/* More than any real file holds; a runaway string is cut here. */
#define MOST_TEXT (1u << 20)

struct lsan_suppressions lsan_suppressions_find(void)
{
    struct lsan_suppressions found = {0};
    uintptr_t address = executable_function(HOOK_NAME);
    if (!address)
        return found;
    const char *(*hook)(void) = (const char *(*)(void))address;
    const char *text = hook();
    if (!text)
        return found;
    size_t size = strnlen(text, MOST_TEXT);
    char *copy = size ? region_map(size) : NULL;
    if (!copy)
        return found;
    memcpy(copy, text, size);
    found.text = copy;
    found.size = (uint32_t)size;
    return found;
}
