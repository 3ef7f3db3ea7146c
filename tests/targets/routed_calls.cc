/* For mprof attach's tests of the global offset table slots it routes: a
 * program that imports the malloc family, C++'s new and delete, dlopen,
 * pthread_create and the exec family, and calls them a line of stdin at a
 * time (waiting in read between lines), built with the PLT and with
 * -fno-plt.  Each allocation's size is known:
 *   "round"   c_calls: malloc(100) grown by realloc to 200, calloc(4, 25),
 *             reallocarray(NULL, 10, 30), posix_memalign(64, 320),
 *             aligned_alloc(64, 128), memalign(32, 96): 7 allocations and
 *             7 frees (the realloc one of each), 1244 bytes; cxx_calls: new of a
 *             48-byte Widget, new int[25], new (nothrow) char[50], new of
 *             a 128-byte Aligned (alignas 64): 4 news and 4 deletes, 326
 *             bytes; all freed.  Answers "round N" (N: rounds so far).
 *   "rare"    rare_calls: valloc(4096) and pvalloc(100), both freed
 *             (functions no other line calls); answers "rare".
 *   "keep"    keep_block allocates 1000 bytes and keeps them; "kept N".
 *   "thread"  starts a thread whose thread_body allocates and frees 77
 *             bytes, and joins it; "joined".
 *   "plugin PATH"  dlopen(PATH, RTLD_NOW) (plugin.c), and keeps the 4000
 *             bytes its plugin_allocate allocates; "plugged".
 *   "exec-fail"  execv of a file that does not exist; "failed ENOENT". */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <new>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct Widget {
    char bytes[48];
};
struct alignas(64) Aligned {
    char bytes[128];
};

static int rounds, kept_count;
static void *kept[1000];

__attribute__((noinline)) static void c_calls(void)
{
    char *grown = static_cast<char *>(realloc(malloc(100), 200));
    void *zeroed = calloc(4, 25);
    void *array = reallocarray(NULL, 10, 30);
    void *aligned = NULL;
    if (posix_memalign(&aligned, 64, 320) != 0)
        abort();
    void *c11 = aligned_alloc(64, 128);
    void *old = memalign(32, 96);
    free(grown);
    free(zeroed);
    free(array);
    free(aligned);
    free(c11);
    free(old);
}

__attribute__((noinline)) static void cxx_calls(void)
{
    Widget *widget = new Widget;
    int *numbers = new int[25];
    char *text = new (std::nothrow) char[50];
    Aligned *aligned = new Aligned;
    delete widget;
    delete[] numbers;
    delete[] text;
    delete aligned;
}

__attribute__((noinline)) static void rare_calls(void)
{
    free(valloc(4096));
    free(pvalloc(100));
}

__attribute__((noinline)) static void keep_block(void)
{
    kept[kept_count++] = malloc(1000);
}

__attribute__((noinline)) static void *thread_body(void *unused)
{
    free(malloc(77));
    return unused;
}

__attribute__((noinline)) static void use_plugin(const char *path)
{
    void *library = dlopen(path, RTLD_NOW);
    void *(*allocate)(size_t) = library ? reinterpret_cast<void *(*)(size_t)>(dlsym(library, "plugin_allocate"))
                                        : NULL;
    if (!allocate) {
        printf("no plugin\n");
        return;
    }
    kept[kept_count++] = allocate(4000);
    printf("plugged\n");
}

int main()
{
    char line[4200];
    /* A byte at a time: the thread waits in read between lines. */
    setvbuf(stdin, NULL, _IONBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strcmp(line, "round")) {
            c_calls();
            cxx_calls();
            printf("round %d\n", ++rounds);
        } else if (!strcmp(line, "rare")) {
            rare_calls();
            printf("rare\n");
        } else if (!strcmp(line, "keep") && kept_count < 1000) {
            keep_block();
            printf("kept %d\n", kept_count);
        } else if (!strcmp(line, "thread")) {
            pthread_t thread;
            if (pthread_create(&thread, NULL, thread_body, NULL) != 0 || pthread_join(thread, NULL) != 0)
                abort();
            printf("joined\n");
        } else if (!strncmp(line, "plugin ", 7) && kept_count < 1000) {
            use_plugin(line + 7);
        } else if (!strcmp(line, "exec-fail")) {
            char *arguments[] = {const_cast<char *>("x"), NULL};
            execv("/nonexistent/mprof-test-program", arguments);
            printf("failed %s\n", errno == ENOENT ? "ENOENT" : strerror(errno));
        } else {
            printf("?\n");
        }
        fflush(stdout);
    }
    return 0;
}
