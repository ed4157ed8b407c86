/* Import robustness: models of very many nodes stay linear to import and
 * compile (hashed name lookups, partitions extracted at their own size),
 * a model above the node limit is refused, FIFOs are refused instead of
 * blocking the import, and so are nesting that would overflow the
 * decoder's stack and strings that a NUL byte would cut. The chains' ctest timeout is the guard
 * against a quadratic step coming back: at 10^5 nodes one takes minutes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { T_FLOAT = 1 };

/* x -> Relu / Neg-free chain of n nodes: Relu, then Add of a constant
 * every 1000 nodes so that the result tells the chain ran in full. Node
 * names are all `same` when given, else unnamed. */
static tm_model *chain(int n, const char *same)
{
    tm_model *m = tm_new(13);
    int64_t d[] = {1, 4}, one = 1;
    const float c = 1.0f;
    tm_input(m, "x", T_FLOAT, 2, d, NULL);
    tm_init(m, "one", T_FLOAT, 1, &one, &c, sizeof c);
    char in[32], out[32];
    for (int i = 0; i < n; i++) {
        snprintf(in, sizeof in, i ? "t%d" : "x", i - 1);
        snprintf(out, sizeof out, i == n - 1 ? "y" : "t%d", i);
        if (i % 1000 == 999) {
            char ins[48];
            snprintf(ins, sizeof ins, "%s,one", in);
            tm_node(m, "Add", NULL, same, ins, out);
        } else {
            tm_node(m, "Relu", NULL, same, in, out);
        }
    }
    tm_output(m, "y", T_FLOAT, 2, d);
    return m;
}

/* The chain, written as an ONNX model and imported. */
static dqg_graph *import_chain(int n, const char *same)
{
    tm_model *m = chain(n, same);
    size_t size;
    uint8_t *bytes = tm_pack(m, &size);
    tm_free(m);
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_onnx_load_memory(bytes, size, NULL, NULL, &g), DQG_OK, "%s", dqg_last_error());
    free(bytes);
    return g;
}

static void run_chain(int n, const char *same)
{
    dqg_graph *g = import_chain(n, same);
    dqg_compiled *c;
    dqg_compile_options opt = dqg_compile_options_default();
    cr_assert_eq(dqg_compile(g, &opt, &c), DQG_OK, "%s", dqg_last_error());
    const float x[] = {-3.0f, 0.5f, 2.0f, -0.25f};
    float y[4];
    dqg_buffer in = {.name = "x", .data = (void *)x, .size = sizeof x};
    dqg_buffer out = {.name = "y", .data = y, .size = sizeof y};
    cr_assert_eq(dqg_execute(c, &in, 1, &out, 1), DQG_OK, "%s", dqg_last_error());
    /* ReLU then +1 every 1000 nodes: max(x, 0) + n / 1000. */
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], (x[i] > 0 ? x[i] : 0.0f) + (float)(n / 1000), 1e-6, "y[%d]", i);
    dqg_compiled_destroy(c);
    dqg_graph_destroy(g);
}

/* 10^5 nodes take seconds in an optimized build; an unoptimized build
 * under AddressSanitizer is some 30 times slower per node, so there the
 * chains are a fifth as long (the million-node import a tenth): still far
 * beyond where a quadratic step would show. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
enum { LONG_CHAIN = 20000, SAME_NAME_CHAIN = 8000, MILLION = 100000 };
#else
enum { LONG_CHAIN = 100000, SAME_NAME_CHAIN = 40000, MILLION = 1000000 };
#endif

Test(import_scale, long_chain)
{
    run_chain(LONG_CHAIN, NULL);
}

Test(import_scale, many_nodes_of_one_name)
{
    run_chain(SAME_NAME_CHAIN, "node");
}

/* A model of 10^6 nodes (35 MB) imports and finalizes in seconds. Not
 * compiled: that is the chains' job above. */
Test(import_scale, million_node_import)
{
    dqg_graph *g = import_chain(MILLION, NULL);
    cr_assert(dqg_graph_is_finalized(g));
    cr_assert_eq(dqg_graph_op_count(g), MILLION);
    dqg_graph_destroy(g);
}

Test(import_scale, node_limit)
{
    tm_model *m = chain(10, NULL);
    size_t size;
    uint8_t *bytes = tm_pack(m, &size);
    tm_free(m);
    dqg_onnx_options o = {.max_nodes = 9};
    dqg_graph *g = (dqg_graph *)1;
    cr_assert_eq(dqg_onnx_load_memory(bytes, size, NULL, &o, &g), DQG_INVALID_ARGUMENT);
    cr_assert_null(g);
    cr_assert(strstr(dqg_last_error(), "10 nodes") && strstr(dqg_last_error(), "limit of 9"), "%s",
              dqg_last_error());
    o.max_nodes = 10;
    cr_assert_eq(dqg_onnx_load_memory(bytes, size, NULL, &o, &g), DQG_OK, "%s", dqg_last_error());
    dqg_graph_destroy(g);
    free(bytes);
}

/* y = x * w, w two floats in the external file "weights.bin". */
static tm_model *times_external_weights(void)
{
    int64_t d[] = {2};
    tm_model *m = tm_new(13);
    tm_input(m, "x", T_FLOAT, 1, d, NULL);
    tm_init_external(m, "w", T_FLOAT, 1, d, "weights.bin");
    tm_node(m, "Mul", NULL, "mul", "x,w", "y");
    tm_output(m, "y", T_FLOAT, 1, d);
    return m;
}

static char *temp_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/dqg_fifo_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

/* A FIFO as the model, as external data, and as a tensor file to read or
 * write: each refused at once with "not a regular file" (an open() of a
 * FIFO without the non-blocking flag waits for a writer forever). */
Test(import_scale, fifos_are_refused_not_waited_on, .timeout = 30)
{
    char *dir = temp_dir(), path[256], fifo[256];
    snprintf(fifo, sizeof fifo, "%s/weights.bin", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_onnx_load_file(fifo, NULL, &g), DQG_IO_ERROR);
    cr_assert(strstr(dqg_last_error(), "not a regular file"), "%s", dqg_last_error());
    cr_assert_null(g);

    tm_model *m = times_external_weights();
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    cr_assert_eq(tm_write(m, path), 0);
    tm_free(m);
    cr_assert_eq(dqg_onnx_load_file(path, NULL, &g), DQG_IO_ERROR);
    cr_assert(strstr(dqg_last_error(), "initializer 'w'") &&
                  strstr(dqg_last_error(), "not a regular file"),
              "%s", dqg_last_error());
    cr_assert_null(g);

    char *name = NULL;
    void *data = NULL;
    dqg_dtype t;
    int rank;
    int64_t dims[8];
    size_t n;
    cr_assert_eq(dqg_tensor_file_read(fifo, &name, &t, &rank, dims, &data, &n), DQG_IO_ERROR);
    cr_assert(strstr(dqg_last_error(), "not a regular file"), "%s", dqg_last_error());
    const float v[] = {1, 2};
    const int64_t d[] = {2};
    cr_assert_eq(dqg_tensor_file_write(fifo, "v", DQG_F32, 1, d, v), DQG_IO_ERROR);
    cr_assert(strstr(dqg_last_error(), "not a regular file"), "%s", dqg_last_error());
    unlink(fifo);
    unlink(path);
    rmdir(dir);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* Wraps buf[at..at+len) as length-delimited field `num`, written just
 * before it; returns where the field starts. */
static size_t wrap(uint8_t *buf, size_t at, size_t len, unsigned num)
{
    uint8_t head[20];
    size_t h = put_varint(head, (uint64_t)num << 3 | 2);
    h += put_varint(head + h, len);
    cr_assert_geq(at, h);
    memcpy(buf + at - h, head, h);
    return at - h;
}

/* A graph in a node's attribute in a graph ... 100,000 levels deep (1.2 MB).
 * protobuf-c decodes nested messages by recursion: this overflowed the
 * stack. Refused before decoding; 30 levels (92 messages) still load far
 * enough to be refused for what they are, not for their depth. */
Test(import_scale, deeply_nested_messages_are_refused_before_decoding)
{
    const size_t cap = 4u << 20;
    uint8_t *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (int levels = 100000; levels >= 40; levels = levels == 100000 ? 30 : 0) {
        size_t at = cap, len = 0;
        for (int i = 0; i < levels; i++) {
            at = wrap(buf, at, len, 6);      /* AttributeProto.g */
            at = wrap(buf, at, cap - at, 5); /* NodeProto.attribute */
            at = wrap(buf, at, cap - at, 1); /* GraphProto.node */
            len = cap - at;
        }
        at = wrap(buf, at, len, 7); /* ModelProto.graph */
        buf[--at] = 8;              /* ModelProto.ir_version = 8 */
        buf[--at] = 1 << 3 | 0;
        dqg_graph *g = NULL;
        dqg_status st = dqg_onnx_load_memory(buf + at, cap - at, NULL, NULL, &g);
        cr_assert_null(g);
        if (levels == 100000) {
            cr_assert_eq(st, DQG_PARSE_ERROR, "%s", dqg_last_error());
            cr_assert(strstr(dqg_last_error(), "nested more than 100 deep") &&
                          strstr(dqg_last_error(), "onnx.GraphProto"),
                      "%s", dqg_last_error());
        } else {
            cr_assert_neq(st, DQG_OK);
            cr_assert_null(strstr(dqg_last_error(), "nested"), "%s", dqg_last_error());
        }
    }
    free(buf);
}

/* Decoded strings end at their first NUL: an external-data location
 * "weights\0bin" would read the file "weights". Refused, naming the field;
 * the same bytes with a '.' load. */
Test(import_scale, a_nul_byte_in_a_string_is_refused)
{
    char *dir = temp_dir(), path[256];
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    const float w[] = {2.0f, 3.0f};
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(w, sizeof w, 1, f), 1);
    fclose(f);
    tm_model *m = times_external_weights();
    size_t size;
    uint8_t *bytes = tm_pack(m, &size);
    tm_free(m);
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_onnx_load_memory(bytes, size, dir, NULL, &g), DQG_OK, "%s", dqg_last_error());
    dqg_graph_destroy(g);
    g = NULL;
    uint8_t *dot = memmem(bytes, size, "weights.bin", 11);
    cr_assert_not_null(dot);
    dot[7] = 0;
    cr_assert_eq(dqg_onnx_load_memory(bytes, size, dir, NULL, &g), DQG_PARSE_ERROR);
    cr_assert_null(g);
    cr_assert(strstr(dqg_last_error(), "StringStringEntryProto.value") &&
                  strstr(dqg_last_error(), "NUL byte (at byte 7 of its 11)"),
              "%s", dqg_last_error());
    free(bytes);
    unlink(path);
    rmdir(dir);
}
