/* The allocation wrappers of fault_injection.h. Parenthesized names call
 * the C library's functions past the macros. */
#include "graph/fault_injection.h"

#include <stdatomic.h>

static atomic_long armed_at; /* 0: disarmed; else the failing allocation number */
static atomic_bool sticky_fail;
static atomic_long counter; /* allocations since arming */
static atomic_long injected;

void dqg_fault_inject_allocations(long nth, bool sticky)
{
    atomic_store(&counter, 0);
    atomic_store(&injected, 0);
    atomic_store(&sticky_fail, sticky);
    atomic_store(&armed_at, nth > 0 ? nth : 0);
}

long dqg_fault_allocation_count(void)
{
    return atomic_load(&counter);
}

long dqg_fault_injected_count(void)
{
    return atomic_load(&injected);
}

static bool should_fail(void)
{
    long at = atomic_load_explicit(&armed_at, memory_order_relaxed);
    if (at == 0)
        return false;
    long k = atomic_fetch_add(&counter, 1) + 1;
    bool fail = k == at || (k > at && atomic_load(&sticky_fail));
    if (fail)
        atomic_fetch_add(&injected, 1);
    return fail;
}

void *dqg_fi_malloc(size_t size)
{
    return should_fail() ? NULL : (malloc)(size);
}

void *dqg_fi_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : (calloc)(n, size);
}

void *dqg_fi_realloc(void *p, size_t size)
{
    return should_fail() ? NULL : (realloc)(p, size);
}

char *dqg_fi_strdup(const char *s)
{
    return should_fail() ? NULL : (strdup)(s);
}

void *dqg_fi_aligned_alloc(size_t alignment, size_t size)
{
    return should_fail() ? NULL : (aligned_alloc)(alignment, size);
}
