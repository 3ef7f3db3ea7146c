/* Known allocations for the export tests, by function:
 *
 *   cache_slot (inlined into load_cache): 100 blocks of 1,000 bytes, all
 *       live at the peak; the even ones freed, 50 (50,000 bytes) never;
 *   make_name: 300 blocks of 48 bytes (14,400), all live at the peak and
 *       never freed;
 *   parse: 20 blocks of 4,096 bytes (81,920), each freed before the next
 *       allocation: 20 temporaries, after the peak.
 *
 * The peak, 114,400 bytes in 400 blocks, is reached when the last name is
 * made.  main calls load_cache and parse directly and make_name through
 * name_all. */
#include <stdlib.h>
#include <string.h>

#define SLOTS 100
#define NAMES 300
#define PARSES 20

static void *slots[SLOTS];
static char *names[NAMES];

static inline __attribute__((always_inline)) void *cache_slot(void)
{
    return malloc(1000);
}

__attribute__((noinline)) static void load_cache(int n)
{
    slots[n] = cache_slot();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static char *make_name(int n)
{
    char *name = malloc(48);
    memset(name, 'a' + n % 26, 47);
    name[47] = 0;
    return name;
}

__attribute__((noinline)) static void name_all(void)
{
    for (int n = 0; n < NAMES; n++)
        names[n] = make_name(n);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static size_t parse(int n)
{
    char *buffer = malloc(4096);
    memset(buffer, n, 4096);
    size_t sum = (size_t)buffer[n];
    free(buffer);
    return sum;
}

int main(void)
{
    for (int n = 0; n < SLOTS; n++)
        load_cache(n);
    name_all();
    for (int n = 0; n < SLOTS; n += 2)
        free(slots[n]);
    size_t sum = 0;
    for (int n = 0; n < PARSES; n++)
        sum += parse(n);
    return sum == 0 ? 1 : 0;
}
