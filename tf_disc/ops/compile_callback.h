/* The compiler the op library calls (a C function pointer: the Python
 * package registers one through ctypes, tf_disc/bridge/disc_bridge.h). */
#ifndef TF_DISC_OPS_COMPILE_CALLBACK_H_
#define TF_DISC_OPS_COMPILE_CALLBACK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compiles one cluster for one symbolic signature.  Called on the op
 * library's own compile thread (never a TF inter-op thread), at most once at
 * a time per (function, key).
 *
 * request_json:
 *   {"function": "<cluster FunctionDef name>",
 *    "key": "<cache key string, as the kernel computed it>",
 *    "inputs": [{"dtype": <tensorflow DataType enum int>, "rank": <int>,
 *                "value": null | [<numbers>, ...]  (flattened, row-major;
 *                                   only for args listed in const_args)}],
 *    "fast_math": "" | "bf16"  (the option when the key was computed),
 *    "target_isa": "x86-64-v2" | "avx2" | "avx512" | "avx512_bf16"
 *                  (the tier to compile for: runtime/cpu/cpu_isa.h, lowered to
 *                   the target_isa option)}
 * fdef / fdef_len: the cluster's FunctionDef, serialized deterministically.
 * reply / reply_cap: the callee writes NUL-terminated JSON, truncated to fit:
 *   {"ok": true, "path": "/abs/path/lib.so", "compiled": <bool: the system
 *    compiler ran (false: disk-cache hit)>, "seconds": <float>}
 *   {"ok": false, "error": "<reason, one line>"}
 * Returns 0 when a reply was written, non-zero otherwise (treated as a
 * failure with reason "compiler callback failed"). */
typedef int32_t (*DiscCompileCallback)(const char* request_json,
                                       const char* fdef, int64_t fdef_len,
                                       char* reply, int64_t reply_cap);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TF_DISC_OPS_COMPILE_CALLBACK_H_
