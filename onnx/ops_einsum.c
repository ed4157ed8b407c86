/* Einsum (opset 12+) as the ops it is made of: a label repeated within an
 * operand takes that operand's diagonal (Where with an identity mask, then
 * ReduceSum), a label found in one operand alone and not in the result is
 * summed away (ReduceSum), and operands are contracted two at a time, left
 * to right, as one batched MatMul between Transposes and Reshapes: labels
 * shared and still needed are its batch, labels shared and no longer
 * needed its K, the others its M and N. A last Transpose orders the
 * result's labels. "..." stands for the dimensions no letter names,
 * right-aligned across operands, where a 1 broadcasts against a batch
 * dimension. Float operands (MatMul's types). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_import.h"
#include "onnx/onnx_ops.h"

enum {
    EIN_LETTERS = 52,                        /* a-z, A-Z */
    EIN_LABELS = EIN_LETTERS + DQG_MAX_RANK, /* and the dimensions of "..." */
    EIN_MAX_OPERANDS = 64,
};

/* One operand (or the running contraction): its tensor and the label of
 * each dimension. */
typedef struct ein_term {
    dqg_tensor_id t;
    int rank;
    int label[DQG_MAX_RANK];
    int64_t dims[DQG_MAX_RANK];
} ein_term;

typedef struct ein_ctx {
    onnx_import *c;
    int n_ops; /* builder ops made, for their names */
} ein_ctx;

static int letter_label(char ch)
{
    return ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
}

static char label_char(int l)
{
    return l < 26 ? (char)('a' + l) : l < EIN_LETTERS ? (char)('A' + l - 26) : '.';
}

static const char *op_name(ein_ctx *e, const char *what)
{
    char suffix[48];
    snprintf(suffix, sizeof suffix, "%s%d", what, e->n_ops++);
    return onnx_op_name(e->c, suffix);
}

/* Parses one term (the letters of an operand or of the result) into
 * labels, "..." as `ell` placeholders, right-aligned among `ell_max`. */
static dqg_status parse_term(onnx_import *c, const char *s, size_t len, int ell, int ell_max,
                             int *labels, int *n, bool *has_ell, const char *what)
{
    *n = 0;
    *has_ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (*has_ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "equation: %s has a '.' outside one \"...\"", what);
            *has_ell = true;
            for (int k = 0; k < ell; k++) {
                if (*n >= DQG_MAX_RANK)
                    return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                          "equation: %s has more than %d labels", what,
                                          DQG_MAX_RANK);
                labels[(*n)++] = EIN_LETTERS + ell_max - ell + k;
            }
            i += 2;
            continue;
        }
        int l = letter_label(s[i]);
        if (l < 0)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "equation: %s holds '%c', which is not a letter", what, s[i]);
        if (*n >= DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "equation: %s has more than %d labels",
                                  what, DQG_MAX_RANK);
        labels[(*n)++] = l;
    }
    return DQG_OK;
}

static int letters_in(const char *s, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += letter_label(s[i]) >= 0;
    return n;
}

static bool has_dots(const char *s, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++)
        if (s[i] == '.' && s[i + 1] == '.' && s[i + 2] == '.')
            return true;
    return false;
}

static bool identity_perm(const int64_t *perm, int rank)
{
    for (int i = 0; i < rank; i++)
        if (perm[i] != i)
            return false;
    return true;
}

/* Transposes t to the label order `order` (a permutation of its labels). */
static dqg_status permute(ein_ctx *e, ein_term *t, const int *order)
{
    int64_t perm[DQG_MAX_RANK], dims[DQG_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        for (int j = 0; j < t->rank; j++)
            if (t->label[j] == order[i]) {
                perm[i] = j;
                dims[i] = t->dims[j];
            }
    if (identity_perm(perm, t->rank))
        return DQG_OK;
    if ((t->t = dqg_transpose(e->c->g, op_name(e, "transpose"), t->t, perm)) == DQG_NONE)
        return onnx_builder_failed(e->c);
    memcpy(t->label, order, (size_t)t->rank * sizeof *order);
    memcpy(t->dims, dims, (size_t)t->rank * sizeof *dims);
    return DQG_OK;
}

/* Sums t over the dimensions `drop` marks (by label). */
static dqg_status sum_labels(ein_ctx *e, ein_term *t, const bool *drop)
{
    int64_t axes[DQG_MAX_RANK];
    int na = 0, keep = 0;
    for (int i = 0; i < t->rank; i++) {
        if (drop[t->label[i]]) {
            axes[na++] = i;
        } else {
            t->label[keep] = t->label[i];
            t->dims[keep++] = t->dims[i];
        }
    }
    if (!na)
        return DQG_OK;
    t->t = dqg_reduce(e->c->g, op_name(e, "sum"), DQG_REDUCE_SUM, t->t, na, axes, false);
    t->rank = keep;
    return t->t == DQG_NONE ? onnx_builder_failed(e->c) : DQG_OK;
}

/* The diagonal of dimensions i < j (equal sizes) of t: Where(i == j, t, 0)
 * summed over j. */
static dqg_status diagonal(ein_ctx *e, ein_term *t, int i, int j)
{
    onnx_import *c = e->c;
    int64_t n = t->dims[i], mdims[DQG_MAX_RANK];
    if (n != t->dims[j])
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "equation: label '%c' repeated in one operand names dimensions of "
                              "%lld and %lld",
                              label_char(t->label[i]), (long long)n, (long long)t->dims[j]);
    for (int k = 0; k < t->rank; k++)
        mdims[k] = k == i || k == j ? n : 1;
    uint8_t *eye = calloc((size_t)(n * n), 1);
    if (!eye)
        return onnx_node_fail(c, DQG_OUT_OF_MEMORY, "out of memory for a diagonal's mask");
    for (int64_t k = 0; k < n; k++)
        eye[k * n + k] = 1;
    char suffix[48];
    snprintf(suffix, sizeof suffix, "eye%d", e->n_ops++);
    dqg_tensor_id mask = onnx_add_constant(c, suffix, DQG_BOOL, t->rank, mdims, eye);
    free(eye);
    unsigned char zero_bytes[8] = {0};
    snprintf(suffix, sizeof suffix, "zero%d", e->n_ops++);
    dqg_tensor_id zero =
        onnx_add_constant(c, suffix, dqg_tensor_dtype(c->g, t->t), 0, NULL, zero_bytes);
    if (mask == DQG_NONE || zero == DQG_NONE ||
        (t->t = dqg_where(c->g, op_name(e, "diagonal"), mask, t->t, zero)) == DQG_NONE)
        return onnx_builder_failed(c);
    int64_t axis = j;
    if ((t->t = dqg_reduce(c->g, op_name(e, "sum"), DQG_REDUCE_SUM, t->t, 1, &axis, false)) ==
        DQG_NONE)
        return onnx_builder_failed(c);
    for (int k = j; k + 1 < t->rank; k++) {
        t->label[k] = t->label[k + 1];
        t->dims[k] = t->dims[k + 1];
    }
    t->rank--;
    return DQG_OK;
}

/* t reshaped to dims (t itself when it has them). */
static dqg_status reshape(ein_ctx *e, dqg_tensor_id t, int rank, const int64_t *dims,
                          dqg_tensor_id *out)
{
    int64_t have[DQG_MAX_RANK];
    dqg_tensor_dims(e->c->g, t, have);
    if (rank == dqg_tensor_rank(e->c->g, t) && !memcmp(have, dims, (size_t)rank * sizeof *dims)) {
        *out = t;
        return DQG_OK;
    }
    *out = dqg_reshape(e->c->g, op_name(e, "reshape"), t, rank, dims);
    return *out == DQG_NONE ? onnx_builder_failed(e->c) : DQG_OK;
}

/* a := a (x) b over the labels shared and no longer `needed`. */
static dqg_status contract(ein_ctx *e, ein_term *a, ein_term *b, const bool *needed)
{
    onnx_import *c = e->c;
    bool in_a[EIN_LABELS] = {0}, in_b[EIN_LABELS] = {0};
    int64_t size_a[EIN_LABELS] = {0}, size_b[EIN_LABELS] = {0};
    for (int i = 0; i < a->rank; i++) {
        in_a[a->label[i]] = true;
        size_a[a->label[i]] = a->dims[i];
    }
    for (int i = 0; i < b->rank; i++) {
        in_b[b->label[i]] = true;
        size_b[b->label[i]] = b->dims[i];
    }
    int batch[DQG_MAX_RANK], kk[DQG_MAX_RANK], fa[DQG_MAX_RANK], fb[DQG_MAX_RANK];
    int nb = 0, nk = 0, na = 0, nf = 0;
    for (int i = 0; i < a->rank; i++) {
        int l = a->label[i];
        if (!in_b[l])
            fa[na++] = l;
        else if (needed[l])
            batch[nb++] = l;
        else
            kk[nk++] = l;
    }
    for (int i = 0; i < b->rank; i++)
        if (!in_a[b->label[i]])
            fb[nf++] = b->label[i];
    for (int i = 0; i < nk; i++)
        if (size_a[kk[i]] != size_b[kk[i]])
            return onnx_node_fail(
                c, DQG_INVALID_ARGUMENT, "equation: label '%c' names dimensions of %lld and %lld",
                label_char(kk[i]), (long long)size_a[kk[i]], (long long)size_b[kk[i]]);
    for (int i = 0; i < nb; i++)
        if (size_a[batch[i]] != size_b[batch[i]] &&
            (batch[i] < EIN_LETTERS || (size_a[batch[i]] != 1 && size_b[batch[i]] != 1)))
            return onnx_node_fail(
                c, DQG_INVALID_ARGUMENT, "equation: label '%c' names dimensions of %lld and %lld",
                label_char(batch[i]), (long long)size_a[batch[i]], (long long)size_b[batch[i]]);
    if (nb + 2 > DQG_MAX_RANK || nb + na + nf > DQG_MAX_RANK)
        return onnx_node_fail(c, DQG_UNSUPPORTED, "the contraction needs more than %d dimensions",
                              DQG_MAX_RANK);
    /* a as [batch, M..., K...] -> [batch, M, K]; b as [batch, K..., N...] ->
     * [batch, K, N]. */
    int order[DQG_MAX_RANK], n = 0;
    dqg_status st;
    for (int i = 0; i < nb; i++)
        order[n++] = batch[i];
    for (int i = 0; i < na; i++)
        order[n++] = fa[i];
    for (int i = 0; i < nk; i++)
        order[n++] = kk[i];
    if ((st = permute(e, a, order)) != DQG_OK)
        return st;
    n = nb;
    for (int i = 0; i < nk; i++)
        order[n++] = kk[i];
    for (int i = 0; i < nf; i++)
        order[n++] = fb[i];
    if ((st = permute(e, b, order)) != DQG_OK)
        return st;
    int64_t m = 1, k = 1, nn = 1, da[DQG_MAX_RANK], db[DQG_MAX_RANK];
    for (int i = 0; i < na; i++)
        m *= size_a[fa[i]];
    for (int i = 0; i < nk; i++)
        k *= size_a[kk[i]];
    for (int i = 0; i < nf; i++)
        nn *= size_b[fb[i]];
    for (int i = 0; i < nb; i++) {
        da[i] = size_a[batch[i]];
        db[i] = size_b[batch[i]];
    }
    da[nb] = m;
    da[nb + 1] = k;
    db[nb] = k;
    db[nb + 1] = nn;
    dqg_tensor_id ta, tb;
    if ((st = reshape(e, a->t, nb + 2, da, &ta)) != DQG_OK ||
        (st = reshape(e, b->t, nb + 2, db, &tb)) != DQG_OK)
        return st;
    dqg_tensor_id y = dqg_matmul(c->g, op_name(e, "matmul"), ta, tb, NULL);
    if (y == DQG_NONE)
        return onnx_builder_failed(c);
    /* [batch, M, N] -> [batch, M..., N...] */
    ein_term r = {.t = y};
    for (int i = 0; i < nb; i++) {
        r.label[r.rank] = batch[i];
        r.dims[r.rank++] =
            size_a[batch[i]] > size_b[batch[i]] ? size_a[batch[i]] : size_b[batch[i]];
    }
    for (int i = 0; i < na; i++) {
        r.label[r.rank] = fa[i];
        r.dims[r.rank++] = size_a[fa[i]];
    }
    for (int i = 0; i < nf; i++) {
        r.label[r.rank] = fb[i];
        r.dims[r.rank++] = size_b[fb[i]];
    }
    if ((st = reshape(e, y, r.rank, r.dims, &r.t)) != DQG_OK)
        return st;
    *a = r;
    return DQG_OK;
}

dqg_status onnx_import_einsum(onnx_import *c)
{
    static const char *const known[] = {"equation", NULL};
    char eq[512];
    dqg_status st;
    if ((st = onnx_check_arity(c, 1, EIN_MAX_OPERANDS, 1, 1)) != DQG_OK ||
        (st = onnx_check_attrs(c, known)) != DQG_OK)
        return st;
    if (!onnx_attr(c, "equation"))
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "the equation attribute is missing");
    if ((st = onnx_attr_string(c, "equation", "", eq, sizeof eq)) != DQG_OK)
        return st;
    /* Spaces carry nothing. */
    size_t len = 0;
    for (size_t i = 0; eq[i]; i++)
        if (eq[i] != ' ')
            eq[len++] = eq[i];
    eq[len] = '\0';
    int n = (int)c->node->n_input;
    ein_term term[EIN_MAX_OPERANDS];
    for (int i = 0; i < n; i++) {
        if ((st = onnx_input(c, i, "Inputs", true, &term[i].t)) != DQG_OK ||
            (st = onnx_require_float(c, i, term[i].t)) != DQG_OK)
            return st;
        onnx_shape s = onnx_tensor_shape(c, term[i].t);
        term[i].rank = s.rank;
        memcpy(term[i].dims, s.dims, sizeof s.dims);
    }
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;
    /* The terms of the operands, and the dimensions "..." covers in each. */
    const char *start[EIN_MAX_OPERANDS];
    size_t tlen[EIN_MAX_OPERANDS];
    int nt = 0;
    for (size_t i = 0, from = 0; i <= lhs_len; i++)
        if (i == lhs_len || eq[i] == ',') {
            if (nt == EIN_MAX_OPERANDS)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT, "equation: too many terms");
            start[nt] = eq + from;
            tlen[nt++] = i - from;
            from = i + 1;
        }
    if (nt != n)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "equation \"%s\" has %d operand term%s for %d input%s", eq, nt,
                              nt == 1 ? "" : "s", n, n == 1 ? "" : "s");
    int ell[EIN_MAX_OPERANDS], ell_max = 0;
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < tlen[i]; k++)
            if (start[i][k] != '.' && letter_label(start[i][k]) < 0)
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "equation: term %d holds '%c', which is not a letter", i,
                                      start[i][k]);
        bool dots = has_dots(start[i], tlen[i]);
        int letters = letters_in(start[i], tlen[i]);
        ell[i] = dots ? term[i].rank - letters : 0;
        if (ell[i] < 0 || (!dots && letters != term[i].rank))
            return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                  "equation: term %d (\"%.*s\") names %d dimension%s of input %d, "
                                  "which has %d",
                                  i, (int)tlen[i], start[i], letters, letters == 1 ? "" : "s", i,
                                  term[i].rank);
        ell_max = ell[i] > ell_max ? ell[i] : ell_max;
    }
    int count[EIN_LABELS] = {0};
    for (int i = 0; i < n; i++) {
        int nl;
        bool has;
        char what[32];
        snprintf(what, sizeof what, "term %d", i);
        if ((st = parse_term(c, start[i], tlen[i], ell[i], ell_max, term[i].label, &nl, &has,
                             what)) != DQG_OK)
            return st;
        for (int k = 0; k < nl; k++)
            count[term[i].label[k]]++;
    }
    /* The result's labels: given, or (implicit) "..." and then the letters
     * found once, in alphabetical order (upper case first, as ASCII). */
    int out[DQG_MAX_RANK], n_out = 0;
    bool in_out[EIN_LABELS] = {0};
    if (arrow) {
        bool has;
        if ((st = parse_term(c, arrow + 2, len - lhs_len - 2, ell_max, ell_max, out, &n_out, &has,
                             "the result")) != DQG_OK)
            return st;
        for (int k = 0; k < n_out; k++) {
            if (in_out[out[k]])
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "equation: the result repeats label '%c'",
                                      label_char(out[k]));
            if (!count[out[k]])
                return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                                      "equation: the result's label '%c' is in no operand",
                                      label_char(out[k]));
            in_out[out[k]] = true;
        }
    } else {
        for (int k = 0; k < ell_max; k++)
            out[n_out++] = EIN_LETTERS + k;
        for (int l = 26; l < EIN_LETTERS; l++) /* 'A'..'Z' */
            if (count[l] == 1)
                out[n_out++] = l;
        for (int l = 0; l < 26; l++)
            if (count[l] == 1)
                out[n_out++] = l;
        if (n_out > DQG_MAX_RANK)
            return onnx_node_fail(c, DQG_UNSUPPORTED, "a result of more than %d dimensions",
                                  DQG_MAX_RANK);
        for (int k = 0; k < n_out; k++)
            in_out[out[k]] = true;
    }
    ein_ctx e = {.c = c};
    /* Diagonals, then each operand's labels found nowhere else summed. */
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < term[i].rank; a++)
            for (int b = a + 1; b < term[i].rank; b++)
                if (term[i].label[a] == term[i].label[b]) {
                    count[term[i].label[a]]--;
                    if ((st = diagonal(&e, &term[i], a, b)) != DQG_OK)
                        return st;
                    b = a; /* rescan after the removal */
                }
        bool drop[EIN_LABELS] = {0};
        for (int a = 0; a < term[i].rank; a++)
            drop[term[i].label[a]] = count[term[i].label[a]] == 1 && !in_out[term[i].label[a]];
        if ((st = sum_labels(&e, &term[i], drop)) != DQG_OK)
            return st;
    }
    /* Left to right: a label is needed while the result or a later operand
     * has it. */
    ein_term acc = term[0];
    for (int i = 1; i < n; i++) {
        bool needed[EIN_LABELS];
        memcpy(needed, in_out, sizeof needed);
        for (int j = i + 1; j < n; j++)
            for (int k = 0; k < term[j].rank; k++)
                needed[term[j].label[k]] = true;
        if ((st = contract(&e, &acc, &term[i], needed)) != DQG_OK)
            return st;
    }
    /* Labels of the first operand alone left after a single-operand
     * equation were summed above; order the result's. */
    if (acc.rank != n_out)
        return onnx_node_fail(c, DQG_INVALID_ARGUMENT,
                              "equation \"%s\": the result has %d labels, the operands leave %d",
                              eq, n_out, acc.rank);
    if ((st = permute(&e, &acc, out)) != DQG_OK)
        return st;
    if (e.n_ops == 0) /* one operand, its labels in order: the input itself */
        return onnx_alias_output(c, 0, 0);
    return onnx_set_output(c, 0, acc.t);
}
