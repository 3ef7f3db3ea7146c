/* Two threads map and unmap a page ROUNDS times each, at once: the kernel
 * hands the page one unmaps to the other's next mmap. */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define ROUNDS 50000

static void *map_and_unmap(void *unused)
{
    (void)unused;
    for (int i = 0; i < ROUNDS; i++) {
        char *page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            return page;
        munmap(page, PAGE);
    }
    return NULL;
}

int main(void)
{
    pthread_t other;
    pthread_create(&other, NULL, map_and_unmap, NULL);
    void *mine = map_and_unmap(NULL), *its;
    pthread_join(other, &its);
    return mine == NULL && its == NULL && write(1, "ok\n", 3) == 3 ? 0 : 1;
}
