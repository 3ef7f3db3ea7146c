// A small C++ program of the kind a report must explain from its first
// screen: a cache that grows (what is live at the peak), sessions that are
// never deleted (the leak), and log lines built and thrown away
// (temporaries).  Built at -O2 -g: most of the standard library is
// inlined into these functions, the rest stays in libstdc++.
//
// Known figures (the tests count on them):
//   Cache::get      KEYS entries, each a node of the map holding a copy of
//                   the key (a std::string of 32 characters, 33 bytes) and
//                   a std::vector<int> of 64 ints (256 bytes), and the map's
//                   bucket arrays; all live at the peak, freed at exit.
//   cache_key       KEYS std::string of 32 characters (33 bytes), each
//                   freed once Cache::get has copied it: temporaries.
//   create_session  SESSIONS Session objects (new, 48 bytes) and the
//                   std::vector<int> of 100 ints (400 bytes) each owns,
//                   never deleted.
//   format_line     LINES std::string of 40 characters (41 bytes), each
//                   freed before the next allocation: temporaries (the
//                   number it holds has 10 digits, short enough to be kept
//                   inside its std::string, with no allocation).
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

static const int KEYS = 2000;
static const int SESSIONS = 100;
static const int LINES = 300000;

class Cache {
public:
    __attribute__((noinline)) const std::vector<int> &get(const std::string &key)
    {
        auto found = entries_.find(key);
        if (found != entries_.end())
            return found->second;
        return entries_.emplace(key, std::vector<int>(64, static_cast<int>(key.size()))).first->second;
    }
    std::size_t size() const { return entries_.size(); }

private:
    std::unordered_map<std::string, std::vector<int>> entries_;
};

struct Session {
    int id;
    std::vector<int> history;
    char name[16];
};

__attribute__((noinline)) static Session *create_session(int id)
{
    Session *session = new Session();
    session->id = id;
    session->history.resize(100);
    return session;
}

__attribute__((noinline)) static std::size_t format_line(int n)
{
    std::string line;
    line.reserve(40);  // the one allocation: 41 bytes
    line.append("request ").append(std::to_string(1000000000 + n)).append(" served from cache");
    line.resize(40, '.');
    return line.size();
}

__attribute__((noinline)) static std::string cache_key(int n)
{
    char key[33];
    std::snprintf(key, sizeof key, "key-%028d", n);
    return std::string(key, 32);
}

int main()
{
    Cache cache;
    std::size_t total = 0;
    for (int n = 0; n < KEYS; n++)
        total += cache.get(cache_key(n)).size();
    for (int n = 0; n < SESSIONS; n++)
        total += create_session(n)->history.size();  // never deleted: the leak
    for (int n = 0; n < LINES; n++)
        total += format_line(n);
    std::printf("cache %zu entries, total %zu\n", cache.size(), total);
    return 0;
}
