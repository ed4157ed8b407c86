/* A string -> int32 hash table (open addressing, FNV-1a), so that imports of
 * models with many thousands of values stay linear. */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"

static uint64_t hash_string(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void onnx_names_free(onnx_name_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->keys[i]);
    free(t->keys);
    free(t->vals);
    memset(t, 0, sizeof *t);
}

/* Slot of `key`, or of the empty slot where it would go. */
static size_t find_slot(const onnx_name_table *t, const char *key)
{
    size_t mask = t->cap - 1, i = (size_t)hash_string(key) & mask;
    while (t->keys[i] && strcmp(t->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

int32_t onnx_names_get(const onnx_name_table *t, const char *key)
{
    if (!t->cap || !key)
        return -1;
    size_t i = find_slot(t, key);
    return t->keys[i] ? t->vals[i] : -1;
}

static bool grow(onnx_name_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    onnx_name_table n = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(int32_t)), cap, 0};
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return false;
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->keys[i]) {
            size_t s = find_slot(&n, t->keys[i]);
            n.keys[s] = t->keys[i];
            n.vals[s] = t->vals[i];
            n.count++;
        }
    free(t->keys);
    free(t->vals);
    *t = n;
    return true;
}

bool onnx_names_put(onnx_name_table *t, const char *key, int32_t val)
{
    if ((t->count + 1) * 2 > t->cap && !grow(t))
        return false;
    size_t i = find_slot(t, key);
    if (!t->keys[i]) {
        size_t n = strlen(key) + 1;
        char *copy = malloc(n);
        if (!copy)
            return false;
        memcpy(copy, key, n);
        t->keys[i] = copy;
        t->count++;
    }
    t->vals[i] = val;
    return true;
}
