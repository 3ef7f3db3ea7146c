/* A region unmapped in two calls that overlap, as munmap allows (pages
 * already unmapped are no error): 4 pages mapped, munmap of the first 2,
 * then munmap of all 4; 1,000 times.  Between the two calls the first two
 * pages are a hole the program still treats as its own. */
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define ROUNDS 1000

int main(void)
{
    for (int i = 0; i < ROUNDS; i++) {
        char *region = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED)
            return 1;
        region[3 * PAGE] = 1;
        munmap(region, 2 * PAGE);
        munmap(region, 4 * PAGE);
    }
    return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
