// Every form of operator new and delete, with known counts and sizes; the
// program checks alignment and the nothrow and throwing failure paths.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

struct alignas(64) Aligned {
    char bytes[64];
};

static int check(bool ok, const char *what)
{
    if (!ok)
        std::fprintf(stderr, "cxx: %s\n", what);
    return ok ? 0 : 1;
}

int main()
{
    int failures = 0;
    int *one = new int(7);                                       // new 4
    int *many = new int[10];                                     // new[] 40
    int *quiet = new (std::nothrow) int;                         // nothrow new 4
    int *quiet_many = new (std::nothrow) int[5];                 // nothrow new[] 20
    Aligned *aligned = new Aligned;                              // aligned new 64
    Aligned *aligned_many = new Aligned[3];                      // aligned new[] 192
    Aligned *aligned_quiet = new (std::nothrow) Aligned;         // aligned nothrow new 64
    failures += check(reinterpret_cast<std::uintptr_t>(aligned) % 64 == 0, "new Aligned misaligned");
    failures += check(reinterpret_cast<std::uintptr_t>(aligned_many) % 64 == 0, "new Aligned[] misaligned");
    failures += check(reinterpret_cast<std::uintptr_t>(aligned_quiet) % 64 == 0, "nothrow Aligned misaligned");
    delete one;                                                  // sized delete
    delete[] many;
    delete quiet;
    delete[] quiet_many;
    delete aligned;                                              // aligned sized delete
    delete[] aligned_many;
    ::operator delete(aligned_quiet, std::align_val_t(64));
    ::operator delete(static_cast<void *>(nullptr));             // delete of NULL (a delete
                                                                 // expression tests for NULL itself)

    bool threw = false;
    try {
        char *huge = new char[(std::size_t)1 << 62];             // must throw bad_alloc
        huge[0] = 1;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    failures += check(threw, "huge new did not throw");
    char *huge_quiet = new (std::nothrow) char[(std::size_t)1 << 62];
    failures += check(huge_quiet == nullptr, "huge nothrow new did not return null");

    std::vector<long> kept;                                      // kept until exit: 3 x 8 bytes
    kept.reserve(3);
    kept.push_back(1);
    static std::vector<long> *leaked = new std::vector<long>(2); // leaked: 24 + 16 bytes
    (void)leaked;
    return failures;
}
