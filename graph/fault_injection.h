/* Allocation-failure injection, for the tests: every allocation of the
 * library's own code goes through these wrappers (the library is compiled
 * with this header force-included and DQG_LIBRARY_SOURCE defined, so plain
 * malloc/calloc/realloc/strdup/aligned_alloc calls land here). When armed,
 * the n-th allocation from then on fails, and with `sticky` every later one
 * too, until disarmed. Unarmed, a wrapper costs one relaxed atomic load.
 * oneDNN's and protobuf-c's own allocations are not covered. */
#ifndef DQG_FAULT_INJECTION_H
#define DQG_FAULT_INJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void *dqg_fi_malloc(size_t size);
void *dqg_fi_calloc(size_t n, size_t size);
void *dqg_fi_realloc(void *p, size_t size);
char *dqg_fi_strdup(const char *s);
void *dqg_fi_aligned_alloc(size_t alignment, size_t size);

/* Arms the injection: allocation number `nth` (1 = the next one) fails, and
 * with `sticky` every one after it. nth = 0 disarms. */
void dqg_fault_inject_allocations(long nth, bool sticky);
/* Allocations attempted since the last arming (or disarming). */
long dqg_fault_allocation_count(void);
/* Allocations that failed by injection since the last arming. */
long dqg_fault_injected_count(void);

#ifdef DQG_LIBRARY_SOURCE
#define malloc(size)                   dqg_fi_malloc(size)
#define calloc(n, size)                dqg_fi_calloc(n, size)
#define realloc(p, size)               dqg_fi_realloc(p, size)
#define strdup(s)                      dqg_fi_strdup(s)
#define aligned_alloc(alignment, size) dqg_fi_aligned_alloc(alignment, size)
#endif

#endif /* DQG_FAULT_INJECTION_H */
