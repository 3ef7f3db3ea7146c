// mprof.h and mprof_valgrind.h in C++ (built with -pedantic -Werror): an
// arena on a 4096-byte backing block from malloc announces one object of 64
// bytes, a malloc-like block of 32 bytes is carved from it through
// Valgrind's macro and kept, and the arena is destroyed and freed.
#include <cstdlib>

#include "mprof.h"
#include "mprof_valgrind.h"

struct Arena {
    char *base;
    std::size_t used;
};

int main()
{
    Arena arena{};
    arena.base = MPROF_BACKING(static_cast<char *>(std::malloc(4096)));
    MPROF_POOL_CREATE(&arena, "cxx arena");
    arena.used = 64;
    MPROF_POOL_ALLOC(&arena, arena.base, 64);
    VALGRIND_MALLOCLIKE_BLOCK(arena.base + 128, 32, 0, 0);
    MPROF_POOL_DESTROY(&arena);
    std::free(arena.base);
    return 0;
}
