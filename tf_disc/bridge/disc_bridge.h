/* The C API that the Python package (blade_disc_tf) calls through ctypes on
 * the loaded op library.  It is the only coupling between the C++ layer and
 * the Python compiler; a process that never registers a compiler (e.g. TF
 * Serving) still loads and runs DiscLaunch, falling back to TF or using
 * executables it already has.
 *
 * All strings are UTF-8, NUL-terminated; JSON where noted.
 */
#ifndef TF_DISC_BRIDGE_DISC_BRIDGE_H_
#define TF_DISC_BRIDGE_DISC_BRIDGE_H_

#include <stdint.h>

#include "tf_disc/ops/compile_callback.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DiscCompileCallback: tf_disc/ops/compile_callback.h. */

/* Registers (or with NULL, removes) the compiler.  Removing waits for no
 * compile; in-flight ones finish with the callback they started with. */
void DiscSetCompileCallback(DiscCompileCallback cb);

/* Sets which TF ops the optimizer may cluster.  JSON:
 *   {"ops": {"<TF op name>": {
 *        "type_attrs": {"<attr>": [<DataType enum int>, ...]},
 *        "attr_values": {"<attr>": [<allowed string/int/bool values>]},
 *        "const_inputs": [<input index>, ...],
 *        "fast_math": <bool>}}}
 * type_attrs: every listed type (or list(type)) attr must take allowed types.
 * attr_values: every listed attr must take one of the values (absent = ok).
 * const_inputs: inputs whose *values* the compiler needs; when such an input
 * comes from outside the cluster its arg index goes in DiscLaunch's
 * const_args attr and its value becomes part of the cache key.
 * fast_math: fast_math="bf16" may change the op (it may lower to a dot or a
 * convolution); a cluster holding a float one gets DiscLaunch's
 * fast_math_changes attr true.
 * Returns 0, or -1 on malformed JSON (table unchanged). */
int32_t DiscSetSupportTable(const char* json);

/* Options, JSON, missing keys keep their value:
 *   {"enabled": bool            (plugin optimizer clusters; default false),
 *    "min_cluster_size": int    (default 2),
 *    "dump_dir": str            (optimizer writes graphs before/after; ""=off),
 *    "async_compile": bool      (run TF fallback while compiling; default
 *                               false here, Python's default pushes true),
 *    "self_guard": bool         (route calls to TF where it measures faster,
 *                               ops/self_guard.h; default DISC_SELF_GUARD, else true),
 *    "compile_timeout_s": float (default 600),
 *    "fast_math": "" | "bf16"  (float GEMMs and convolutions in bf16; default ""; cache keys
 *                               then end in "|fast_math=bf16"),
 *    "target_isa": "" | a tier (runtime/cpu/cpu_isa.h; generated code for at
 *                               most that tier; default "": the CPU's)}
 * Returns 0, or -1 on malformed JSON. */
int32_t DiscSetOptions(const char* json);

/* Writes stats JSON into buf (NUL-terminated, truncated) and returns the
 * full length needed (excluding NUL):
 *   {"clusters": {"<function>": {"runs": n, "compiles": n,
 *       "disk_cache_hits": n, "cache_hits": n, "fallbacks": n,
 *       "fallback_reasons": {"<reason>": n}, "compile_seconds": x,
 *       "compile_log": [{"key": "<key>", "compiled": b, "seconds": x,
 *                        "codegen_seconds": x, "calls_in_tf": n}, ...],
 *                       (the last 32 compiles)
 *       "self_guard": {...}, "keys": ["<key>", ...]}},
 *    "optimizer": {"graphs_seen": n, "clusters_created": n}} */
int64_t DiscGetStats(char* buf, int64_t cap);

/* Copies the FunctionDef of cluster `name`, exactly as DiscOptimizer built
 * it in this process (deterministic serialization, before Grappler optimizes
 * library functions further), into buf (truncated to cap) and returns its
 * full size, or -1 when this process built no such cluster.  The SavedModel
 * converter compiles these bodies ahead of time, as DiscLaunch would. */
int64_t DiscGetClusterFunction(const char* name, char* buf, int64_t cap);

/* Compiles started and not yet finished (disc.wait_for_compiles polls it). */
int64_t DiscCompilesInFlight(void);

/* Zeroes every counter (compiled executables stay cached). */
void DiscResetStats(void);

/* Drops every in-memory executable so that the next run asks the compiler
 * again (tests use it to prove the disk cache is used). */
void DiscClearExecutableCache(void);

/* The runtime kernels' policy (runtime/cpu/kernel_policy.h, which documents
 * each field), one int32 per field.  Choices: skinny_gemm 0 on, 1 off
 * (Eigen), 2 the wide tile for every m; conv_transpose_col2im, packed_gemm
 * and bf16_gemm 0 auto (by shape / CPU), 1 off, 2 on; the flags 0 or 1;
 * kernel_threads 0 (the intra-op pool) or 1.  blade_disc_tf.kernel_policy
 * sets it for a block. */
typedef struct DiscKernelPolicy {
  int32_t skinny_gemm;
  int32_t gemm_epilogue_fusion;
  int32_t direct_conv;
  int32_t conv_transpose_col2im;
  int32_t packed_gemm;
  int32_t prepack_weights;
  int32_t multi_gemm;
  int32_t bf16_gemm;
  int32_t kernel_threads;
} DiscKernelPolicy;

/* Replaces the policy for every later kernel call.  Returns 0, or -1 (policy
 * unchanged, the field logged) when a field is out of range. */
int32_t DiscSetKernelPolicy(const DiscKernelPolicy* policy);

/* Writes the policy in force into *policy. */
void DiscGetKernelPolicy(DiscKernelPolicy* policy);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* TF_DISC_BRIDGE_DISC_BRIDGE_H_ */
