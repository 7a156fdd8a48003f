// Process-wide registry of the cluster FunctionDefs exactly as DiscOptimizer
// built them.  Grappler later optimizes every library function, ours too
// (remapper, arithmetic rewrites), so the runtime library may hold a changed
// body; the compiler must see the ops the support table admitted.  Names are
// content hashes, so one name always means one body.
#ifndef TF_DISC_OPS_CLUSTER_FUNCTIONS_H_
#define TF_DISC_OPS_CLUSTER_FUNCTIONS_H_

#include <string>

namespace tf_disc {

// Stores the deterministic serialization of a cluster function.
void RegisterClusterFunction(const std::string& name, std::string serialized);

// Copies the registered serialization into *serialized; false if unknown
// (e.g. a graph optimized in another process, as in a SavedModel).
bool LookupClusterFunction(const std::string& name, std::string* serialized);

}  // namespace tf_disc

#endif  // TF_DISC_OPS_CLUSTER_FUNCTIONS_H_
