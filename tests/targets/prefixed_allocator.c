/* A second allocator with je_-prefixed entry points, as jemalloc built with
 * --with-jemalloc-prefix=je_ has them: blocks bumped from a region of its
 * own (never from malloc), each after a 16-byte word of its size. */
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define REGION (64u << 20)

#ifdef LARGE_SECTIONS
/* Built so (-DLARGE_SECTIONS) with ld's default separate code, its
 * segments are as some allocators': more code than the gap before it, a
 * constant table larger than the code, and zeroed memory (a static pool)
 * larger than both; each segment then ends nearer the next one's start
 * than its own size.  Kept, as the library exports them. */
const unsigned char je_size_table[64u << 10] = {1};
char je_static_pool[256u << 10];
__attribute__((used)) static void je_code(void)
{
    __asm__ volatile(".fill 8192, 1, 0x90");
}
#endif

static char *region;
static size_t used;

void *je_malloc(size_t size)
{
    if (!region) {
        void *mapped = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED)
            return NULL;
        region = mapped;
    }
    size_t room = 16 + ((size + 15) & ~(size_t)15);
    if (room > REGION - used)
        return NULL;
    char *block = region + used + 16;
    used += room;
    memcpy(block - 16, &size, sizeof size);
    return block;
}

void je_free(void *block)
{
    (void)block; /* a bump allocator keeps what it gave */
}

void *je_calloc(size_t count, size_t size)
{
    void *block = je_malloc(count * size);
    return block ? memset(block, 0, count * size) : NULL;
}

void *je_realloc(void *old, size_t size)
{
    void *block = je_malloc(size);
    if (block && old) {
        size_t old_size;
        memcpy(&old_size, (char *)old - 16, sizeof old_size);
        memcpy(block, old, old_size < size ? old_size : size);
        je_free(old);
    }
    return block;
}
