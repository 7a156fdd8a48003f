// DiscOptimizer: the Grappler pass that clusters supported ops into
// DiscLaunch nodes.
#ifndef TF_DISC_GRAPPLER_DISC_OPTIMIZER_H_
#define TF_DISC_GRAPPLER_DISC_OPTIMIZER_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tensorflow/core/grappler/optimizers/custom_graph_optimizer.h"

namespace tf_disc {

class DiscOptimizer : public tensorflow::grappler::CustomGraphOptimizer {
 public:
  // plugin: registered as the CPU plugin optimizer, which runs for every
  // graph and so acts only when options.enabled is set.  By-name instances
  // (rewrite_options.custom_optimizers) act whenever a table is set.
  explicit DiscOptimizer(bool plugin = false) : plugin_(plugin) {}

  std::string name() const override { return "DiscOptimizer"; }
  // True: we add functions, and Grappler restores a stripped library for
  // optimizers that say false, dropping our additions.
  bool UsesFunctionLibrary() const override { return true; }
  absl::Status Init(
      const tensorflow::RewriterConfig_CustomGraphOptimizer* config) override;
  absl::Status Optimize(tensorflow::grappler::Cluster* cluster,
                        const tensorflow::grappler::GrapplerItem& item,
                        tensorflow::GraphDef* optimized_graph) override;

 private:
  // Grappler runs an optimizer over the same item more than once (meta
  // optimizer iterations): per item id, what this instance last recorded, so
  // a graph is counted as seen once and its left ops replace, not add.
  bool FirstSight(const std::string& item_id);
  void RecordLeftOps(const std::string& item_id, const tensorflow::GraphDef& graph,
                     const std::vector<std::vector<int>>& clusters);

  bool plugin_;
  std::mutex mu_;
  std::map<std::string, std::map<std::string, int64_t>> left_by_item_;
  int min_cluster_size_ = -1;  // -1: use options.min_cluster_size
};

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_DISC_OPTIMIZER_H_
