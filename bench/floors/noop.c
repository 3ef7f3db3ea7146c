/* Floor 1: an interposer that only forwards.  What any LD_PRELOAD profiler
 * pays before it does anything. */
#define ON_ALLOCATION ((void)0)
#include "forward.h"
