// A C++ name with double quotes, for the HTML report's escaping test: the
// user-defined literal operator below demangles as
// operator"" _kb(unsigned long long), and allocates a block it never frees.
#include <cstdlib>

struct Buffer {
    char *data;
};

__attribute__((noinline)) Buffer operator"" _kb(unsigned long long count)
{
    return Buffer{static_cast<char *>(std::malloc(static_cast<std::size_t>(count) * 1024))};
}

int main()
{
    Buffer kept = 3_kb;  // 3072 bytes under main > operator"" _kb, never freed
    (void)kept;
    return 0;
}
