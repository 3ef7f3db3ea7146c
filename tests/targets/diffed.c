/* Two builds of one program for mprof diff's tests.
 *
 * The base build: load_table allocates 200 rows of 100 bytes (20,000) and
 * frees them at the end; work allocates and frees a 64-byte buffer 1,000
 * times (64,000 bytes, 1,000 temporaries); the peak is 20,064 bytes, the
 * table and one buffer.
 *
 * Built with -DREGRESSION, the planted regression: remember loses 64
 * blocks of 4,096 bytes (262,144: definitely lost, no pointer to them kept
 * at the end), and the table has 150 rows
 * (15,000, 5,000 less).  work does not change.  The new build's code, and
 * so every address, differs from the base's; its lines do not. */
#include <stdlib.h>
#include <string.h>

#ifdef REGRESSION
#define ROWS 150
#define REMEMBERED 64
#else
#define ROWS 200
#define REMEMBERED 0
#endif

static void *table[200];

__attribute__((noinline)) static void load_table(void)
{
    for (int n = 0; n < ROWS; n++)
        table[n] = malloc(100);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void remember(int n)
{
    char *volatile lost = malloc(4096);
    memset(lost, n, 4096);
}

__attribute__((noinline)) static int work(void)
{
    int sum = 0;
    for (int n = 0; n < 1000; n++) {
        char *buffer = malloc(64);
        memset(buffer, n, 64);
        sum += buffer[n % 64];
        free(buffer);
    }
    return sum;
}

int main(void)
{
    load_table();
    for (int n = 0; n < REMEMBERED; n++)
        remember(n);
    int sum = work();
    for (int n = 0; n < ROWS; n++)
        free(table[n]);
    return sum == 12345;
}
