/* How buffers bind to graph inputs and outputs (graph/buffer_binding.c): by
 * name or by id, one style per list, never tensor 0 by accident; the same
 * rules for the reference interpreter and compiled execution. */
#include "test_common.h"

/* y = a + b, with a constant between the inputs: ids a = 0, c = 1, b = 2. */
static dqg_graph *add_graph(dqg_tensor_id *a, dqg_tensor_id *c, dqg_tensor_id *b, dqg_tensor_id *y)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d = 2;
    float cv[2] = {10, 20};
    *a = dqg_input(g, "a", DQG_F32, 1, &d);
    *c = dqg_constant(g, "c", DQG_F32, 1, &d, cv, sizeof cv);
    *b = dqg_input(g, "b", DQG_F32, 1, &d);
    *y = dqg_add(g, "sum", dqg_add(g, "ab", *a, *b), *c);
    cr_assert_eq(dqg_output(g, *y, "y"), DQG_OK);
    finalize_ok(g);
    cr_assert_eq(*a, 0);
    return g;
}

typedef dqg_status (*run_fn)(dqg_graph *g, const dqg_buffer *in, size_t n_in, dqg_buffer *out,
                             size_t n_out);

static dqg_status run_reference(dqg_graph *g, const dqg_buffer *in, size_t n_in, dqg_buffer *out,
                                size_t n_out)
{
    return dqg_reference_run(g, in, n_in, out, n_out);
}

static dqg_status run_compiled(dqg_graph *g, const dqg_buffer *in, size_t n_in, dqg_buffer *out,
                               size_t n_out)
{
    dqg_compiled *c;
    dqg_status st = dqg_compile(g, NULL, &c);
    cr_assert_eq(st, DQG_OK, "%s", dqg_last_error());
    st = dqg_execute(c, in, n_in, out, n_out);
    dqg_compiled_destroy(c);
    return st;
}

static const run_fn runners[] = {run_reference, run_compiled};

Test(buffer_binding, by_id_and_by_name_give_the_same_result)
{
    dqg_tensor_id a, c, b, y;
    dqg_graph *g = add_graph(&a, &c, &b, &y);
    float av[2] = {1, 2}, bv[2] = {100, 200};
    for (int r = 0; r < 2; r++) {
        float by_id[2] = {0}, by_name[2] = {0};
        /* Listed in another order than the graph's inputs. */
        dqg_buffer in_id[2] = {{.id = b, .data = bv, .size = 8}, {.id = a, .data = av, .size = 8}};
        dqg_buffer out_id = {.id = y, .data = by_id, .size = 8};
        cr_assert_eq(runners[r](g, in_id, 2, &out_id, 1), DQG_OK, "%s", dqg_last_error());
        dqg_buffer in_nm[2] = {{.name = "b", .data = bv, .size = 8},
                               {.name = "a", .data = av, .size = 8}};
        dqg_buffer out_nm = {.name = "y", .data = by_name, .size = 8};
        cr_assert_eq(runners[r](g, in_nm, 2, &out_nm, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(by_id[0], 111.0f);
        cr_assert_eq(by_id[1], 222.0f);
        cr_assert_eq(by_name[0], 111.0f);
        cr_assert_eq(by_name[1], 222.0f);
    }
    dqg_graph_destroy(g);
}

Test(buffer_binding, inputs_by_id_and_outputs_by_name)
{
    dqg_tensor_id a, c, b, y;
    dqg_graph *g = add_graph(&a, &c, &b, &y);
    float av[2] = {1, 2}, bv[2] = {3, 4}, out[2];
    dqg_buffer in[2] = {{.id = a, .data = av, .size = 8}, {.id = b, .data = bv, .size = 8}};
    dqg_buffer o = {.name = "y", .data = out, .size = 8};
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(runners[r](g, in, 2, &o, 1), DQG_OK, "%s", dqg_last_error());
        cr_assert_eq(out[1], 26.0f);
    }
    dqg_graph_destroy(g);
}

/* The mistake the rule exists for: a buffer initialized with {0} whose name
 * was not set, next to named ones, would bind tensor 0 ('a') by id. */
Test(buffer_binding, nameless_buffer_among_named_ones_is_refused)
{
    dqg_tensor_id a, c, b, y;
    dqg_graph *g = add_graph(&a, &c, &b, &y);
    float av[2] = {1, 2}, bv[2] = {3, 4}, out[2] = {-1, -1};
    dqg_buffer o = {.name = "y", .data = out, .size = 8};
    dqg_buffer in[2] = {{.name = "b", .data = bv, .size = 8}, {0}};
    in[1].data = av;
    in[1].size = 8;
    for (int r = 0; r < 2; r++) {
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT,
                     "input buffer 1 has no name", "bind by id (0)", "buffer 0 binds by name ('b')",
                     "all by name or all by id");
        /* Outputs are written only on success. */
        cr_assert_eq(out[0], -1.0f);
    }
    /* Also when the nameless buffer's id is set: one style per list. */
    in[1].id = a;
    in[0] = (dqg_buffer){.id = b, .name = "b", .data = bv, .size = 8};
    for (int r = 0; r < 2; r++)
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT,
                     "input buffer 1 has no name", "all by name or all by id");
    dqg_graph_destroy(g);
}

Test(buffer_binding, zero_initialized_buffer_is_refused)
{
    dqg_tensor_id a, c, b, y;
    dqg_graph *g = add_graph(&a, &c, &b, &y);
    float bv[2] = {3, 4}, out[2];
    dqg_buffer in[2] = {{.id = b, .data = bv, .size = 8}, {0}};
    dqg_buffer o = {.id = y, .data = out, .size = 8};
    for (int r = 0; r < 2; r++)
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT, "input buffer 1 is empty",
                     "zero-initialized");
    dqg_buffer zero_out = {0};
    in[1] = (dqg_buffer){.id = a, .data = bv, .size = 8};
    for (int r = 0; r < 2; r++)
        expect_error(runners[r](g, in, 2, &zero_out, 1), DQG_INVALID_ARGUMENT,
                     "output buffer 0 is empty");
    dqg_graph_destroy(g);
}

Test(buffer_binding, id_must_be_an_input_or_output_of_the_graph)
{
    dqg_tensor_id a, c, b, y;
    dqg_graph *g = add_graph(&a, &c, &b, &y);
    float av[2] = {1, 2}, bv[2] = {3, 4}, out[2];
    dqg_buffer o = {.id = y, .data = out, .size = 8};
    for (int r = 0; r < 2; r++) {
        /* A constant's id. */
        dqg_buffer in[2] = {{.id = a, .data = av, .size = 8}, {.id = c, .data = bv, .size = 8}};
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT, "input buffer 1 binds 'c'",
                     "(id 1)", "not a graph input");
        /* Ids outside the graph, DQG_NONE included. */
        in[1].id = 99;
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT,
                     "input buffer 1 has no name and binds by id", "id 99 is no tensor");
        in[1].id = DQG_NONE;
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT, "id -1 is no tensor");
        /* An output buffer bound to an input's id (tensor 0). */
        in[1].id = b;
        dqg_buffer wrong = {.id = a, .data = out, .size = 8};
        expect_error(runners[r](g, in, 2, &wrong, 1), DQG_INVALID_ARGUMENT,
                     "output buffer 0 binds 'a' (id 0), which is not a graph output");
        /* The same input twice. */
        in[1].id = a;
        expect_error(runners[r](g, in, 2, &o, 1), DQG_INVALID_ARGUMENT,
                     "input buffers 0 and 1 both bind 'a'");
    }
    dqg_graph_destroy(g);
}
