/* Preloaded after the monitor: renameat2 fails as on a filesystem that has
 * no RENAME_NOREPLACE (EINVAL), so the monitor must name its data file by
 * link and unlink instead. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>

int renameat2(int from_directory, const char *from, int to_directory, const char *to, unsigned flags)
{
    (void)from_directory, (void)from, (void)to_directory, (void)to, (void)flags;
    errno = EINVAL;
    return -1;
}
