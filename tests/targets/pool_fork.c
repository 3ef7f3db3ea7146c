/* A pool and a mapped region across fork: the parent takes 10 objects of
 * 32 bytes from its pool and maps 4 pages, then forks; the child takes 5
 * more, resets the pool (its own 5 and the parent's 10), unmaps the region
 * and exits; the parent, the child ended, frees 3 of its objects and keeps
 * the rest and the region. */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mprof.h"

static struct {
    char bytes[64 * 32];
    int used;
} pool;

static void *take(void)
{
    void *object = pool.bytes + 32 * pool.used++;
    MPROF_POOL_ALLOC(&pool, object, 32);
    return object;
}

int main(void)
{
    MPROF_POOL_CREATE(&pool, "forked pool");
    void *objects[10];
    for (int i = 0; i < 10; i++)
        objects[i] = take();
    char *region = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 5; i++)
            take();
        MPROF_POOL_RESET(&pool);
        munmap(region, 4 * 4096);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    for (int i = 0; i < 3; i++)
        MPROF_POOL_FREE(&pool, objects[i]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
