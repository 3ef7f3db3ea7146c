/* Allocates from prefixed_allocator.c's je_ functions: 1,000 items of 100
 * bytes (make_item), 400 of them freed (drop_item), 10 of the others grown
 * to 200 bytes (grow_item), 5 tables of 10 x 30 bytes (make_table); and
 * one block of 50 bytes from malloc.  It frees nothing else. */
#include <stdlib.h>

void *je_malloc(size_t size);
void je_free(void *block);
void *je_calloc(size_t count, size_t size);
void *je_realloc(void *old, size_t size);

static void *items[1000];
static void *tables[5];
static void *kept;

__attribute__((noinline)) static void *make_item(void)
{
    return je_malloc(100);
}

__attribute__((noinline)) static void drop_item(void *item)
{
    je_free(item);
}

__attribute__((noinline)) static void *grow_item(void *item)
{
    return je_realloc(item, 200);
}

__attribute__((noinline)) static void *make_table(void)
{
    return je_calloc(10, 30);
}

int main(void)
{
    for (int i = 0; i < 1000; i++)
        items[i] = make_item();
    for (int i = 0; i < 400; i++)
        drop_item(items[i]);
    for (int i = 400; i < 410; i++)
        items[i] = grow_item(items[i]);
    for (int i = 0; i < 5; i++)
        tables[i] = make_table();
    kept = malloc(50);
    return 0;
}
