/* dqgraph run */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "tool.h"

/* ------------------------------------------------------------------------ */
/* dqgraph run                                                               */
/* ------------------------------------------------------------------------ */

const char USAGE_RUN[] =
    "usage: dqgraph run MODEL [-i FILE.pb|DIR]... [--random [--seed S]] [-o DIR]\n"
    "                   [--shape NAME=D0,D1,...]... [--dim SYMBOL=N]... [--no-fuse]\n"
    "                   [--backend reference|onednn] [--threads N]\n"
    "\n"
    "Compiles the ONNX model MODEL, runs it once and writes every output to\n"
    "DIR/output_<i>.pb (a TensorProto), printing one line per output:\n"
    "name, data type, shape and file. Every graph input needs data: from -i,\n"
    "or made up with --random (otherwise the exit status is 2, a usage error).\n"
    "\n"
    "Options:\n"
    "  -i, --input FILE.pb     a TensorProto giving a graph input: the input its name\n"
    "                          names, else the input at its position among the -i files;\n"
    "                          also lets the import use its value where an operator\n"
    "                          needs it while building (e.g. Reshape's shape)\n"
    "  -i, --input DIR         a folder (an ONNX test_data_set_<n>): its input_<n>.pb\n"
    "                          files in the order of n, as if each were given with -i\n"
    "  --random                make up the data of every graph input no file gives:\n"
    "                          floats uniform in [-1, 1], integers uniform over their\n"
    "                          type's range\n"
    "  --seed S                the seed of --random's data (default 0): the same seed\n"
    "                          gives the same data\n"
    "  -o, --output-dir DIR    where to write output_<i>.pb (default: .)\n"
    "  --shape NAME=D0,D1,...  the shape of graph input NAME (NAME= for a scalar)\n"
    "  --dim SYMBOL=N          the value of a symbolic dimension\n"
    "  --no-fuse               keep every dequantize as its own partition\n"
    "  --backend B             reference or onednn (default: onednn)\n"
    "  --fpmath M              strict, or bf16: f32 MatMul/Convolution may compute in bf16\n"
    "                          or int8: weight-only MatMuls may quantize activations\n"
    "                          to int8 per K-block (approximate)\n"
    "  --threads N             threads (default 0: all cores)\n"
    "  -h, --help              show this help\n"
    "\n"
    "Examples:\n"
    "  dqgraph run model.onnx -i input_0.pb -o out\n"
    "  dqgraph run test_qlinearmatmul_2D/model.onnx -i test_qlinearmatmul_2D/test_data_set_0\n"
    "  dqgraph run model.onnx --random --seed 7 -o out\n";

static dqg_status ensure_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return fail(DQG_IO_ERROR, "'%s' is not a folder", dir);
        return DQG_OK;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return fail(DQG_IO_ERROR, "cannot create folder '%s': %s", dir, strerror(errno));
    return DQG_OK;
}

int cmd_run(const tool_opts *o)
{
    session s;
    dqg_compiled *c = NULL;
    const char *dir = o->out_dir ? o->out_dir : ".";
    dqg_status st = session_open(&s, o->pos[0], o, o->inputs, o->n_inputs,
                                 o->random ? MISSING_GENERATE : MISSING_ERROR);
    if (s.missing_input) {
        session_free(&s);
        return usage_error(o->command, "%s", g_msg);
    }
    if (st == DQG_OK) {
        print_warnings(s.graph);
        st = compile_graph(s.graph, o, &c);
    }
    if (st == DQG_OK)
        st = execute(c, &s);
    if (st == DQG_OK)
        st = ensure_dir(dir);
    for (size_t i = 0; st == DQG_OK && i < s.n_outputs; i++) {
        char file[64];
        snprintf(file, sizeof file, "output_%zu.pb", i);
        char *path = join_path(dir, file);
        if (!path) {
            st = oom();
            break;
        }
        dqg_tensor_id id = s.outputs[i].id;
        const char *name = dqg_tensor_name(s.graph, id);
        dqg_dtype dt = dqg_tensor_dtype(s.graph, id);
        int64_t dims[DQG_MAX_RANK];
        int rank = dqg_tensor_dims(s.graph, id, dims);
        st = dqg_tensor_file_write(path, name, dt, rank, dims, s.outputs[i].data);
        if (st != DQG_OK) {
            lib_fail(st);
        } else {
            char shape[256];
            format_shape(shape, sizeof shape, rank, dims);
            printf("%s %s %s %s\n", name ? name : "", dqg_dtype_name(dt), shape, path);
        }
        free(path);
    }
    dqg_compiled_destroy(c);
    session_free(&s);
    return st == DQG_OK ? EXIT_OK : report(st);
}
