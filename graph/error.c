/* Status names and the thread-local last-error message. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"

static _Thread_local char last_error[1024];

const char *dqg_status_name(dqg_status status)
{
    switch (status) {
    case DQG_OK:
        return "ok";
    case DQG_INVALID_ARGUMENT:
        return "invalid argument";
    case DQG_UNSUPPORTED:
        return "unsupported";
    case DQG_OUT_OF_MEMORY:
        return "out of memory";
    case DQG_BACKEND_ERROR:
        return "backend error";
    case DQG_IO_ERROR:
        return "I/O error";
    case DQG_PARSE_ERROR:
        return "parse error";
    }
    return "unknown status";
}

const char *dqg_last_error(void)
{
    return last_error;
}

void dqg_clear_error(void)
{
    last_error[0] = '\0';
}

dqg_status dqg_set_error_v(dqg_status status, const char *fmt, va_list ap)
{
    /* Through a copy: callers may pass dqg_last_error() itself as an
     * argument, to prefix the message with context. */
    char buf[sizeof last_error];
    vsnprintf(buf, sizeof buf, fmt, ap);
    memcpy(last_error, buf, sizeof buf);
    return status;
}

dqg_status dqg_set_error(dqg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dqg_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}
