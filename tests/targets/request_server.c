/* A small threaded server for mprof attach: it listens on 127.0.0.1 (the
 * port it got is its first line of output, "port N"), and serves each
 * connection on a thread of its own, a line at a time:
 *   "work"  make_reply allocates 256 bytes, writes "ok N" (N: the works
 *           served so far) into them, sends them and frees them;
 *   "leak"  remember_session allocates 1000 bytes and keeps them; the
 *           answer is "kept N" (N: the sessions kept so far);
 *   "plugin PATH"  use_plugin loads the library PATH (plugin.c) with
 *           dlopen, if not loaded yet, and keeps the 4000 bytes its
 *           plugin_allocate allocates; the answer is "plugged". 
 * Nothing else allocates once a connection is up, so that what it did
 * between two moments is known exactly. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REPLY_SIZE 256
#define SESSION_SIZE 1000
#define SESSIONS_MAX 100000
#define PLUGIN_BLOCK_SIZE 4000

static atomic_long works, sessions;
static void *kept[SESSIONS_MAX];

static int send_all(int fd, const char *text, size_t length)
{
    while (length) {
        ssize_t sent = write(fd, text, length);
        if (sent <= 0)
            return -1;
        text += sent;
        length -= (size_t)sent;
    }
    return 0;
}

__attribute__((noinline)) static int make_reply(int fd)
{
    char *reply = malloc(REPLY_SIZE);
    if (!reply)
        return -1;
    int length = snprintf(reply, REPLY_SIZE, "ok %ld\n", atomic_fetch_add(&works, 1) + 1);
    int result = send_all(fd, reply, (size_t)length);
    free(reply);
    return result;
}

__attribute__((noinline)) static int remember_session(int fd)
{
    long n = atomic_fetch_add(&sessions, 1);
    if (n >= SESSIONS_MAX)
        return -1;
    kept[n] = malloc(SESSION_SIZE);
    memset(kept[n], 1, SESSION_SIZE);
    char answer[32];
    int length = snprintf(answer, sizeof answer, "kept %ld\n", n + 1);
    return send_all(fd, answer, (size_t)length);
}

__attribute__((noinline)) static int use_plugin(int fd, const char *path)
{
    void *library = dlopen(path, RTLD_NOW);
    void *(*allocate)(size_t) = library ? (void *(*)(size_t))dlsym(library, "plugin_allocate") : NULL;
    if (!allocate)
        return send_all(fd, "no plugin\n", 10);
    static void *kept_by_plugin[1000];
    static int plugged;
    if (plugged < 1000)
        kept_by_plugin[plugged++] = allocate(PLUGIN_BLOCK_SIZE);
    return send_all(fd, "plugged\n", 8);
}

/* Reads one line into line (no allocation: a byte at a time); its length,
 * or -1 at the end of the connection. */
static int read_line(int fd, char *line, int capacity)
{
    int used = 0;
    for (;;) {
        char byte;
        if (read(fd, &byte, 1) != 1)
            return -1;
        if (byte == '\n')
            break;
        if (used < capacity - 1)
            line[used++] = byte;
    }
    line[used] = '\0';
    return used;
}

__attribute__((noinline)) static void *serve(void *connection)
{
    int fd = (int)(long)connection;
    char line[4200];
    while (read_line(fd, line, sizeof line) >= 0) {
        int result = !strcmp(line, "work")               ? make_reply(fd)
                     : !strcmp(line, "leak")             ? remember_session(fd)
                     : !strncmp(line, "plugin ", 7)      ? use_plugin(fd, line + 7)
                                                         : send_all(fd, "what?\n", 6);
        if (result != 0)
            break;
    }
    close(fd);
    return NULL;
}

int main(void)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t size = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, 64) != 0 || getsockname(listener, (struct sockaddr *)&address, &size) != 0)
        return 1;
    printf("port %d\n", ntohs(address.sin_port));
    fflush(stdout);
    for (;;) {
        int connection = accept(listener, NULL, NULL);
        if (connection < 0)
            continue;
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve, (void *)(long)connection) == 0)
            pthread_detach(thread);
        else
            close(connection);
    }
}
