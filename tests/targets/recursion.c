/* Recursive allocation patterns for the call graph's cycle merging:
 *
 *     recursion direct|mutual|three|qsort COUNT
 *
 * direct: down() calls itself 5 times before malloc(16);
 * mutual: even() and odd() call each other 6 times before malloc(24);
 * three:  a() -> b() -> c() -> a() ... 9 calls before malloc(40);
 * qsort:  sort_words() sorts with a comparison that allocates 48 bytes and
 *         sorts a second, nested array through sort_words again.
 * Each pattern runs COUNT times and frees nothing, so kept == allocated. */
#include <stdlib.h>
#include <string.h>

static void *down(int depth)
{
    if (depth == 0)
        return malloc(16);
    void *block = down(depth - 1);
    __asm__ volatile("" ::: "memory"); /* keeps the call a call, not a jump */
    return block;
}

static void *odd(int n);

static void *even(int n)
{
    void *block = n == 0 ? malloc(24) : odd(n - 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

static void *odd(int n)
{
    void *block = even(n - 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

static void *c(int n);

static void *a(int n)
{
    void *block = n == 0 ? malloc(40) : c(n - 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

static void *b(int n)
{
    void *block = a(n - 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

static void *c(int n)
{
    void *block = b(n - 1);
    __asm__ volatile("" ::: "memory");
    return block;
}

static int nesting;
static void sort_words(int *words, size_t count);

static int compare(const void *left, const void *right)
{
    /* Each comparison allocates; the outer sort's first comparison also
     * sorts a nested array, recursing through qsort. */
    if (malloc(48) == NULL)
        abort();
    if (nesting == 1) {
        int inner[2] = {2, 1};
        sort_words(inner, 2);
    }
    return *(const int *)left - *(const int *)right;
}

static void sort_words(int *words, size_t count)
{
    nesting++;
    qsort(words, count, sizeof(int), compare);
    nesting--;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long count = atol(argv[2]);
    for (long i = 0; i < count; i++) {
        if (!strcmp(argv[1], "direct"))
            down(5);
        else if (!strcmp(argv[1], "mutual"))
            even(6);
        else if (!strcmp(argv[1], "three"))
            a(9);
        else if (!strcmp(argv[1], "qsort")) {
            int words[2] = {2, 1};
            sort_words(words, 2);
        } else
            return 2;
    }
    return 0;
}
