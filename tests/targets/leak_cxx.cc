// Test target for the leak kinds (issue 49): C++ objects memcheck's heuristics know, each kept and lost.
//
// Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it), by the program's allocating function:
//   still reachable  keep_string 1 x 40 (the buffer of a std::string placed in a global: its pointer is in .bss),
//                    keep_vector 1 x 24 + 1 x 400 (a new'd std::vector held by a global, and its ints),
//                    keep_array 1 x 56 (new Item[3]: the global points past the count, 8 bytes in: "newarray"),
//                    keep_derived 1 x 40 (new Both held as its second base, 16 bytes in: "multipleinheritance"),
//                    libstdc++'s emergency pool for exceptions, 1 x 72,704, from none of the program's functions
//   definitely lost  lose_string 1 x 32, lose_vector 1 x 24, lose_array 1 x 56, lose_derived 1 x 40
//   indirectly lost  lose_string 1 x 40, lose_vector 1 x 400
// Built with -D_GLIBCXX_USE_CXX11_ABI=0, a std::string is one pointer to the characters of a block that begins
// with their length, capacity and reference count, 24 bytes before ("stdstring"): keep_string 1 x 64 reachable,
// lose_string 1 x 8 definitely and 1 x 64 indirectly lost, the rest the same.
// Storage with no destructor holds the kept objects: a global's destructor would free them before the scan.
#include <cstdint>
#include <new>
#include <string>
#include <vector>

struct Item {
    long a = 1, b = 2;
    ~Item() { a = 0; }
};

struct First {
    virtual ~First() {}
    long first = 1;
};

struct Second {
    virtual ~Second() {}
    long second = 2;
};

struct Both : First, Second {
    long both = 3;
};

// 39 characters: a block of its own, past the 15 a std::string holds inside itself.
static const char LONG_TEXT[] = "thirty-nine characters, past the SSO...";

alignas(std::string) unsigned char kept_string_storage[sizeof(std::string)];
std::vector<int> *kept_vector;
Item *kept_array;
Second *kept_second;

__attribute__((noinline)) void keep_string() { new (kept_string_storage) std::string(LONG_TEXT); }
__attribute__((noinline)) void keep_vector() { kept_vector = new std::vector<int>(100, 7); }
__attribute__((noinline)) void keep_array() { kept_array = new Item[3]; }
__attribute__((noinline)) void keep_derived() { kept_second = new Both; }

__attribute__((noinline)) void lose_string() { (void)new std::string(LONG_TEXT); }
__attribute__((noinline)) void lose_vector() { (void)new std::vector<int>(100, 7); }
__attribute__((noinline)) void lose_array() { (void)new Item[3]; }
__attribute__((noinline)) void lose_derived() { (void)static_cast<Second *>(new Both); }

// Leaves no copy of a lost block's address in main's frame or in the registers a scan at exit reads.
__attribute__((noinline)) void scrub() {
    volatile std::uintptr_t words[64] __attribute__((unused));
    for (int i = 0; i < 64; i++)
        words[i] = 0;
    __asm__ volatile("xor %%eax, %%eax; xor %%edx, %%edx; xor %%ecx, %%ecx; xor %%esi, %%esi; xor %%edi, %%edi;"
                     "xor %%r8d, %%r8d; xor %%r9d, %%r9d; xor %%r10d, %%r10d; xor %%r11d, %%r11d"
                     :
                     :
                     : "rax", "rdx", "rcx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
}

int main() {
    keep_string();
    keep_vector();
    keep_array();
    keep_derived();
    lose_string();
    lose_vector();
    lose_array();
    lose_derived();
    scrub();
    return 0;
}
