/* TensorProto ".pb" files, one tensor each (the ONNX backend-test layout):
 * dqg_tensor_file_read and dqg_tensor_file_write. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph_internal.h"
#include "onnx/onnx_import.h"

FILE *onnx_open_regular(const char *path, bool write, bool *not_regular)
{
    *not_regular = false;
    struct stat pre;
    if (write && stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) {
        *not_regular = true;
        errno = EINVAL;
        return NULL;
    }
    /* Non-blocking, so that a FIFO (or a device) is seen for what it is
     * instead of blocking the open until another process appears. */
    int fd = write ? open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666)
                   : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        *not_regular = true;
        errno = EINVAL;
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (write && ftruncate(fd, 0) != 0) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, write ? "wb" : "rb");
    if (!f)
        close(fd);
    return f;
}

dqg_status onnx_read_file(const char *path, uint64_t limit, uint8_t **data, size_t *size)
{
    bool not_regular;
    FILE *f = onnx_open_regular(path, false, &not_regular);
    if (!f && not_regular)
        return dqg_set_error(DQG_IO_ERROR, "'%s' is not a regular file", path);
    if (!f)
        return dqg_set_error(DQG_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return dqg_set_error(DQG_IO_ERROR, "cannot read '%s': %s", path, strerror(errno));
    }
    if ((uint64_t)sb.st_size > limit) {
        fclose(f);
        return dqg_set_error(DQG_INVALID_ARGUMENT, "'%s' has %lld bytes, above the limit of %llu",
                             path, (long long)sb.st_size, (unsigned long long)limit);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return dqg_set_error(DQG_OUT_OF_MEMORY, "'%s': out of memory (%zu bytes)", path, n);
    }
    if (fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        return dqg_set_error(DQG_IO_ERROR, "reading '%s' failed", path);
    }
    fclose(f);
    *data = buf;
    *size = n;
    return DQG_OK;
}

dqg_status dqg_tensor_file_read(const char *path, char **name_out, dqg_dtype *dtype_out,
                                int *rank_out, int64_t *dims_out, void **data_out, size_t *size_out)
{
    if (name_out)
        *name_out = NULL;
    if (data_out)
        *data_out = NULL;
    if (!path || !dtype_out || !rank_out || !dims_out || !data_out || !size_out)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_tensor_file_read: a required argument is "
                                                   "NULL");
    uint8_t *bytes;
    size_t n;
    dqg_status st = onnx_read_file(path, DQG_ONNX_DEFAULT_MAX_MODEL_BYTES, &bytes, &n);
    if (st != DQG_OK)
        return st;
    char what[512];
    snprintf(what, sizeof what, "tensor file '%s'", path);
    if ((st = onnx_wire_check(&onnx__tensor_proto__descriptor, bytes, n, what)) != DQG_OK) {
        free(bytes);
        return st;
    }
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, n, bytes);
    free(bytes);
    if (!t)
        return dqg_set_error(DQG_PARSE_ERROR, "'%s' is not a valid TensorProto (%zu bytes)", path,
                             n);
    onnx_tensor v;
    st = onnx_tensor_decode(t, what, true, NULL, &v);
    if (st == DQG_OK && name_out && t->name && *t->name) {
        size_t len = strlen(t->name) + 1;
        *name_out = malloc(len);
        if (!*name_out) {
            onnx_tensor_release(&v);
            st = dqg_set_error(DQG_OUT_OF_MEMORY, "%s: out of memory", what);
        } else
            memcpy(*name_out, t->name, len);
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    if (st != DQG_OK)
        return st;
    *dtype_out = v.dtype;
    *rank_out = v.rank;
    for (int i = 0; i < v.rank; i++)
        dims_out[i] = v.dims[i];
    *data_out = v.data;
    *size_out = v.nbytes;
    return DQG_OK;
}

dqg_status dqg_tensor_file_write(const char *path, const char *name, dqg_dtype dtype, int rank,
                                 const int64_t *dims, const void *data)
{
    if (!path || (rank > 0 && !dims))
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_tensor_file_write: path or dims is NULL");
    int32_t type = onnx_dtype_from_dqg(dtype);
    if (!type)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_tensor_file_write: invalid data type %d",
                             (int)dtype);
    if (rank < 0 || rank > DQG_MAX_RANK)
        return dqg_set_error(DQG_INVALID_ARGUMENT,
                             "dqg_tensor_file_write: rank %d is outside [0, %d]", rank,
                             DQG_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] > 0 && n > ((int64_t)1 << 40) / dims[i]))
            return dqg_set_error(DQG_INVALID_ARGUMENT,
                                 "dqg_tensor_file_write: dimension %d (%lld) is invalid", i,
                                 (long long)dims[i]);
        n *= dims[i];
    }
    size_t nbytes = dqg_dtype_storage_size(dtype, n);
    if (nbytes && !data)
        return dqg_set_error(DQG_INVALID_ARGUMENT, "dqg_tensor_file_write: data is NULL");
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    t.n_dims = (size_t)rank;
    t.dims = (int64_t *)dims;
    t.has_data_type = 1;
    t.data_type = type;
    t.name = (char *)(name ? name : "");
    /* The header (dims, type, name) is packed by protobuf-c; raw_data
     * (field 9, length-delimited) follows it, written straight from the
     * caller's buffer, so a large tensor is not copied in memory first. */
    size_t len = onnx__tensor_proto__get_packed_size(&t);
    uint8_t *buf = malloc(len + 11);
    if (!buf)
        return dqg_set_error(DQG_OUT_OF_MEMORY,
                             "dqg_tensor_file_write: out of memory for the "
                             "header of '%s'",
                             path);
    onnx__tensor_proto__pack(&t, buf);
    buf[len++] = (9 << 3) | 2;
    for (uint64_t v = nbytes;; v >>= 7) {
        buf[len++] = (uint8_t)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        if (v <= 0x7F)
            break;
    }
    bool not_regular;
    FILE *f = onnx_open_regular(path, true, &not_regular);
    if (!f) {
        free(buf);
        if (not_regular)
            return dqg_set_error(DQG_IO_ERROR, "'%s' exists and is not a regular file", path);
        return dqg_set_error(DQG_IO_ERROR, "cannot create '%s': %s", path, strerror(errno));
    }
    bool ok = fwrite(buf, 1, len, f) == len && (!nbytes || fwrite(data, 1, nbytes, f) == nbytes);
    ok &= fclose(f) == 0;
    free(buf);
    if (!ok) {
        unlink(path); /* no partial file left behind */
        return dqg_set_error(DQG_IO_ERROR, "writing '%s' failed", path);
    }
    return DQG_OK;
}
