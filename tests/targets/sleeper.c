/* Allocates 1000 blocks of 55 bytes, says "ready", then waits for a line on
 * stdin before allocating 1000 more: a data file written on signal in
 * between sees only the first thousand. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    static void *blocks[2000];
    for (int i = 0; i < 1000; i++)
        blocks[i] = malloc(55);
    if (write(STDOUT_FILENO, "ready\n", 6) != 6)
        return 1;
    char byte;
    while (read(STDIN_FILENO, &byte, 1) == 1 && byte != '\n')
        ;
    for (int i = 1000; i < 2000; i++)
        blocks[i] = malloc(55);
    return 0;
}
