/* Test target for the live view's leak kinds (issue 49): a server that loses known blocks, then runs on until told.
 *
 * As memcheck would say of it while it waits (tests/e2e/test_live_view.py and test_watch_requests.py check it):
 *   definitely lost  drop_buffer 5 x 200, list_node 1 x 64 (a list's head, dropped)
 *   indirectly lost  list_node 4 x 64 (the rest of that list)
 *   possibly lost    middle_block 1 x 100 (a global points 40 bytes in)
 *   still reachable  keep_entry 30 x 32 (from the global kept)
 * Then it makes and frees a 24-byte block under scratch every 10 ms, so that the monitor notices a viewer's first
 * request, until the monitor's answering thread is there (the second thread of /proc/self/task); then it writes
 * "quiet" and allocates nothing until a line or the end of its input, when it exits with status 0.  It writes "ready"
 * once its blocks are lost.  No stdio: its buffer would be one more block.
 * Usage: losing_server < INPUT */
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define SCRUB_WORDS 512
#include "scrub.h"

#define KEPT 30
#define LIST 5

struct node {
    struct node *next;
    char payload[56];
};

void *kept[KEPT];
char *into_middle;

static void *drop_buffer(void) { return malloc(200); }
static void *keep_entry(void) { return malloc(32); }
static char *middle_block(void) { return malloc(100); }
static void *scratch(void) { return malloc(24); }

static struct node *list_node(struct node *next) {
    struct node *n = malloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->next = next;
    return n;
}

/* Each address dropped as its function returns: its frame is below the stack pointer from then on. */
static void lose_buffers(void) {
    for (int i = 0; i < 5; i++) {
        char *volatile buffer = drop_buffer();
        memset(buffer, 'x', 200);
    }
}

static void lose_list(void) {
    struct node *head = NULL;
    for (int i = 0; i < LIST; i++)
        head = list_node(head);
}

static void keep_and_point_inside(void) {
    for (int i = 0; i < KEPT; i++)
        kept[i] = keep_entry();
    char *middle = middle_block();
    memset(middle, 0, 100); /* its first word 0: no heuristic of memcheck's takes the pointer into it */
    into_middle = middle + 40;
}

/* stat, not opendir: counting the threads allocates nothing. */
static int threads(void) {
    struct stat task;
    return stat("/proc/self/task", &task) == 0 ? (int)task.st_nlink - 2 : 0;
}

static int input_came(int timeout_ms) {
    struct pollfd input = {.fd = 0, .events = POLLIN};
    return poll(&input, 1, timeout_ms) > 0;
}

int main(void) {
    keep_and_point_inside();
    lose_buffers();
    lose_list();
    scrub();
    if (write(1, "ready\n", 6) != 6)
        return 2;
    while (threads() < 2) {
        void *volatile block = scratch();
        free(block);
        if (input_came(10))
            return 0;
    }
    scrub();
    if (write(1, "quiet\n", 6) != 6)
        return 2;
    while (!input_came(-1))
        ;
    return 0;
}
