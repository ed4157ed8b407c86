"""Compiling and executing (dqg_compile, dqg_execute), and the process-wide
compiled-partition cache."""

import ctypes
import types
import weakref

from . import _args, _native, dtypes, errors
from .graph import Graph, Owned, bind_inputs, check_array, io_spec, make_buffers

_lib = _native.lib

_BACKENDS = {"onednn": 0, "reference": 1}
_FPMATH = {"strict": 0, "bf16": 1, "int8": 2}
MAX_THREADS = 1024


def compile(graph, *, fuse=True, backend="onednn", threads=0, fpmath="strict"):  # noqa: A001
    """Compiles a graph (finalizing it first if needed) into a Compiled.

    fuse: fold dequantize nodes into MatMul/Convolution where possible;
    backend: "onednn" or "reference"; threads: 0 for all cores, at most 1024;
    fpmath: "strict" (f32), "bf16" (f32 MatMul/Convolution may compute in
    bf16) or "int8" (weight-only MatMuls with 4- or 8-bit integer weights
    may quantize their activations to int8 per K-block: approximate). The GIL is released while the library compiles."""
    if not isinstance(graph, Graph):
        raise errors.InvalidArgumentType(
            "compile: expected a dqgraph.Graph, got %s" % type(graph).__name__)
    fuse = _args.flag("compile: fuse", fuse)
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise errors.InvalidArgument("compile: backend %r is not one of %s" % (backend, list(_BACKENDS)))
    if not isinstance(fpmath, str) or fpmath not in _FPMATH:
        raise errors.InvalidArgument("compile: fpmath %r is not one of %s" % (fpmath, list(_FPMATH)))
    threads = _args.integer("compile: threads", threads)
    if not 0 <= threads <= MAX_THREADS:
        raise errors.InvalidArgument(
            "compile: threads is %r; use 0 for all cores, or 1 to %d" % (threads, MAX_THREADS)
        )
    if not graph.finalized:
        graph.finalize()
    opts = _native.zeroed(_native.CompileOptions)
    ctypes.memmove(ctypes.addressof(opts), ctypes.addressof(_lib.dqg_compile_options_default()),
                   ctypes.sizeof(_native.CompileOptions))
    opts.disable_fusion = not fuse
    opts.backend = _BACKENDS[backend]
    opts.threads = threads
    opts.fpmath = _FPMATH[fpmath]
    out = ctypes.c_void_p()
    spec = io_spec(graph)
    h = graph._enter()
    try:
        _lib.dqg_compile(h, ctypes.addressof(opts), ctypes.byref(out))
    finally:
        graph._leave()
    return Compiled(out.value, graph, spec)


class Compiled(Owned):
    """A compiled graph (dqg_compiled). run() may be called from several
    threads at once; each call gets its own scratch space in the library.
    close() waits for runs in progress."""

    _destroy = _lib.dqg_compiled_destroy
    _what = "compiled graph"

    def __init__(self, handle, graph, spec):
        super().__init__(handle)
        # Only for dot(after_passes=False): the library does not need the
        # graph, and holding it would keep its constants alive.
        self._graph = weakref.ref(graph)
        self._spec = spec

    # -- running ----------------------------------------------------------------

    @property
    def inputs(self):
        """(name, dtype, shape) of each graph input."""
        return [(s.name, s.dtype, s.shape) for s in self._spec.inputs]

    @property
    def outputs(self):
        return [(s.name, s.dtype, s.shape) for s in self._spec.outputs]

    def run(self, inputs=None, **named):
        """Executes the graph on NumPy arrays, given by input name (a dict,
        keywords, or both); returns {output name: new array}. Inputs are
        read in place (no copy): each must have the tensor's shape and
        storage dtype (see dqgraph.dtypes) and be C-contiguous. The GIL is
        released during execution."""
        ins = bind_inputs(self._spec, inputs, named)
        outs = {s.name: dtypes.empty(s.dtype, s.shape) for s in self._spec.outputs}
        self._execute(ins, outs)
        return outs

    def run_into(self, inputs, outputs):
        """As run(), writing into preallocated arrays: `outputs` maps every
        output name to a writable C-contiguous array of the right shape and
        dtype. Returns `outputs`. For loops that reuse their buffers."""
        ins = bind_inputs(self._spec, inputs, {})
        outputs = _args.mapping("outputs", outputs, optional=False)
        for k in outputs:
            if k not in self._spec.output_names:
                raise errors.InvalidArgument(
                    "no graph output named %r; the outputs are %s" % (k, sorted(self._spec.output_names))
                )
        for s in self._spec.outputs:
            if s.name not in outputs:
                raise errors.InvalidArgument("output '%s' has no array" % s.name)
            check_array(s, "output", outputs[s.name], writable=True)
        self._execute(ins, outputs)
        return outputs

    def _execute(self, ins, outs):
        in_bufs = make_buffers(self._spec.inputs, ins)
        out_bufs = make_buffers(self._spec.outputs, outs)
        h = self._enter()
        try:
            _lib.dqg_execute(h, in_bufs, len(self._spec.inputs), out_bufs, len(self._spec.outputs))
        finally:
            self._leave()

    # -- introspection --------------------------------------------------------------

    def _query(self, func, *args):
        h = self._enter()
        try:
            return func(h, *args)
        finally:
            self._leave()

    def _strings(self, count, get):
        h = self._enter()
        try:
            return [get(h, i).decode() for i in range(count(h))]
        finally:
            self._leave()

    def explain(self):
        """The explain log: every fusion made and refused, with the reason."""
        return self._strings(_lib.dqg_compiled_explain_count, _lib.dqg_compiled_explain)

    def partitions(self):
        """One line per partition: its ops, kernel and data types."""
        return self._strings(_lib.dqg_compiled_partition_count, _lib.dqg_compiled_partition_info)

    @property
    def partition_count(self):
        return self._query(_lib.dqg_compiled_partition_count)

    @property
    def fused_count(self):
        """Partitions that fused a dequantize into a MatMul or Convolution."""
        return self._query(_lib.dqg_compiled_fused_count)

    @property
    def peak_memory(self):
        """Bytes of intermediate buffers one execution needs."""
        return self._query(_lib.dqg_compiled_peak_memory)

    @property
    def cache_hits(self):
        """Partitions of this compile that came from the cache."""
        return self._query(_lib.dqg_compiled_cache_hits)

    def dot(self, after_passes=True):
        """Graphviz DOT: the graph after the passes, one cluster per partition
        (after_passes=True), or the graph as built."""
        if not after_passes:
            graph = self._graph()
            if graph is None or not graph._h:
                raise errors.InvalidArgument(
                    "dot(after_passes=False): the graph this was compiled from is gone")
            return graph.dump("dot")
        return self._dump(1)

    def text(self):
        """The partitions, then the explain log, as text."""
        return self._dump(0)

    def _dump(self, fmt):
        h = self._enter()
        try:
            return _native.capture(lambda f: _lib.dqg_compiled_dump(h, fmt, f))
        finally:
            self._leave()

    def __repr__(self):
        if not self._h:
            return "<dqgraph.Compiled (closed)>"
        return "<dqgraph.Compiled: %d partitions, %d fused>" % (self.partition_count, self.fused_count)


# ---------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------


def cache_stats():
    """The cache's counters (dqg_cache_stats) as attributes: hits, misses,
    evictions, entries, capacity, bytes, compile_ms, plan_hits, plan_misses,
    plans, passes_ms, hash_ms, constant_transforms."""
    s = _native.zeroed(_native.CacheStats)  # room for fields a newer library appends
    _lib.dqg_cache_get_stats(ctypes.addressof(s))
    return types.SimpleNamespace(**{f: getattr(s, f) for f, _ in _native.CacheStats._fields_})


def cache_clear():
    """Drops every entry not in use and zeroes the counters."""
    _lib.dqg_cache_clear()


def cache_capacity():
    return _lib.dqg_cache_capacity()


def set_cache_capacity(capacity):
    """Entries kept per cache; 0 disables the cache and clears it."""
    _lib.dqg_cache_set_capacity(_args.integer("set_cache_capacity", capacity, *_args.UINT64))
