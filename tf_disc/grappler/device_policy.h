// Which devices' nodes the optimizer clusters, and which ops it clusters on
// a GPU.  CPU-placed (or unplaced) nodes always; GPU-placed ones only behind
// the "device": "gpu" option (DiscLaunch then runs on DEVICE_GPU), and only
// ops the CUDA target compiles (GPU v1: elementwise, reductions, softmax,
// the ops of LayerNorm patterns, MatMul/BatchMatMul, transpose, reshape,
// slice, concat, broadcast and shape ops; convolutions, pooling, top-k,
// scatter, segment ops and gathers stay in TF).
#ifndef TF_DISC_GRAPPLER_DEVICE_POLICY_H_
#define TF_DISC_GRAPPLER_DEVICE_POLICY_H_

#include <string>

namespace tf_disc {

struct DevicePolicy {
  bool gpu = false;  // also cluster nodes placed on a GPU
};

enum class DeviceKind { kCpu, kGpu, kOther };

// The kind of a node's (possibly partial) device name; "" is kCpu (the
// optimizer runs on placed graphs; an unplaced node runs on the host).
DeviceKind KindOfDevice(const std::string& device);

// Whether `op` is compiled for GPUs (the allow-list above).
bool GpuAllowsOp(const std::string& op);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_DEVICE_POLICY_H_
