// 100 times, descends 20 levels, each holding a 40-byte object from new in
// a unique_ptr, and throws from the bottom; the exception passes through
// every allocating frame to main, which catches it, and the unwinding
// deletes all 20 objects.  So 2,000 news of 40 bytes in level(), all
// deleted, and 100 exceptions.
#include <cstdio>
#include <memory>
#include <stdexcept>

struct Node {
    long payload[5];
};

__attribute__((noinline)) static void level(int depth)
{
    std::unique_ptr<Node> held(new Node{});
    if (depth == 1)
        throw std::runtime_error("bottom");
    level(depth - 1);
    held->payload[0] = depth;
}

int main()
{
    int caught = 0;
    for (int round = 0; round < 100; round++) {
        try {
            level(20);
        } catch (const std::runtime_error &) {
            caught++;
        }
    }
    std::printf("caught %d\n", caught);
    return caught == 100 ? 0 : 1;
}
