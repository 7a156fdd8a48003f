"""A toy compile callback for testing the C++ layer without the real compiler.

It turns a cluster FunctionDef of same-shape elementwise float ops (AddV2,
Mul, Sub, Neg, Exp, Tanh, Sigmoid) into a C file with disc_entry, builds it with gcc and replies with
its path.  Knobs on the ToyCompiler object make it fail, sleep or count.
"""
import ctypes
import hashlib
import json
import os
import subprocess
import tempfile
import threading
import time

from tensorflow.core.framework import function_pb2

CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_char), ctypes.c_int64,
                            ctypes.POINTER(ctypes.c_char), ctypes.c_int64)

_BINARY = {"AddV2": "+", "Mul": "*", "Sub": "-"}
_UNARY = {"Neg": "(-%s)", "Exp": "expf(%s)", "Tanh": "tanhf(%s)",
          "Sigmoid": "(1.0f / (1.0f + expf(-%s)))"}


def _generate(fdef):
    """C source for a FunctionDef of elementwise float ops (same shapes)."""
    args = [a.name for a in fdef.signature.input_arg]
    expr = {a: "in%d[i]" % k for k, a in enumerate(args)}
    nodes = {n.name: n for n in fdef.node_def}
    done = set()

    def ref(name):
        base = name.split(":")[0]
        if base in expr:
            return expr[base]
        node = nodes[base]
        operands = [ref(i) for i in node.input if not i.startswith("^")]
        if node.op in _UNARY:
            expr[base] = _UNARY[node.op] % operands[0]
        elif node.op in _BINARY:
            expr[base] = "(%s %s %s)" % (operands[0], _BINARY[node.op], operands[1])
        else:
            raise ValueError("toy compiler: unsupported op " + node.op)
        return expr[base]

    outs = []
    for out in fdef.signature.output_arg:
        outs.append(ref(fdef.ret[out.name]))
    lines = ["#include <math.h>", "#include <stdint.h>", "#include <stddef.h>",
             '#include "tf_disc/runtime/disc_abi.h"',
             "int32_t disc_abi_version(void) { return DISC_ABI_VERSION; }",
             "int32_t disc_device(void) { return DISC_DEVICE_CPU; }",
             "typedef struct { const float* in[%d]; float* out[%d]; } Closure;"
             % (max(1, len(args)), max(1, len(outs))),
             "static void body(void* c_, int64_t begin, int64_t end) {",
             "  Closure* c = (Closure*)c_;"]
    for k in range(len(args)):
        lines.append("  const float* in%d = c->in[%d];" % (k, k))
    lines.append("  for (int64_t i = begin; i < end; ++i) {")
    for k, e in enumerate(outs):
        lines.append("    c->out[%d][i] = %s;" % (k, e))
    lines += ["  }", "}",
              "int32_t disc_entry(const DiscRuntime* rt, const DiscBuffer* in, int32_t n) {",
              "  if (n != %d) { rt->set_error(rt->ctx, DISC_ERROR_INTERNAL, \"arity\"); return 1; }" % len(args),
              "  int64_t count = 1;",
              "  for (int d = 0; d < in[0].rank; ++d) count *= in[0].dims[d];",
              "  for (int k = 1; k < n; ++k) {",
              "    int same = in[k].rank == in[0].rank;",
              "    for (int d = 0; same && d < in[0].rank; ++d) same = in[k].dims[d] == in[0].dims[d];",
              "    if (!same) { rt->set_error(rt->ctx, DISC_ERROR_INVALID_ARGUMENT, \"toy: shapes differ\"); return 1; }",
              "  }",
              "  Closure c;"]
    for k in range(len(args)):
        lines.append("  c.in[%d] = (const float*)in[%d].data;" % (k, k))
    for k in range(len(outs)):
        lines.append("  c.out[%d] = (float*)rt->alloc_output(rt->ctx, %d, in[0].rank, in[0].dims);" % (k, k))
        lines.append("  if (!c.out[%d] && count) return 1;" % k)
    lines += ["  rt->parallel_for(rt->ctx, count, 10, body, &c);", "  return 0;", "}"]
    return "\n".join(lines) + "\n"


class ToyCompiler:
    def __init__(self, repo_root):
        self.repo_root = repo_root
        self.workdir = tempfile.mkdtemp(prefix="toy_disc_")
        self.fail = False        # reply ok=false
        self.sleep_s = 0.0       # delay before replying
        self.requests = []       # parsed request JSON, in call order
        self.lock = threading.Lock()
        self.disk_cache = {}     # source hash -> path
        self.callback = CALLBACK(self._callback)

    def _callback(self, request, fdef_ptr, fdef_len, reply, cap):
        try:
            req = json.loads(request.decode())
            with self.lock:
                self.requests.append(req)
            fdef = function_pb2.FunctionDef.FromString(
                ctypes.string_at(fdef_ptr, fdef_len))
            if self.sleep_s:
                time.sleep(self.sleep_s)
            if self.fail:
                out = {"ok": False, "error": "toy says no"}
            else:
                out = self._compile(fdef)
        except Exception as e:  # report, never raise into C
            out = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        data = json.dumps(out).encode()[: cap - 1]
        ctypes.memmove(reply, data + b"\0", len(data) + 1)
        return 0

    def _compile(self, fdef):
        start = time.time()
        src = _generate(fdef)
        digest = hashlib.sha256(src.encode()).hexdigest()[:16]
        if digest in self.disk_cache:
            return {"ok": True, "path": self.disk_cache[digest],
                    "compiled": False, "seconds": time.time() - start}
        c_path = os.path.join(self.workdir, digest + ".c")
        so_path = os.path.join(self.workdir, digest + ".so")
        with open(c_path, "w") as f:
            f.write(src)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-I", self.repo_root,
                        c_path, "-o", so_path + ".tmp", "-lm"], check=True)
        os.replace(so_path + ".tmp", so_path)
        self.disk_cache[digest] = so_path
        return {"ok": True, "path": so_path, "compiled": True,
                "seconds": time.time() - start}
