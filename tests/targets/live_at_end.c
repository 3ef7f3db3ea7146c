/* What is live when the process ends, for the last point of memory over
 * time: with "one", a block of 1 byte allocated and kept; else a block of
 * 1 byte allocated and freed, nothing live at the end.  Nothing else
 * allocates (no stdio).
 * Usage: live_at_end [one] */
#include <stdlib.h>
#include <string.h>

void *volatile kept;

int main(int argc, char **argv)
{
    kept = malloc(1);
    if (!(argc > 1 && strcmp(argv[1], "one") == 0))
        free(kept);
    return 0;
}
