/* Einsum imported as Transpose, Reshape, MatMul, ReduceSum and (for a
 * diagonal) Where: each equation compiled, fused and unfused, and on the
 * reference interpreter, against a direct evaluation of the sum in double
 * (within 1e-5 of the result's largest magnitude); and its rules. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "support/onnx_model.h"
#include "test_common.h"

enum { T_FLOAT = 1, T_INT32 = 6, MAX_IN = 3, MAX_R = 6 };

typedef struct ein_case {
    const char *equation;      /* as the model has it */
    const char *terms[MAX_IN]; /* the evaluator's: one letter per dimension */
    const char *result;
    int n;
    int rank[MAX_IN];
    int64_t dims[MAX_IN][MAX_R];
    int out_rank;
    int64_t out_dims[MAX_R];
} ein_case;

static dqg_status load(tm_model *m, dqg_graph **g)
{
    dqg_status st = tm_load(m, NULL, g);
    tm_free(m);
    return st;
}

static tm_model *model(const ein_case *k, int32_t type)
{
    tm_model *m = tm_new(13);
    char inputs[64] = "";
    for (int i = 0; i < k->n; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        tm_input(m, name, type, k->rank[i], k->dims[i], NULL);
        strcat(inputs, i ? "," : "");
        strcat(inputs, name);
    }
    Onnx__NodeProto *node = tm_node(m, "Einsum", NULL, "ein", inputs, "y");
    if (k->equation)
        tm_attr_string(m, node, "equation", k->equation);
    tm_output(m, "y", type, k->out_rank, k->out_dims);
    return m;
}

/* The sum over every assignment of the labels, in double; a dimension of
 * 1 broadcasts (its index is 0). */
static void evaluate(const ein_case *k, float *const *x, double *y, int64_t yn)
{
    int64_t size[128] = {0};
    for (int i = 0; i < k->n; i++)
        for (int d = 0; d < k->rank[i]; d++) {
            int l = (unsigned char)k->terms[i][d];
            size[l] = k->dims[i][d] > size[l] ? k->dims[i][d] : size[l];
        }
    int labels[64], nl = 0;
    for (int l = 0; l < 128; l++)
        if (size[l])
            labels[nl++] = l;
    for (int64_t i = 0; i < yn; i++)
        y[i] = 0;
    int64_t v[128] = {0};
    for (;;) {
        double p = 1;
        for (int i = 0; i < k->n; i++) {
            int64_t at = 0;
            for (int d = 0; d < k->rank[i]; d++)
                at = at * k->dims[i][d] +
                     (k->dims[i][d] == 1 ? 0 : v[(unsigned char)k->terms[i][d]]);
            p *= x[i][at];
        }
        int64_t at = 0;
        for (int d = 0; d < k->out_rank; d++)
            at = at * k->out_dims[d] + v[(unsigned char)k->result[d]];
        y[at] += p;
        int j = 0;
        while (j < nl && ++v[labels[j]] == size[labels[j]])
            v[labels[j++]] = 0;
        if (j == nl)
            break;
    }
}

static void check(const ein_case *k)
{
    dqg_graph *g;
    cr_assert_eq(load(model(k, T_FLOAT), &g), DQG_OK, "%s: %s", k->equation, dqg_last_error());
    float *x[MAX_IN];
    dqg_buffer in[MAX_IN];
    static const char *names[] = {"x0", "x1", "x2"};
    test_rng = 17;
    for (int i = 0; i < k->n; i++) {
        int64_t n = 1;
        for (int d = 0; d < k->rank[i]; d++)
            n *= k->dims[i][d];
        x[i] = malloc((size_t)n * sizeof *x[i]);
        for (int64_t j = 0; j < n; j++)
            x[i][j] = test_uniform(-1.0f, 1.0f);
        in[i] = (dqg_buffer){.name = names[i], .data = x[i], .size = (size_t)n * sizeof *x[i]};
    }
    int64_t yn = 1;
    for (int d = 0; d < k->out_rank; d++)
        yn *= k->out_dims[d];
    double *want = malloc((size_t)yn * sizeof *want);
    float *got = malloc((size_t)yn * sizeof *got);
    evaluate(k, x, want, yn);
    double big = 1e-30;
    for (int64_t i = 0; i < yn; i++)
        big = fmax(big, fabs(want[i]));
    dqg_buffer out = {.name = "y", .data = got, .size = (size_t)yn * sizeof *got};
    for (int run = 0; run < 3; run++) { /* reference, fused, unfused */
        if (run == 0) {
            cr_assert_eq(dqg_reference_run(g, in, (size_t)k->n, &out, 1), DQG_OK, "%s: %s",
                         k->equation, dqg_last_error());
        } else {
            dqg_compile_options o = dqg_compile_options_default();
            o.disable_fusion = run == 2;
            dqg_compiled *c;
            cr_assert_eq(dqg_compile(g, &o, &c), DQG_OK, "%s: %s", k->equation, dqg_last_error());
            cr_assert_eq(dqg_execute(c, in, (size_t)k->n, &out, 1), DQG_OK, "%s: %s", k->equation,
                         dqg_last_error());
            dqg_compiled_destroy(c);
        }
        for (int64_t i = 0; i < yn; i++)
            cr_assert(fabs(got[i] - want[i]) <= 1e-5 * big,
                      "%s (run %d): y[%lld] = %g, expected %g", k->equation, run, (long long)i,
                      got[i], want[i]);
    }
    for (int i = 0; i < k->n; i++)
        free(x[i]);
    free(want);
    free(got);
    dqg_graph_destroy(g);
}

Test(einsum, equations_match_a_direct_sum)
{
    const ein_case cases[] = {
        /* matrix product, batched, and attention's two products */
        {"ij,jk->ik", {"ij", "jk"}, "ik", 2, {2, 2}, {{3, 4}, {4, 5}}, 2, {3, 5}},
        {"bij,bjk->bik", {"bij", "bjk"}, "bik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, 3, {2, 3, 5}},
        {"bhqd,bhkd->bhqk",
         {"bhqd", "bhkd"},
         "bhqk",
         2,
         {4, 4},
         {{1, 2, 5, 3}, {1, 2, 4, 3}},
         4,
         {1, 2, 5, 4}},
        {"bhqk,bhkd->bhqd",
         {"bhqk", "bhkd"},
         "bhqd",
         2,
         {4, 4},
         {{1, 2, 5, 4}, {1, 2, 4, 3}},
         4,
         {1, 2, 5, 3}},
        /* TensorFlow's attention projection: a contraction over two labels */
        {"abc,cde->abde",
         {"abc", "cde"},
         "abde",
         2,
         {3, 3},
         {{2, 3, 4}, {4, 2, 3}},
         4,
         {2, 3, 2, 3}},
        {"abcd,cde->abe",
         {"abcd", "cde"},
         "abe",
         2,
         {4, 3},
         {{2, 3, 2, 4}, {2, 4, 5}},
         3,
         {2, 3, 5}},
        /* one operand: a transpose, sums */
        {"ij->ji", {"ij"}, "ji", 1, {2}, {{3, 4}}, 2, {4, 3}},
        {"ij->i", {"ij"}, "i", 1, {2}, {{3, 4}}, 1, {3}},
        {"ij->", {"ij"}, "", 1, {2}, {{3, 4}}, 0, {0}},
        {"ijk->kji", {"ijk"}, "kji", 1, {3}, {{2, 3, 4}}, 3, {4, 3, 2}},
        /* a dot product and an outer product */
        {"i,i->", {"i", "i"}, "", 2, {1, 1}, {{7}, {7}}, 0, {0}},
        {"i,j->ij", {"i", "j"}, "ij", 2, {1, 1}, {{3}, {4}}, 2, {3, 4}},
        /* implicit results: the letters found once, in alphabetical order */
        {"ij,jk", {"ij", "jk"}, "ik", 2, {2, 2}, {{3, 4}, {4, 5}}, 2, {3, 5}},
        {"ba", {"ba"}, "ab", 1, {2}, {{3, 4}}, 2, {4, 3}},
        {"Ab,bc", {"Ab", "bc"}, "Ac", 2, {2, 2}, {{3, 4}, {4, 2}}, 2, {3, 2}},
        /* "...": right-aligned dimensions, a 1 broadcast in the batch */
        {"...ij,...jk->...ik",
         {"xyij", "yjk"},
         "xyik",
         2,
         {4, 3},
         {{2, 3, 4, 5}, {3, 5, 2}},
         4,
         {2, 3, 4, 2}},
        {"...ij,...jk->...ik",
         {"xij", "xjk"},
         "xik",
         2,
         {3, 3},
         {{1, 3, 4}, {5, 4, 2}},
         3,
         {5, 3, 2}},
        {"...ij->...ji", {"xyij"}, "xyji", 1, {4}, {{2, 2, 3, 4}}, 4, {2, 2, 4, 3}},
        /* diagonals: a trace, a batch of them */
        {"ii->", {"ii"}, "", 1, {2}, {{4, 4}}, 0, {0}},
        {"...ii->...i", {"xii"}, "xi", 1, {3}, {{3, 5, 5}}, 2, {3, 5}},
        {"iij,jk->ik", {"iij", "jk"}, "ik", 2, {3, 2}, {{3, 3, 4}, {4, 2}}, 2, {3, 2}},
        /* three operands, left to right */
        {"ijk,ikl,ilm->ijm",
         {"ijk", "ikl", "ilm"},
         "ijm",
         3,
         {3, 3, 3},
         {{2, 3, 4}, {2, 4, 5}, {2, 5, 3}},
         3,
         {2, 3, 3}},
        {"ij,jk,kl->il",
         {"ij", "jk", "kl"},
         "il",
         3,
         {2, 2, 2},
         {{2, 3}, {3, 4}, {4, 5}},
         2,
         {2, 5}},
        /* dimensions of 1: a diagonal and a sum of them, an outer product */
        {"b,aee", {"b", "aee"}, "ab", 2, {1, 3}, {{1}, {3, 1, 1}}, 2, {3, 1}},
        /* spaces carry nothing */
        {" i j , j k -> i k ", {"ij", "jk"}, "ik", 2, {2, 2}, {{3, 4}, {4, 5}}, 2, {3, 5}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check(&cases[i]);
}

static void expect_rule(const ein_case *k, int32_t type, dqg_status status, const char *text)
{
    dqg_graph *g;
    dqg_status st = load(model(k, type), &g);
    cr_assert_eq(st, status, "%s: %s", k->equation ? k->equation : "(none)", dqg_last_error());
    cr_assert(strstr(dqg_last_error(), text), "%s: %s", k->equation ? k->equation : "(none)",
              dqg_last_error());
    cr_assert(strstr(dqg_last_error(), "Einsum node 'ein'"), "%s", dqg_last_error());
    cr_assert_null(g);
}

Test(einsum, rules)
{
    const ein_case two = {"ij,jk->ik", {0}, NULL, 2, {2, 2}, {{3, 4}, {4, 5}}, 2, {3, 5}};
    ein_case k = two;
    k.n = 1;
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "has 2 operand terms for 1 input");
    k = two;
    k.equation = "ijl,jk->ik";
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "names 3 dimensions of input 0, which has 2");
    k.equation = "ij,jk->ii";
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "the result repeats label 'i'");
    k.equation = "ij,jk->iz";
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "the result's label 'z' is in no operand");
    k.equation = "i1,jk->ik";
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "holds '1', which is not a letter");
    k.equation = "i.j,jk->ik";
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "a '.' outside one \"...\"");
    k.equation = "ij,jk->ik";
    k.dims[1][0] = 3;
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "label 'j' names dimensions of 4 and 3");
    k = two;
    k.equation = NULL;
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT, "the equation attribute is missing");
    k = two;
    expect_rule(&k, T_INT32, DQG_UNSUPPORTED, "input 0 has type s32");
    const ein_case diag = {"ij->i", {0}, NULL, 1, {2}, {{3, 4}}, 1, {3}};
    k = diag;
    k.equation = "ii->i";
    expect_rule(&k, T_FLOAT, DQG_INVALID_ARGUMENT,
                "label 'i' repeated in one operand names dimensions of 3 and 4");
}

/* Random equations over a few labels (repeats within an operand, labels
 * summed away, one to three operands, explicit and implicit results):
 * each imports and matches the direct sum. */
Test(einsum, random_equations_match_a_direct_sum)
{
    static char terms[200][MAX_IN][8], results[200][8], equations[200][64];
    for (int iter = 0; iter < 200; iter++) {
        test_rng = 1000u + (uint32_t)iter;
        ein_case k = {.n = (int)test_rin(1, 3)};
        int64_t size[5];
        for (int l = 0; l < 5; l++)
            size[l] = test_rin(1, 4);
        int count[5] = {0};
        char *eq = equations[iter];
        eq[0] = '\0';
        for (int i = 0; i < k.n; i++) {
            k.rank[i] = (int)test_rin(0, 4);
            for (int d = 0; d < k.rank[i]; d++) {
                int l = (int)test_rin(0, 4);
                terms[iter][i][d] = (char)('a' + l);
                k.dims[i][d] = size[l];
                count[l]++;
            }
            terms[iter][i][k.rank[i]] = '\0';
            k.terms[i] = terms[iter][i];
            strcat(eq, i ? "," : "");
            strcat(eq, terms[iter][i]);
        }
        char *r = results[iter];
        int nr = 0;
        if (test_rin(0, 2)) { /* explicit: some of the labels, shuffled */
            for (int l = 0; l < 5; l++)
                if (count[l] && test_rin(0, 1))
                    r[nr++] = (char)('a' + l);
            for (int i = nr - 1; i > 0; i--) {
                int j = (int)test_rin(0, i);
                char t = r[i];
                r[i] = r[j];
                r[j] = t;
            }
            r[nr] = '\0';
            strcat(eq, "->");
            strcat(eq, r);
        } else { /* implicit: the labels found once, in order */
            for (int l = 0; l < 5; l++)
                if (count[l] == 1)
                    r[nr++] = (char)('a' + l);
            r[nr] = '\0';
        }
        k.equation = eq;
        k.result = r;
        k.out_rank = nr;
        for (int d = 0; d < nr; d++)
            k.out_dims[d] = size[r[d] - 'a'];
        check(&k);
    }
}
