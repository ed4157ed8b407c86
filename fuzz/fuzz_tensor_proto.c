/* Fuzz target: TensorProto bytes -> a temporary file -> dqg_tensor_file_read.
 * On success the tensor is also written back with dqg_tensor_file_write and
 * read again: the second read must give the same name, type, shape and
 * bytes, and the size must be the storage size of the shape. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"

#include "fuzz/fuzz_common.h"

static bool write_temp(const uint8_t *data, size_t size, char *path)
{
    snprintf(path, 64, "/tmp/dqg_fuzz_tensor_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            unlink(path);
            return false;
        }
        done += (size_t)w;
    }
    close(fd);
    return true;
}

static void fail(const char *what, dqg_dtype t, int rank)
{
    fprintf(stderr, "fuzz: tensor file round trip: %s (dtype %s, rank %d)\n", what,
            dqg_dtype_name(t), rank);
    __builtin_trap();
}

static void round_trip(const char *name, dqg_dtype dtype, int rank, const int64_t *dims,
                       const void *bytes, size_t size)
{
    char path[64];
    if (!write_temp(NULL, 0, path))
        return;
    dqg_status st = dqg_tensor_file_write(path, name, dtype, rank, dims, bytes);
    fz_require_message("dqg_tensor_file_write", st);
    if (st != DQG_OK) {
        unlink(path);
        fail("a tensor that was read cannot be written", dtype, rank);
    }
    char *name2 = NULL;
    dqg_dtype dtype2 = DQG_DTYPE_UNDEF;
    int rank2 = -1;
    int64_t dims2[DQG_MAX_RANK];
    void *data2 = NULL;
    size_t size2 = 0;
    st = dqg_tensor_file_read(path, &name2, &dtype2, &rank2, dims2, &data2, &size2);
    unlink(path);
    if (st != DQG_OK)
        fail(dqg_last_error(), dtype, rank);
    if (dtype2 != dtype || rank2 != rank || size2 != size)
        fail("type, rank or size changed", dtype, rank);
    if (memcmp(dims, dims2, sizeof(int64_t) * (size_t)rank))
        fail("dimensions changed", dtype, rank);
    if (size && memcmp(bytes, data2, size))
        fail("data changed", dtype, rank);
    if ((name == NULL) != (name2 == NULL) || (name && strcmp(name, name2)))
        fail("name changed", dtype, rank);
    free(name2);
    free(data2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    if (!write_temp(data, size, path))
        return 0;
    char *name = NULL;
    dqg_dtype dtype = DQG_DTYPE_UNDEF;
    int rank = -1;
    int64_t dims[DQG_MAX_RANK];
    void *bytes = NULL;
    size_t nbytes = 0;
    dqg_status st = dqg_tensor_file_read(path, &name, &dtype, &rank, dims, &bytes, &nbytes);
    unlink(path);
    fz_require_message("dqg_tensor_file_read", st);
    if (st != DQG_OK) {
        if (name || bytes) {
            fprintf(stderr, "fuzz: dqg_tensor_file_read failed but returned memory\n");
            __builtin_trap();
        }
        return 0;
    }
    if (rank < 0 || rank > DQG_MAX_RANK || dqg_dtype_bits(dtype) == 0 || !bytes)
        fail("invalid description returned", dtype, rank);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            fail("negative dimension returned", dtype, rank);
        n *= dims[i];
    }
    if (nbytes != dqg_dtype_storage_size(dtype, n))
        fail("size is not the storage size of the shape", dtype, rank);
    /* Touch every byte (ASan checks the allocation's extent). */
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < nbytes; i++)
        sum += ((const uint8_t *)bytes)[i];
    (void)sum;
    if (nbytes <= ((size_t)1 << 20))
        round_trip(name, dtype, rank, dims, bytes, nbytes);
    free(name);
    free(bytes);
    return 0;
}
