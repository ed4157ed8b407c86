/* Hashed name lookup for the graph builder (internal): tensor names to
 * ids, and the set of op names, so that building and importing graphs of
 * many thousands of ops stays linear. Keys are owned copies. A tensor entry
 * is only a hint: the caller confirms it against the tensor's current name
 * (a renamed tensor leaves a stale entry behind, which then never
 * matches). */
#ifndef DQG_GRAPH_NAME_INDEX_H
#define DQG_GRAPH_NAME_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dqg_name_index {
    uint64_t *hash; /* 0: empty slot */
    int32_t *value;
    char **key;
    size_t cap, n;
} dqg_name_index;

/* Adds (name, value); false when out of memory (the index is then left as
 * it was). */
bool dqg_name_index_add(dqg_name_index *ix, const char *name, int32_t value);
/* Calls match(value, ctx) for every entry of `name` until it returns true;
 * returns that value, or -1. */
int32_t dqg_name_index_find(const dqg_name_index *ix, const char *name,
                            bool (*match)(int32_t value, const void *ctx), const void *ctx);
bool dqg_name_index_contains(const dqg_name_index *ix, const char *name);
void dqg_name_index_free(dqg_name_index *ix);

#endif
