/* Regions over time, with nothing allocated meanwhile: map_page maps 10
 * pages one at a time, then, after a pause of 2 ms (twice the monitor's
 * first interval between points over time), an eleventh; after another
 * such pause it unmaps one page, and exits after a third.  Exits 1 if a
 * call failed. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096

__attribute__((noinline)) static char *map_page(void)
{
    return mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void pause_2ms(void)
{
    struct timespec pause = {0, 2000000};
    while (nanosleep(&pause, &pause))
        ;
}

int main(void)
{
    char *pages[11];
    for (int i = 0; i < 10; i++)
        if ((pages[i] = map_page()) == MAP_FAILED)
            return 1;
    pause_2ms();
    if ((pages[10] = map_page()) == MAP_FAILED)
        return 1;
    pause_2ms();
    if (munmap(pages[0], PAGE))
        return 1;
    pause_2ms();
    return 0;
}
