/* realloc's and calloc's corner cases, with what each must return. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "realloc: %s\n", what);
        failures++;
    }
}

int main(void)
{
    char *a = realloc(NULL, 10); /* acts as malloc(10) */
    expect(a != NULL, "realloc(NULL, 10)");
    memcpy(a, "abcdefghi", 10);
    a = realloc(a, 1000); /* grows: old block freed, new one allocated */
    expect(a && !strcmp(a, "abcdefghi"), "grow keeps the contents");
    a = realloc(a, 5); /* shrinks */
    expect(a && !memcmp(a, "abcde", 5), "shrink keeps the contents");
    errno = 0;
    char *zero = realloc(a, 0); /* glibc frees and returns NULL */
    expect(zero == NULL, "realloc(p, 0) returns NULL");

    errno = 0;
    void *overflow = calloc(SIZE_MAX / 2, 3);
    expect(overflow == NULL && errno == ENOMEM, "calloc overflow is ENOMEM");
    int *zeroed = calloc(16, sizeof(int));
    int sum = 0;
    for (int i = 0; i < 16; i++)
        sum += zeroed[i];
    expect(zeroed && sum == 0, "calloc zeroes");

    errno = 0;
    void *array_overflow = reallocarray(zeroed, SIZE_MAX / 2, 3);
    expect(array_overflow == NULL && errno == ENOMEM, "reallocarray overflow is ENOMEM");
    zeroed = reallocarray(zeroed, 32, sizeof(int)); /* zeroed is still valid */
    expect(zeroed != NULL, "reallocarray grows");
    expect(malloc_usable_size(zeroed) >= 128, "malloc_usable_size after reallocarray");

    errno = 0;
    void *huge = realloc(zeroed, SIZE_MAX - 4096); /* fails: zeroed stays valid */
    expect(huge == NULL && errno == ENOMEM, "impossible realloc fails with ENOMEM");
    zeroed[31] = 5;
    free(zeroed);
    free(NULL);
    return failures;
}
