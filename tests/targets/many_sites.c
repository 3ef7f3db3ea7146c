/* 5,000 call sites of malloc in main, site n allocating n + 1 bytes and
 * keeping them: enough distinct call chains to grow the monitor's tables
 * of chains and sites, and its gathering of them at exit, past their
 * first sizes (1,024 and 4,096). */
#include <stdlib.h>

static void *volatile kept;

#define SITE(n) kept = malloc((n) + 1);
#define SITES_10(n) SITE(n) SITE(n + 1) SITE(n + 2) SITE(n + 3) SITE(n + 4) SITE(n + 5) SITE(n + 6) \
    SITE(n + 7) SITE(n + 8) SITE(n + 9)
#define SITES_100(n) SITES_10(n) SITES_10(n + 10) SITES_10(n + 20) SITES_10(n + 30) SITES_10(n + 40) \
    SITES_10(n + 50) SITES_10(n + 60) SITES_10(n + 70) SITES_10(n + 80) SITES_10(n + 90)
#define SITES_1000(n) SITES_100(n) SITES_100(n + 100) SITES_100(n + 200) SITES_100(n + 300) \
    SITES_100(n + 400) SITES_100(n + 500) SITES_100(n + 600) SITES_100(n + 700) SITES_100(n + 800) \
    SITES_100(n + 900)

int main(void)
{
    SITES_1000(0)
    SITES_1000(1000)
    SITES_1000(2000)
    SITES_1000(3000)
    SITES_1000(4000)
    return 0;
}
