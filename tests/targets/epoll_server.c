/* An event-loop server of one thread for mprof attach: the thread waits
 * only in the epoll call its argument names (epoll_wait, epoll_pwait or
 * epoll_pwait2), as libuv's, libevent's and tokio's loops do; it listens on
 * 127.0.0.1 (its first line of output is "port N") and answers each
 * connection's lines as request_server.c does:
 *   "work"  make_reply allocates 256 bytes, writes "ok N" (N: the works
 *           served so far) into them, sends them and frees them;
 *   "leak"  remember_session allocates 1000 bytes and keeps them; the
 *           answer is "kept N" (N: the sessions kept so far).
 * A connection's descriptor is read only once the call says it has input,
 * a whole line at a time (the test sends each line whole); nothing else
 * allocates once the loop runs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define REPLY_SIZE 256
#define SESSION_SIZE 1000
#define SESSIONS_MAX 100000

static long works, sessions;
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
    int length = snprintf(reply, REPLY_SIZE, "ok %ld\n", ++works);
    int result = send_all(fd, reply, (size_t)length);
    free(reply);
    return result;
}

__attribute__((noinline)) static int remember_session(int fd)
{
    if (sessions >= SESSIONS_MAX)
        return -1;
    kept[sessions] = malloc(SESSION_SIZE);
    memset(kept[sessions], 1, SESSION_SIZE);
    char answer[32];
    int length = snprintf(answer, sizeof answer, "kept %ld\n", ++sessions);
    return send_all(fd, answer, (size_t)length);
}

/* One line of the connection, which has input; -1 at its end. */
static int serve_line(int fd)
{
    char line[64];
    int used = 0;
    for (;;) {
        char byte;
        if (read(fd, &byte, 1) != 1)
            return -1;
        if (byte == '\n')
            break;
        if (used < (int)sizeof line - 1)
            line[used++] = byte;
    }
    line[used] = '\0';
    return !strcmp(line, "work")   ? make_reply(fd)
           : !strcmp(line, "leak") ? remember_session(fd)
                                   : send_all(fd, "what?\n", 6);
}

/* The loop's wait, through the call chosen. */
static int wait_for_events(const char *call, int poller, struct epoll_event *events, int capacity)
{
    sigset_t none;
    sigemptyset(&none);
    if (!strcmp(call, "epoll_pwait"))
        return epoll_pwait(poller, events, capacity, -1, &none);
    if (!strcmp(call, "epoll_pwait2"))
        return epoll_pwait2(poller, events, capacity, NULL, &none);
    return epoll_wait(poller, events, capacity, -1);
}

int main(int argc, char **argv)
{
    const char *call = argc > 1 ? argv[1] : "epoll_wait";
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t size = sizeof address;
    int poller = epoll_create1(0);
    struct epoll_event listening = {.events = EPOLLIN, .data.fd = listener};
    if (listener < 0 || poller < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, 64) != 0 || getsockname(listener, (struct sockaddr *)&address, &size) != 0 ||
        epoll_ctl(poller, EPOLL_CTL_ADD, listener, &listening) != 0)
        return 1;
    printf("port %d\n", ntohs(address.sin_port));
    fflush(stdout);
    for (;;) {
        struct epoll_event events[16];
        int ready = wait_for_events(call, poller, events, 16);
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int connection = accept(listener, NULL, NULL);
                struct epoll_event input = {.events = EPOLLIN, .data.fd = connection};
                if (connection >= 0 && epoll_ctl(poller, EPOLL_CTL_ADD, connection, &input) != 0)
                    close(connection);
            } else if (serve_line(fd) != 0) {
                epoll_ctl(poller, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
            }
        }
    }
}
