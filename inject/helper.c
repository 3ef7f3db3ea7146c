/* libmprof-inject.so: the helper mprof-inject loads into a process to run
 * dlopen, dlsym and the function asked for there, and to leave what they
 * returned in the request it was given (request.h). */
#include <dlfcn.h>
#include <string.h>

#include "request.h"

__attribute__((visibility("default"))) void mprof_inject_run(struct inject_request *request)
{
    const char *library = (const char *)(uintptr_t)request->library;
    void *handle = dlopen(library, RTLD_NOW | (request->only_loaded ? RTLD_NOLOAD : 0));
    if (!handle) {
        const char *why = dlerror();
        strncpy(request->message, why ? why : "not loaded", sizeof request->message - 1);
        request->outcome = INJECT_NO_LIBRARY;
        return;
    }
    int (*function)(const char *) = (int (*)(const char *))dlsym(handle, (const char *)(uintptr_t)request->function);
    if (!function) {
        request->outcome = INJECT_NO_FUNCTION;
    } else {
        request->result = function((const char *)(uintptr_t)request->argument);
        request->outcome = INJECT_DONE;
    }
    /* A library that was loaded already keeps the count of references it had. */
    if (request->only_loaded)
        dlclose(handle);
}
