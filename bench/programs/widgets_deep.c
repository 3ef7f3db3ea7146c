/* widgets, with each widget made at call depth DEPTH (default 50): a
 * recursion before make_widget, so every allocation has a long chain.
 *
 *     widgets_deep COUNT [DEPTH] */
#include <stdlib.h>

typedef struct {
    int c;
    int data[50];
} widget;

static unsigned long long state = 0x2545F4914F6CDD1DULL;

static int flip(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (int)((state * 0x2545F4914F6CDD1DULL) >> 63);
}

__attribute__((noinline)) static widget *make_widget(void)
{
    return malloc(sizeof(widget));
}

__attribute__((noinline)) static widget *descend(int depth)
{
    widget *w = depth ? descend(depth - 1) : make_widget();
    __asm__ volatile("" ::: "memory"); /* a call, not a jump */
    return w;
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    int depth = argc > 2 ? atoi(argv[2]) : 50;
    static widget *queue[10000];
    for (long done = 0; done < count; done += 10000) {
        for (int i = 0; i < 10000; i++) {
            queue[i] = descend(depth);
            queue[i]->c = flip();
        }
        for (int i = 0; i < 10000; i++)
            if (queue[i]->c)
                free(queue[i]);
    }
    return 0;
}
