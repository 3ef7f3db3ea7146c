// Test target for the first screen of the reports (issue 50): what a C++
// developer's program does with the standard library.
//   - Cache::lookup fills a std::unordered_map<std::string,
//     std::vector<double>>: 50 vectors of 64 doubles (512 bytes each),
//     kept until exit and reachable;
//   - a registry kept until exit, reachable from a global: 200 strings;
//   - make_session's 50 sessions of 520 bytes, each lost when the next
//     overwrites the pointer (the last one stays reachable);
//   - score() copies each vector it is given: 200 temporaries of 512
//     bytes, each freed before anything else is allocated.
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

struct Cache {
    std::unordered_map<std::string, std::vector<double>> entries;

    __attribute__((noinline)) const std::vector<double> &lookup(const std::string &key)
    {
        auto found = entries.find(key);
        if (found != entries.end())
            return found->second;
        std::vector<double> values(64, 1.0);
        return entries.emplace(key, std::move(values)).first->second;
    }
};

struct Registry {
    std::vector<std::string *> names;
};

struct Session {
    char buffer[512];
    long id;
};

static Registry *registry;
// Not static: a store to a global no code reads could be left out, and the
// sessions with it.
Session *current;

__attribute__((noinline)) static double score(const std::vector<double> &values)
{
    std::vector<double> copy(values);
    double sum = 0;
    for (double value : copy)
        sum += value;
    return sum;
}

__attribute__((noinline)) static void make_session(long id)
{
    current = new Session{{}, id};
}

__attribute__((noinline)) static void remember(long id)
{
    registry->names.push_back(new std::string("a registered name of some length, number " + std::to_string(id)));
}

int main()
{
    Cache cache;
    registry = new Registry;
    double total = 0;
    for (long i = 0; i < 200; i++) {
        std::string key = "key number " + std::to_string(i % 50) + " of the cache, long enough to be allocated";
        total += score(cache.lookup(key));
        remember(i);
        if (i % 4 == 0)
            make_session(i);
    }
    std::printf("%.0f\n", total);
    return 0;
}
