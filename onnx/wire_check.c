/* A read of a protobuf message's wire format before protobuf-c decodes it,
 * guided by protobuf-c's own descriptors (no schema of its own). Two things
 * the decoder does not refuse and should be refused:
 * - nesting: protobuf-c decodes a nested message by recursion, so a file
 *   of a hundred thousand nested graphs (1.2 MB) overflows the stack;
 * - NUL bytes in a string: the decoded string is NUL-terminated, so a name
 *   or an external-data location "w.bin\0x" would silently become "w.bin".
 * Anything malformed is left to the decoder, which reports it. */
#include <string.h>

#include "graph/graph_internal.h"
#include "onnx/onnx_import.h"

enum { MAX_DEPTH = 100 };

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* DQG_OK also for malformed bytes (the decoder's to report). */
static dqg_status walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                       int depth, const char *what)
{
    if (depth > MAX_DEPTH)
        return dqg_set_error(DQG_PARSE_ERROR,
                             "%s: messages nested more than %d deep (level %d is of type %s); "
                             "refused before decoding",
                             what, MAX_DEPTH, depth, d->name);
    while (p < end) {
        uint64_t tag, len;
        if (!read_varint(&p, end, &tag))
            return DQG_OK;
        switch (tag & 7) {
        case 0:
            if (!read_varint(&p, end, &len))
                return DQG_OK;
            continue;
        case 1:
        case 5: {
            size_t w = (tag & 7) == 1 ? 8 : 4;
            if ((size_t)(end - p) < w)
                return DQG_OK;
            p += w;
            continue;
        }
        case 2:
            break;
        default:
            return DQG_OK;
        }
        if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p))
            return DQG_OK;
        const ProtobufCFieldDescriptor *f =
            tag >> 3 <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3))
                : NULL;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            dqg_status st = walk(f->descriptor, p, p + len, depth + 1, what);
            if (st != DQG_OK)
                return st;
        } else if (f && f->type == PROTOBUF_C_TYPE_STRING && strcmp(f->name, "doc_string") != 0 &&
                   memchr(p, 0, len))
            return dqg_set_error(DQG_PARSE_ERROR,
                                 "%s: the string field %s.%s contains a NUL byte (at byte %zu of "
                                 "its %llu); a name or location cut there would mean something "
                                 "else",
                                 what, d->short_name, f->name,
                                 (size_t)((const uint8_t *)memchr(p, 0, len) - p),
                                 (unsigned long long)len);
        p += len;
    }
    return DQG_OK;
}

dqg_status onnx_wire_check(const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                           const char *what)
{
    const uint8_t *p = data;
    return size ? walk(d, p, p + size, 1, what) : DQG_OK;
}
