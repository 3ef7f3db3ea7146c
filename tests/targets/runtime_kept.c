/* Leaks 1,000 bytes of its own (in leak_here) and makes the C runtime keep
 * what it keeps on purpose: stdout's buffer (written to a pipe) and the
 * C.UTF-8 locale's tables; given a library's path, also a joined thread's
 * dtv and the dynamic loader's blocks for the library, dlopen'ed and never
 * closed (their sizes depend on what else is loaded, the monitor too). */
#include <dlfcn.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *kept;

__attribute__((noinline)) static void leak_here(void)
{
    kept = malloc(1000);
}

static void *idle(void *unused)
{
    return unused;
}

int main(int argc, char **argv)
{
    pthread_t thread;

    if (!setlocale(LC_ALL, "C.UTF-8"))
        return 1;
    if (argc > 1 && (pthread_create(&thread, NULL, idle, NULL) != 0 || pthread_join(thread, NULL) != 0 ||
                     !dlopen(argv[1], RTLD_NOW)))
        return 1;
    leak_here();
    printf("kept %p\n", kept);
    return 0;
}
