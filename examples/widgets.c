/* The producer/consumer simulation of Figure 1 in Zorn and Hilfinger's
 * mprof paper: two producers allocate 204-byte widgets, the consumer frees
 * the blue ones and, by mistake, never the red ones.
 *
 *     widgets [COUNT]      COUNT widgets in all, 10000 by default
 *
 * random_flip is seeded and deterministic, so every figure mprof reports is
 * known in advance; the program prints the number of red widgets with
 * write(2), because stdio would allocate a buffer of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum color { RED, BLUE };

typedef struct {
    enum color c;
    int data[50];
} widget;

#define WSIZE sizeof(widget)
#define QUEUE_SIZE 10000 /* widgets are produced and consumed in batches of this many */

static unsigned long long random_state = 0x2545F4914F6CDD1DULL;

/* xorshift64*: returns 1 or 0 with equal probability. */
int random_flip(void)
{
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return (int)((random_state * 0x2545F4914F6CDD1DULL) >> 63);
}

widget *make_widget(void)
{
    widget *w;
    w = (widget *)malloc(WSIZE);
    return w;
}

widget *make_blue_widget(void)
{
    widget *w;
    w = make_widget();
    w->c = BLUE;
    return w;
}

widget *make_red_widget(void)
{
    widget *w;
    w = make_widget();
    w->c = RED;
    return w;
}

void consume_widget(widget *w)
{
    if (w->c == BLUE) {
        /* record blue widget */
        free(w);
    } else {
        /* record red widget */
    }
}

static widget *wqueue[QUEUE_SIZE];

int main(int argc, char **argv)
{
    long count = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
    long red = 0;
    for (long done = 0; done < count; done += QUEUE_SIZE) {
        long batch = count - done < QUEUE_SIZE ? count - done : QUEUE_SIZE;
        for (long i = 0; i < batch; i++) {
            if (random_flip())
                wqueue[i] = make_blue_widget();
            else
                wqueue[i] = make_red_widget();
        }
        for (long i = 0; i < batch; i++) {
            red += wqueue[i]->c == RED;
            consume_widget(wqueue[i]);
            wqueue[i] = NULL; /* consumed: the queue lets go of it, and a red widget is lost */
        }
    }
    char line[96];
    int length = snprintf(line, sizeof line, "widgets %ld red %ld blue %ld\n", count, red, count - red);
    if (write(STDOUT_FILENO, line, (size_t)length) != length)
        return 1;
    return 0;
}
