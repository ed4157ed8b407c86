/* TensorProto decoding: ONNX data types onto dqgraph's, raw_data (little
 * endian, 4-bit types packed low nibble first), the typed repeated fields,
 * and external data confined to the model's folder. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph_internal.h"
#include "onnx/onnx_import.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little endian; this decoder copies it as is"
#endif

/* Far above any real tensor, far below any overflow of byte sizes. */
#define MAX_ELEMENTS ((int64_t)1 << 40)

static const struct {
    int32_t onnx;
    dqg_dtype dqg;
    const char *name;
} type_map[] = {
    {ONNX_FLOAT, DQG_F32, "FLOAT"},
    {ONNX_UINT8, DQG_U8, "UINT8"},
    {ONNX_INT8, DQG_S8, "INT8"},
    {ONNX_UINT16, DQG_U16, "UINT16"},
    {ONNX_INT16, DQG_S16, "INT16"},
    {ONNX_INT32, DQG_S32, "INT32"},
    {ONNX_INT64, DQG_S64, "INT64"},
    {ONNX_STRING, DQG_DTYPE_UNDEF, "STRING"},
    {ONNX_BOOL, DQG_BOOL, "BOOL"},
    {ONNX_FLOAT16, DQG_F16, "FLOAT16"},
    {ONNX_DOUBLE, DQG_DTYPE_UNDEF, "DOUBLE"},
    {ONNX_UINT32, DQG_U32, "UINT32"},
    {ONNX_UINT64, DQG_DTYPE_UNDEF, "UINT64"},
    {14, DQG_DTYPE_UNDEF, "COMPLEX64"},
    {15, DQG_DTYPE_UNDEF, "COMPLEX128"},
    {ONNX_BFLOAT16, DQG_BF16, "BFLOAT16"},
    {ONNX_FLOAT8E4M3FN, DQG_F8E4M3FN, "FLOAT8E4M3FN"},
    {ONNX_FLOAT8E4M3FNUZ, DQG_F8E4M3FNUZ, "FLOAT8E4M3FNUZ"},
    {ONNX_FLOAT8E5M2, DQG_F8E5M2, "FLOAT8E5M2"},
    {ONNX_FLOAT8E5M2FNUZ, DQG_F8E5M2FNUZ, "FLOAT8E5M2FNUZ"},
    {ONNX_UINT4, DQG_U4, "UINT4"},
    {ONNX_INT4, DQG_S4, "INT4"},
    {ONNX_FLOAT4E2M1, DQG_F4E2M1, "FLOAT4E2M1"},
};
#define N_TYPES (sizeof type_map / sizeof type_map[0])

dqg_dtype onnx_dtype_to_dqg(int64_t onnx_type)
{
    for (size_t i = 0; i < N_TYPES; i++)
        if (type_map[i].onnx == onnx_type)
            return type_map[i].dqg;
    return DQG_DTYPE_UNDEF;
}

int32_t onnx_dtype_from_dqg(dqg_dtype dtype)
{
    if (dtype == DQG_DTYPE_UNDEF)
        return 0;
    for (size_t i = 0; i < N_TYPES; i++)
        if (type_map[i].dqg == dtype)
            return type_map[i].onnx;
    return 0;
}

const char *onnx_dtype_name(int64_t onnx_type, char *buf, size_t size)
{
    for (size_t i = 0; i < N_TYPES; i++)
        if (type_map[i].onnx == onnx_type)
            return type_map[i].name;
    snprintf(buf, size, "%lld (unknown)", (long long)onnx_type);
    return buf;
}

void onnx_tensor_release(onnx_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    t->data = NULL;
    t->nbytes = 0;
}

double onnx_tensor_get(const onnx_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case DQG_S64:
        return (double)((const int64_t *)t->data)[i];
    case DQG_S32:
        return (double)((const int32_t *)t->data)[i];
    case DQG_U32:
        return (double)((const uint32_t *)t->data)[i];
    default: {
        float f;
        dqg_dtype_decode(t->dtype, t->data, i, 1, &f);
        return (double)f;
    }
    }
}

/* ---- External data ----------------------------------------------------- */

/* The value of `key` in the external-data entries; a key given twice
 * takes its last value, as ONNX's own loader does. */
static const char *entry(const Onnx__TensorProto *t, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < t->n_external_data; i++)
        if (t->external_data[i]->key && strcmp(t->external_data[i]->key, key) == 0)
            v = t->external_data[i]->value ? t->external_data[i]->value : "";
    return v;
}

/* A decimal number of digits only (no sign, no spaces). */
static bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-')
        return false;
    *out = v;
    return true;
}

/* Rejects absolute locations and any ".." component (either separator). */
static bool location_is_confined(const char *loc)
{
    if (!*loc || loc[0] == '/' || loc[0] == '\\' || strchr(loc, ':'))
        return false;
    const char *p = loc;
    while (*p) {
        size_t n = strcspn(p, "/\\");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        if (*p)
            p++;
    }
    return true;
}

/* Reads the tensor's external data into a new buffer (*dst) of nbytes,
 * allocated only once the file is known to hold them. */
static dqg_status read_external(const Onnx__TensorProto *t, const char *what,
                                onnx_external_ctx *ext, void **dst, size_t nbytes)
{
    const char *loc = entry(t, "location");
    if (!loc)
        return dqg_set_error(DQG_PARSE_ERROR, "%s: external data without a 'location' entry", what);
    if (!ext)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: external data ('%s') is not supported in a tensor file", what,
                             loc);
    if (!ext->base_dir)
        return dqg_set_error(DQG_UNSUPPORTED,
                             "%s: external data ('%s') cannot be read: the model was loaded from "
                             "memory without a base folder",
                             what, loc);
    if (!location_is_confined(loc))
        return dqg_set_error(DQG_PARSE_ERROR,
                             "%s: external data location '%s' is refused: it must be a relative "
                             "path inside the model's folder (no absolute path, no '..')",
                             what, loc);
    uint64_t offset = 0, length = 0;
    const char *s_off = entry(t, "offset"), *s_len = entry(t, "length");
    if (s_off && !parse_u64(s_off, &offset))
        return dqg_set_error(DQG_PARSE_ERROR, "%s: external data offset '%s' is not a number", what,
                             s_off);
    if (s_len && !parse_u64(s_len, &length))
        return dqg_set_error(DQG_PARSE_ERROR, "%s: external data length '%s' is not a number", what,
                             s_len);
    size_t plen = strlen(ext->base_dir) + strlen(loc) + 2;
    char *path = malloc(plen);
    if (!path)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
    snprintf(path, plen, "%s/%s", ext->base_dir, loc);
    /* Symbolic links must not lead outside the folder either. */
    char *real_base = realpath(ext->base_dir, NULL), *real_file = realpath(path, NULL);
    dqg_status st = DQG_OK;
    if (!real_base || !real_file) {
        st = dqg_set_error(DQG_IO_ERROR, "%s: external data file '%s': %s", what, path,
                           strerror(errno));
    } else {
        size_t nb = strlen(real_base);
        bool inside = strncmp(real_file, real_base, nb) == 0 &&
                      (real_file[nb] == '/' || (nb == 1 && real_base[0] == '/'));
        if (!inside)
            st = dqg_set_error(DQG_PARSE_ERROR,
                               "%s: external data location '%s' resolves outside the model's "
                               "folder",
                               what, loc);
    }
    FILE *f = NULL;
    bool not_regular = false;
    if (st == DQG_OK && !(f = onnx_open_regular(real_file, false, &not_regular)))
        st = not_regular
                 ? dqg_set_error(DQG_IO_ERROR, "%s: external data '%s' is not a regular file", what,
                                 path)
                 : dqg_set_error(DQG_IO_ERROR, "%s: cannot open external data file '%s': %s", what,
                                 path, strerror(errno));
    struct stat sb;
    if (st == DQG_OK && fstat(fileno(f), &sb) != 0)
        st = dqg_set_error(DQG_IO_ERROR, "%s: cannot read external data '%s': %s", what, path,
                           strerror(errno));
    if (st == DQG_OK) {
        uint64_t size = (uint64_t)sb.st_size;
        if (offset > size)
            st = dqg_set_error(DQG_PARSE_ERROR,
                               "%s: external data offset %llu is beyond the end of '%s' (%llu "
                               "bytes)",
                               what, (unsigned long long)offset, path, (unsigned long long)size);
        else {
            if (!s_len)
                length = size - offset;
            if (length != nbytes)
                st = dqg_set_error(DQG_PARSE_ERROR,
                                   "%s: external data holds %llu bytes; the tensor needs %zu", what,
                                   (unsigned long long)length, nbytes);
            else if (offset + length > size)
                st = dqg_set_error(DQG_PARSE_ERROR,
                                   "%s: external data [%llu, +%llu) runs past the end of '%s' "
                                   "(%llu bytes)",
                                   what, (unsigned long long)offset, (unsigned long long)length,
                                   path, (unsigned long long)size);
            else if (length > ext->budget)
                st = dqg_set_error(DQG_INVALID_ARGUMENT,
                                   "%s: external data of %llu bytes exceeds the model size limit "
                                   "(%llu bytes left)",
                                   what, (unsigned long long)length,
                                   (unsigned long long)ext->budget);
        }
    }
    if (st == DQG_OK && !(*dst = malloc(nbytes ? nbytes : 1)))
        st = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what, nbytes);
    if (st == DQG_OK) {
        if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(*dst, 1, nbytes, f) != nbytes)
            st = dqg_set_error(DQG_IO_ERROR,
                               "%s: reading %zu bytes of external data from '%s' "
                               "failed",
                               what, nbytes, path);
        else
            ext->budget -= length;
    }
    if (f)
        fclose(f);
    free(real_base);
    free(real_file);
    free(path);
    return st;
}

/* ---- Typed fields ------------------------------------------------------- */

static dqg_status count_error(const char *what, const char *field, size_t have, int64_t need)
{
    return dqg_set_error(DQG_PARSE_ERROR, "%s: %s has %zu values; the shape needs %lld", what,
                         field, have, (long long)need);
}

static dqg_status decode_typed(const Onnx__TensorProto *t, const char *what, onnx_tensor *o)
{
    int64_t n = o->nelems;
    uint8_t *d = o->data;
    switch (o->dtype) {
    case DQG_F32:
        if (t->n_float_data != (size_t)n)
            return count_error(what, "float_data", t->n_float_data, n);
        memcpy(d, t->float_data, (size_t)n * 4);
        return DQG_OK;
    case DQG_S64:
        if (t->n_int64_data != (size_t)n)
            return count_error(what, "int64_data", t->n_int64_data, n);
        memcpy(d, t->int64_data, (size_t)n * 8);
        return DQG_OK;
    case DQG_U32:
        if (t->n_uint64_data != (size_t)n)
            return count_error(what, "uint64_data", t->n_uint64_data, n);
        for (int64_t i = 0; i < n; i++)
            ((uint32_t *)(void *)d)[i] = (uint32_t)t->uint64_data[i];
        return DQG_OK;
    case DQG_S4:
    case DQG_U4:
    case DQG_F4E2M1: {
        size_t packed = (size_t)(n + 1) / 2;
        if (t->n_int32_data == packed) { /* two elements per value, low nibble first */
            for (size_t i = 0; i < packed; i++)
                d[i] = (uint8_t)t->int32_data[i];
        } else if (t->n_int32_data == (size_t)n) { /* one element per value */
            memset(d, 0, packed);
            for (int64_t i = 0; i < n; i++)
                d[i / 2] |= (uint8_t)((t->int32_data[i] & 0x0F) << (4 * (i & 1)));
        } else {
            return count_error(what, "int32_data (two 4-bit values each)", t->n_int32_data,
                               (int64_t)packed);
        }
        if (n & 1)
            d[packed - 1] &= 0x0F;
        return DQG_OK;
    }
    default:
        break;
    }
    /* Every other type: one element per int32_data value, the low bits of
     * the value (float16/bfloat16/float8 as their bit patterns). */
    if (t->n_int32_data != (size_t)n)
        return count_error(what, "int32_data", t->n_int32_data, n);
    int bytes = dqg_dtype_bits(o->dtype) / 8;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)t->int32_data[i];
        if (bytes == 1)
            d[i] = (uint8_t)v;
        else if (bytes == 2) {
            uint16_t h = (uint16_t)v;
            memcpy(d + i * 2, &h, 2);
        } else
            memcpy(d + i * 4, &v, 4);
    }
    return DQG_OK;
}

/* Typed fields that hold data, for "has no data" and wrong-field errors. */
static const char *present_field(const Onnx__TensorProto *t)
{
    if (t->n_float_data)
        return "float_data";
    if (t->n_int32_data)
        return "int32_data";
    if (t->n_int64_data)
        return "int64_data";
    if (t->n_uint64_data)
        return "uint64_data";
    if (t->n_double_data)
        return "double_data";
    if (t->n_string_data)
        return "string_data";
    return NULL;
}

/* ONNX stores a bool as a byte (raw) or an int32 (typed), true being 1;
 * any other non-zero value is taken as true too, as dqgraph's bool
 * constants hold only 0 and 1. */
static void normalize_bool(onnx_tensor *o)
{
    if (o->dtype != DQG_BOOL)
        return;
    uint8_t *d = o->data;
    for (int64_t i = 0; i < o->nelems; i++)
        d[i] = d[i] != 0;
}

dqg_status onnx_tensor_decode(const Onnx__TensorProto *t, const char *what, bool allow_empty,
                              onnx_external_ctx *ext, onnx_tensor *o)
{
    memset(o, 0, sizeof *o);
    char tb[32];
    if (!t->has_data_type || t->data_type == 0)
        return dqg_set_error(DQG_PARSE_ERROR, "%s: data_type is missing", what);
    o->dtype = onnx_dtype_to_dqg(t->data_type);
    if (o->dtype == DQG_DTYPE_UNDEF)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: data type %s is not supported by dqgraph", what,
                             onnx_dtype_name(t->data_type, tb, sizeof tb));
    if (t->n_dims > DQG_MAX_RANK)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: rank %zu is above dqgraph's limit of %d", what,
                             t->n_dims, DQG_MAX_RANK);
    if (t->segment)
        return dqg_set_error(DQG_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    o->rank = (int)t->n_dims;
    o->nelems = 1;
    for (int i = 0; i < o->rank; i++) {
        int64_t d = t->dims[i];
        if (d < 0)
            return dqg_set_error(DQG_PARSE_ERROR, "%s: dimension %d is negative (%lld)", what, i,
                                 (long long)d);
        if (d == 0 && !allow_empty)
            return dqg_set_error(DQG_UNSUPPORTED,
                                 "%s: dimension %d is 0; dqgraph tensors have at least one "
                                 "element per dimension",
                                 what, i);
        if (d > 0 && o->nelems > MAX_ELEMENTS / d)
            return dqg_set_error(DQG_PARSE_ERROR, "%s: the element count overflows %lld", what,
                                 (long long)MAX_ELEMENTS);
        o->dims[i] = d;
        o->nelems *= d;
    }
    o->nbytes = dqg_dtype_storage_size(o->dtype, o->nelems);
    bool external = t->has_data_location && t->data_location == 1;
    bool raw = t->has_raw_data;
    const char *typed = present_field(t);
    if (external && (raw || typed))
        return dqg_set_error(DQG_PARSE_ERROR, "%s: external data and %s are both present", what,
                             raw ? "raw_data" : typed);
    if (raw && typed)
        return dqg_set_error(DQG_PARSE_ERROR, "%s: raw_data and %s are both present", what, typed);
    if (!external && raw && t->raw_data.len != o->nbytes)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "%s: raw_data has %zu bytes; a %s tensor of %lld "
                             "elements needs %zu",
                             what, t->raw_data.len, dqg_dtype_name(o->dtype), (long long)o->nelems,
                             o->nbytes);
    if (!external && !raw && o->nelems > 0 && !typed)
        return dqg_set_error(DQG_PARSE_ERROR, "%s: the tensor holds no data", what);
    if (!external && !raw && typed) {
        /* Before allocating: no typed encoding packs more than two elements
         * into one value, so a short field is caught whatever the claim. */
        size_t have = t->n_float_data + t->n_int32_data + t->n_int64_data + t->n_uint64_data +
                      t->n_double_data + t->n_string_data;
        if ((uint64_t)have < (uint64_t)(o->nelems + 1) / 2)
            return count_error(what, typed, have, o->nelems);
    }
    if (external && ext && (uint64_t)o->nbytes > ext->budget)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "%s: the tensor claims %zu bytes of external data, more than the "
                             "model size limit leaves (%llu bytes)",
                             what, o->nbytes, (unsigned long long)ext->budget);
    if (external) {
        dqg_status st = read_external(t, what, ext, &o->data, o->nbytes);
        if (st != DQG_OK)
            onnx_tensor_release(o);
        else
            normalize_bool(o);
        return st;
    }
    o->data = malloc(o->nbytes ? o->nbytes : 1);
    if (!o->data)
        return dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", what, o->nbytes);
    dqg_status st = DQG_OK;
    if (raw) {
        if (o->nbytes)
            memcpy(o->data, t->raw_data.data, o->nbytes);
        if (dqg_dtype_bits(o->dtype) == 4 && (o->nelems & 1))
            ((uint8_t *)o->data)[o->nbytes - 1] &= 0x0F;
    } else if (o->nelems > 0)
        st = decode_typed(t, what, o);
    if (st != DQG_OK)
        onnx_tensor_release(o);
    else
        normalize_bool(o);
    return st;
}
