/* The C API behind disc.explain(): runs the optimizer's own clustering
 * decision (grappler/analysis.h) on a GraphDef without rewriting it, and
 * reports per node whether it was clustered and, if not, why.  Beside
 * tf_disc/bridge/disc_bridge.h; same string/JSON conventions. */
#ifndef TF_DISC_GRAPPLER_EXPLAIN_BRIDGE_H_
#define TF_DISC_GRAPPLER_EXPLAIN_BRIDGE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* graphdef / graphdef_len: a serialized tensorflow.GraphDef.
 * options_json: {"min_cluster_size": int (default: the current option),
 *                "fed": ["<node name>", ...] (nodes fed by the caller),
 *                "device": "cpu" | "gpu" (default: the current option)}
 * Writes NUL-terminated JSON into buf (truncated to cap) and returns the
 * full length needed (excluding NUL):
 *   {"nodes": [{"name": str, "op": str, "device": str,
 *               "cluster": <index into clusters, or -1>,
 *               "reason": "<kind>: <detail>" | ""}],
 *    "clusters": [["<node name>", ...], ...],
 *    "min_cluster_size": int}
 * or {"error": "<why>"} (no support table set, unparsable GraphDef, graph
 * not analyzable). */
int64_t DiscExplainGraph(const char* graphdef, int64_t graphdef_len,
                         const char* options_json, char* buf, int64_t cap);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* TF_DISC_GRAPPLER_EXPLAIN_BRIDGE_H_ */
