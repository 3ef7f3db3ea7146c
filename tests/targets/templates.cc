// C++ names for the reducer: a class template, a namespace, an operator
// with < > & in its name, and an inlined helper that allocates.
#include <cstdlib>
#include <vector>

namespace shapes {

template <typename T, int N>
struct Grid {
    std::vector<T> cells;
    __attribute__((noinline)) void grow() { cells.resize(cells.size() + N); }
};

struct Label {
    char *text;
};

// Always inlined into make_label: the allocation's logical chain is
// make_label > copy_text.
static inline __attribute__((always_inline)) char *copy_text(int length)
{
    return static_cast<char *>(std::malloc(static_cast<std::size_t>(length)));
}

__attribute__((noinline)) Label make_label(int length)
{
    Label label{copy_text(length)};
    return label;
}

}  // namespace shapes

template <typename A, typename B>
__attribute__((noinline)) bool operator<(const shapes::Grid<A, 4> &left, const shapes::Grid<B, 8> &right)
{
    // An operator whose name holds < > &: allocates so it is on a chain.
    void *scratch = std::malloc(72);
    bool less = left.cells.size() < right.cells.size();
    std::free(scratch);
    return less;
}

int main()
{
    shapes::Grid<double, 4> small;
    shapes::Grid<char, 8> large;
    for (int i = 0; i < 3; i++) {
        small.grow();
        large.grow();
    }
    bool less = small < large;
    shapes::Label label = shapes::make_label(33);
    (void)label;  // kept: 33 bytes under main > make_label > copy_text
    return less ? 0 : 1;
}
