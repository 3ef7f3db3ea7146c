/* 300 call paths, main > f_T_U for T in 0..29 and U in 0..9, each function
 * allocating T * 10 + U + 1 bytes, once, and keeping them: a profile whose
 * page has hundreds of rows in each table. */
#include <stdlib.h>

static void *volatile kept;

#define FUNCTION(t, u) \
    __attribute__((noinline)) static void f_##t##_##u(void) { kept = malloc((t) * 10 + (u) + 1); }
#define TEN_FUNCTIONS(t) FUNCTION(t, 0) FUNCTION(t, 1) FUNCTION(t, 2) FUNCTION(t, 3) FUNCTION(t, 4) \
    FUNCTION(t, 5) FUNCTION(t, 6) FUNCTION(t, 7) FUNCTION(t, 8) FUNCTION(t, 9)
#define CALL(t, u) f_##t##_##u();
#define TEN_CALLS(t) CALL(t, 0) CALL(t, 1) CALL(t, 2) CALL(t, 3) CALL(t, 4) CALL(t, 5) CALL(t, 6) CALL(t, 7) \
    CALL(t, 8) CALL(t, 9)
#define THIRTY(what) what(0) what(1) what(2) what(3) what(4) what(5) what(6) what(7) what(8) what(9) what(10) \
    what(11) what(12) what(13) what(14) what(15) what(16) what(17) what(18) what(19) what(20) what(21) what(22) \
    what(23) what(24) what(25) what(26) what(27) what(28) what(29)

THIRTY(TEN_FUNCTIONS)

int main(void)
{
    THIRTY(TEN_CALLS)
    return 0;
}
