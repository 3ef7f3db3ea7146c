/* Reading the monitor's settings of options.h from the environment. */
#include "options.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static bool parse_unsigned(const char *text, unsigned min, unsigned max, unsigned *value)
{
    unsigned long long parsed = 0;
    if (!*text)
        return false;
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9')
            return false;
        parsed = parsed * 10 + (unsigned)(*c - '0');
        if (parsed > max)
            return false;
    }
    if (parsed < min)
        return false;
    *value = (unsigned)parsed;
    return true;
}

/* A decimal such as "1.25" or "10", in thousandths; "0" and "off" are 0.
 * No strtod: it depends on the locale. */
static bool parse_thousandths(const char *text, unsigned max, unsigned *value)
{
    if (!strcasecmp(text, "off")) {
        *value = 0;
        return true;
    }
    unsigned long long whole = 0, fraction = 0, scale = 1000;
    const char *c = text;
    if (!(*c >= '0' && *c <= '9'))
        return false;
    for (; *c >= '0' && *c <= '9'; c++)
        if ((whole = whole * 10 + (unsigned)(*c - '0')) > max)
            return false;
    if (*c == '.') {
        for (c++; *c >= '0' && *c <= '9'; c++) {
            scale /= 10;
            fraction += (unsigned)(*c - '0') * scale;
        }
    }
    if (*c || whole * 1000 + fraction > (unsigned long long)max * 1000)
        return false;
    *value = (unsigned)(whole * 1000 + fraction);
    return true;
}

static bool parse_bool(const char *text, bool *value)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};
    for (unsigned i = 0; i < 4; i++) {
        if (!strcasecmp(text, yes[i])) {
            *value = true;
            return true;
        }
        if (!strcasecmp(text, no[i])) {
            *value = false;
            return true;
        }
    }
    return false;
}

static bool parse_signal(const char *text, int *signal_number)
{
    static const struct {
        const char *name;
        int number;
    } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"PROF", SIGPROF},
                 {"WINCH", SIGWINCH}, {"URG", SIGURG}};
    if (!strncasecmp(text, "SIG", 3))
        text += 3;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcasecmp(text, names[i].name)) {
            *signal_number = names[i].number;
            return true;
        }
    }
    unsigned number;
    if (parse_unsigned(text, 1, (unsigned)SIGRTMAX, &number) && number != SIGKILL &&
        number != SIGSTOP) {
        *signal_number = (int)number;
        return true;
    }
    return false;
}

void options_refuse(struct options *options, const char *name, const char *value)
{
    size_t name_size = strlen(name), value_size = strnlen(value, MPROF_REFUSED_VALUE_MAX);
    size_t needed = name_size + 1 + value_size + 1;
    if (options->refused_size + needed > sizeof options->refused)
        return;
    char *at = options->refused + options->refused_size;
    memcpy(at, name, name_size);
    at[name_size] = '=';
    memcpy(at + name_size + 1, value, value_size);
    at[name_size + 1 + value_size] = '\0';
    options->refused_size += (unsigned)needed;
}

/* Prefixes path with the working directory, unless it is absolute or the
 * directory cannot be known or would not fit. */
static void make_absolute(char *path, size_t capacity)
{
    char directory[MPROF_PATH_MAX];
    if (path[0] == '/' || !getcwd(directory, sizeof directory))
        return;
    size_t directory_size = strlen(directory), path_size = strlen(path);
    if (directory_size + 1 + path_size + 32 >= capacity)
        return;
    memmove(path + directory_size + 1, path, path_size + 1);
    memcpy(path, directory, directory_size);
    path[directory_size] = '/';
}

void options_default(struct options *options)
{
    *options = (struct options){
        .stack_depth = 128,
        .leak_depth = 5,
        .call_graph = true,
        .follow_children = true,
        .cached_rules = true,
        .block_headers = true,
        .leak_check = true,
        .checkpoint_growth_permille = 1250,
        .checkpoint_interval_ms = 10000,
    };
    strcpy(options->output, "mprof.out.%p");
}

void options_read(struct options *options)
{
    options_default(options);
    const char *value;
    if ((value = getenv("MPROF_OUTPUT")) && *value) {
        if (strlen(value) < sizeof options->output - 32)
            strcpy(options->output, value);
        else
            options_refuse(options, "MPROF_OUTPUT", "(too long)");
    }
    make_absolute(options->output, sizeof options->output);
    if ((value = getenv("MPROF_TRACE")) && *value) {
        if (strlen(value) < sizeof options->trace - 32) {
            strcpy(options->trace, value);
            make_absolute(options->trace, sizeof options->trace);
        } else {
            options_refuse(options, "MPROF_TRACE", "(too long)");
        }
    }
    if ((value = getenv("MPROF_RUN_DIR")) && *value && strlen(value) < sizeof options->run_dir - 64)
        strcpy(options->run_dir, value);
    if ((value = getenv("MPROF_DEPTH")) &&
        !parse_unsigned(value, 1, MPROF_MAX_STACK_DEPTH, &options->stack_depth))
        options_refuse(options, "MPROF_DEPTH", value);
    if ((value = getenv("MPROF_LEAK_DEPTH")) &&
        !parse_unsigned(value, 1, 64, &options->leak_depth))
        options_refuse(options, "MPROF_LEAK_DEPTH", value);
    if (options->leak_depth > options->stack_depth)
        options->leak_depth = options->stack_depth;
    if ((value = getenv("MPROF_CALL_GRAPH")) && !parse_bool(value, &options->call_graph))
        options_refuse(options, "MPROF_CALL_GRAPH", value);
    if ((value = getenv("MPROF_FOLLOW")) && !parse_bool(value, &options->follow_children))
        options_refuse(options, "MPROF_FOLLOW", value);
    if ((value = getenv("MPROF_LEAK_CHECK")) && !parse_bool(value, &options->leak_check))
        options_refuse(options, "MPROF_LEAK_CHECK", value);
    if ((value = getenv("MPROF_VERBOSE")) && !parse_bool(value, &options->verbose))
        options_refuse(options, "MPROF_VERBOSE", value);
    if ((value = getenv("MPROF_DUMP_SIGNAL")) && *value &&
        !parse_signal(value, &options->dump_signal))
        options_refuse(options, "MPROF_DUMP_SIGNAL", value);
    unsigned growth;
    if ((value = getenv("MPROF_CHECKPOINT_GROWTH")) && *value) {
        /* Below 1.01 a checkpoint would follow nearly every allocation. */
        if (parse_thousandths(value, 1000000, &growth) && (growth == 0 || growth >= 1010))
            options->checkpoint_growth_permille = growth;
        else
            options_refuse(options, "MPROF_CHECKPOINT_GROWTH", value);
    }
    if ((value = getenv("MPROF_CHECKPOINT_INTERVAL")) && *value &&
        !parse_thousandths(value, 4000000, &options->checkpoint_interval_ms))
        options_refuse(options, "MPROF_CHECKPOINT_INTERVAL", value);
    if ((value = getenv("MPROF_UNWINDER")) && *value) {
        if (!strcmp(value, "rules") || !strcmp(value, "libunwind"))
            options->cached_rules = !strcmp(value, "rules");
        else
            options_refuse(options, "MPROF_UNWINDER", value);
    }
    if ((value = getenv("MPROF_ALLOCATOR_PREFIX")) && *value) {
        size_t length = strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        if (!value[length] && length < sizeof options->allocator_prefix)
            memcpy(options->allocator_prefix, value, length + 1);
        else
            options_refuse(options, "MPROF_ALLOCATOR_PREFIX", value);
    }
    if ((value = getenv("MPROF_BLOCKS")) && *value) {
        if (!strcmp(value, "headers") || !strcmp(value, "map"))
            options->block_headers = !strcmp(value, "headers");
        else
            options_refuse(options, "MPROF_BLOCKS", value);
    }
}
