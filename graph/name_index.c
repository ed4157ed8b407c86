/* Open addressing with linear probing over XXH3 hashes of the names. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/name_index.h"

static uint64_t hash_name(const char *s)
{
    uint64_t h = XXH3_64bits(s, strlen(s));
    return h ? h : 1;
}

static bool grow(dqg_name_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    uint64_t *hash = calloc(cap, sizeof *hash);
    int32_t *value = malloc(cap * sizeof *value);
    char **key = malloc(cap * sizeof *key);
    if (!hash || !value || !key) {
        free(hash);
        free(value);
        free(key);
        return false;
    }
    for (size_t i = 0; i < ix->cap; i++) {
        if (!ix->hash[i])
            continue;
        size_t j = (size_t)ix->hash[i] & (cap - 1);
        while (hash[j])
            j = (j + 1) & (cap - 1);
        hash[j] = ix->hash[i];
        value[j] = ix->value[i];
        key[j] = ix->key[i];
    }
    free(ix->hash);
    free(ix->value);
    free(ix->key);
    ix->hash = hash;
    ix->value = value;
    ix->key = key;
    ix->cap = cap;
    return true;
}

bool dqg_name_index_add(dqg_name_index *ix, const char *name, int32_t value)
{
    if ((ix->n + 1) * 2 > ix->cap && !grow(ix))
        return false;
    size_t len = strlen(name) + 1;
    char *copy = malloc(len);
    if (!copy)
        return false;
    memcpy(copy, name, len);
    uint64_t h = hash_name(name);
    size_t j = (size_t)h & (ix->cap - 1);
    while (ix->hash[j])
        j = (j + 1) & (ix->cap - 1);
    ix->hash[j] = h;
    ix->value[j] = value;
    ix->key[j] = copy;
    ix->n++;
    return true;
}

int32_t dqg_name_index_find(const dqg_name_index *ix, const char *name,
                            bool (*match)(int32_t value, const void *ctx), const void *ctx)
{
    if (!ix->cap)
        return -1;
    uint64_t h = hash_name(name);
    for (size_t j = (size_t)h & (ix->cap - 1); ix->hash[j]; j = (j + 1) & (ix->cap - 1))
        if (ix->hash[j] == h && strcmp(ix->key[j], name) == 0 &&
            (!match || match(ix->value[j], ctx)))
            return ix->value[j];
    return -1;
}

bool dqg_name_index_contains(const dqg_name_index *ix, const char *name)
{
    if (!ix->cap)
        return false;
    uint64_t h = hash_name(name);
    for (size_t j = (size_t)h & (ix->cap - 1); ix->hash[j]; j = (j + 1) & (ix->cap - 1))
        if (ix->hash[j] == h && strcmp(ix->key[j], name) == 0)
            return true;
    return false;
}

void dqg_name_index_free(dqg_name_index *ix)
{
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->hash[i])
            free(ix->key[i]);
    free(ix->hash);
    free(ix->value);
    free(ix->key);
    memset(ix, 0, sizeof *ix);
}
