// The GPU side of the op library without a GPU: DiscOptimizer on a graph
// placed on "/device:GPU:0" (clusters only behind the "device": "gpu"
// option; the launch node on the GPU with _input_hostmem/_output_hostmem),
// and TF's own MemoryTypesForNode on that launch node (host memory exactly
// at those indices); the op library's CUDA backend on a host without a
// driver, and the architecture names of compute capabilities.  Linked
// against the op library (argv: none); test_gpu_op.py builds and runs it.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tensorflow/core/framework/graph.pb.h"
#include "tensorflow/core/framework/memory_types.h"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/grappler/grappler_item.h"
#include "tests/cpp_layer/expect.h"
#include "tf_disc/bridge/disc_bridge.h"
#include "tf_disc/grappler/disc_optimizer.h"
#include "tf_disc/runtime/cuda/gpu_runtime.h"

using check::Expect;
using tensorflow::DataType;
using tensorflow::GraphDef;
using tensorflow::NodeDef;

namespace {

constexpr char kGpu[] = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs, const std::string& device) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  n->set_device(device);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

void SetType(NodeDef* n, const std::string& attr, DataType t) {
  (*n->mutable_attr())[attr].set_type(t);
}

// x (float) and s (a shape of shape_type) fed in; out = Reshape(x + x, s)^2
// and its int32 shape `dims` fetched: one cluster of AddV2, Reshape, Mul,
// Shape.
GraphDef Graph(const std::string& device, DataType shape_type = tensorflow::DT_INT32) {
  GraphDef g;
  SetType(AddNode(&g, "x", "Placeholder", {}, device), "dtype", tensorflow::DT_FLOAT);
  SetType(AddNode(&g, "s", "Placeholder", {}, device), "dtype", shape_type);
  SetType(AddNode(&g, "a", "AddV2", {"x", "x"}, device), "T", tensorflow::DT_FLOAT);
  NodeDef* r = AddNode(&g, "r", "Reshape", {"a", "s"}, device);
  SetType(r, "T", tensorflow::DT_FLOAT);
  SetType(r, "Tshape", shape_type);
  SetType(AddNode(&g, "out", "Mul", {"r", "r"}, device), "T", tensorflow::DT_FLOAT);
  NodeDef* shape = AddNode(&g, "dims", "Shape", {"r"}, device);
  SetType(shape, "T", tensorflow::DT_FLOAT);
  SetType(shape, "out_type", tensorflow::DT_INT32);
  return g;
}

const char kTable[] = R"({"ops": {
  "AddV2": {"type_attrs": {"T": [1]}},
  "Mul": {"type_attrs": {"T": [1]}},
  "Conv2D": {"type_attrs": {"T": [1]}},
  "Reshape": {"type_attrs": {"T": [1], "Tshape": [3, 9]}, "value_inputs": [1]},
  "Shape": {"type_attrs": {"T": [1], "out_type": [3]}}}})";

// The graph after DiscOptimizer (the input when it changed nothing).
GraphDef Optimize(const GraphDef& graph, const std::string& id) {
  tensorflow::grappler::GrapplerItem item;
  item.id = id;
  item.graph = graph;
  item.fetch = {"out", "dims"};
  tf_disc::DiscOptimizer optimizer;
  GraphDef out;
  absl::Status s = optimizer.Optimize(nullptr, item, &out);
  if (!s.ok()) {
    std::printf("%s: %s\n", id.c_str(), std::string(s.message()).c_str());
    return graph;
  }
  return out;
}

std::vector<const NodeDef*> Launches(const GraphDef& g) {
  std::vector<const NodeDef*> out;
  for (const NodeDef& n : g.node()) {
    if (n.op() == "DiscLaunch") out.push_back(&n);
  }
  return out;
}

std::vector<int64_t> IntList(const NodeDef& n, const std::string& attr) {
  std::vector<int64_t> out;
  auto it = n.attr().find(attr);
  if (it == n.attr().end()) return out;
  for (int64_t i : it->second.list().i()) out.push_back(i);
  return out;
}

// Indices of `types` whose memory type is HOST_MEMORY.
std::vector<int64_t> HostIndices(const tensorflow::MemoryTypeVector& types) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == tensorflow::HOST_MEMORY) out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

std::string Text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (int64_t i : v) s += std::to_string(i) + " ";
  return s + "]";
}

void GpuOptionOff() {
  Expect(DiscSetOptions(R"({"device": "cpu", "min_cluster_size": 2})") == 0, "options");
  Expect(Launches(Optimize(Graph(kGpu), "gpu_off")).empty(), "no GPU cluster by default");
}

void CpuUnchanged() {
  GraphDef out = Optimize(Graph(kCpu), "cpu");
  std::vector<const NodeDef*> launches = Launches(out);
  Expect(launches.size() == 1, "one CPU cluster");
  if (launches.size() != 1) return;
  Expect(launches[0]->device() == kCpu, "CPU launch on the CPU");
  Expect(launches[0]->attr().count("_input_hostmem") == 0 &&
             launches[0]->attr().count("_output_hostmem") == 0,
         "no host-memory attrs on a CPU launch");
}

void GpuOptionOn() {
  Expect(DiscSetOptions(R"({"device": "gpu"})") == 0, "gpu option");
  GraphDef out = Optimize(Graph(kGpu), "gpu_on");
  std::vector<const NodeDef*> launches = Launches(out);
  Expect(launches.size() == 1, "one GPU cluster");
  if (launches.size() != 1) return;
  const NodeDef& launch = *launches[0];
  Expect(launch.device() == kGpu, "GPU launch on the GPU: " + launch.device());
  // Args: x (float) and s (int32, Reshape's value input); results: out
  // (float) and dims (int32), in the launch's order.
  std::vector<int> int32_args, int32_results;
  const auto& targs = launch.attr().at("Targs").list().type();
  const auto& tresults = launch.attr().at("Tresults").list().type();
  for (int i = 0; i < targs.size(); ++i) {
    if (targs[i] == tensorflow::DT_INT32) int32_args.push_back(i);
  }
  for (int i = 0; i < tresults.size(); ++i) {
    if (tresults[i] == tensorflow::DT_INT32) int32_results.push_back(i);
  }
  Expect(targs.size() == 2 && int32_args.size() == 1, "args x and s");
  Expect(int32_results.size() == 1, "one int32 result");
  if (int32_args.size() != 1 || int32_results.size() != 1) return;
  const std::vector<int64_t> in = IntList(launch, "_input_hostmem");
  const std::vector<int64_t> outs = IntList(launch, "_output_hostmem");
  Expect(in == std::vector<int64_t>{int32_args[0]}, "_input_hostmem " + Text(in));
  Expect(outs == std::vector<int64_t>{int32_results[0]}, "_output_hostmem " + Text(outs));

  tensorflow::MemoryTypeVector in_types, out_types;
  absl::Status s = tensorflow::MemoryTypesForNode(tensorflow::OpRegistry::Global(),
                                                  tensorflow::DeviceType(tensorflow::DEVICE_GPU),
                                                  launch, &in_types, &out_types);
  Expect(s.ok(), "MemoryTypesForNode: " + std::string(s.message()));
  Expect(HostIndices(in_types) == in, "host-memory inputs " + Text(HostIndices(in_types)));
  Expect(HostIndices(out_types) == outs, "host-memory outputs " + Text(HostIndices(out_types)));

  // An op of the support table outside the GPU allow-list stays in TF on a
  // GPU (and is clustered on the CPU).
  auto op_of = [](const GraphDef& g, const std::string& name) {
    for (const NodeDef& n : g.node()) {
      if (n.name() == name) return n.op();
    }
    return std::string();
  };
  auto out_op = [&op_of](const GraphDef& g) { return op_of(g, "out"); };
  GraphDef gpu_conv = Graph(kGpu), cpu_conv = Graph(kCpu);
  for (GraphDef* g : {&gpu_conv, &cpu_conv}) {
    for (NodeDef& n : *g->mutable_node()) {
      if (n.name() == "out") n.set_op("Conv2D");
    }
  }
  Expect(out_op(Optimize(gpu_conv, "gpu_conv")) == "Conv2D", "Conv2D stays in TF on a GPU");
  Expect(out_op(Optimize(cpu_conv, "cpu_conv")) != "Conv2D", "Conv2D clustered on the CPU");

  // An int64 shape input is read on the host, where a GPU keeps int32
  // tensors only: such a Reshape stays in TF on a GPU (clustered on the CPU).
  GraphDef gpu_int64 = Optimize(Graph(kGpu, tensorflow::DT_INT64), "gpu_int64");
  Expect(op_of(gpu_int64, "r") == "Reshape", "Reshape with an int64 shape stays in TF on a GPU");
  for (const NodeDef* l : Launches(gpu_int64)) {
    for (int64_t a : IntList(*l, "_input_hostmem")) {
      Expect(l->attr().at("Targs").list().type(a) == tensorflow::DT_INT32,
             "host-memory args are int32");
    }
  }
  Expect(op_of(Optimize(Graph(kCpu, tensorflow::DT_INT64), "cpu_int64"), "r") != "Reshape",
         "Reshape with an int64 shape clustered on the CPU");
}

// The backend made from TF's own driver handle: where the host has no
// libcuda.so.1, null with the error every GPU call falls back with.
void BackendWithoutDriver() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) return;  // a GPU host: nothing to check here
  std::string error;
  Expect(tf_disc::SharedCudaBackend(&error) == nullptr, "no backend without a driver");
  Expect(error.rfind("CUDA driver not found", 0) == 0, "driver-not-found error: " + error);
  error.clear();
  Expect(tf_disc::SharedCudaBackend(&error) == nullptr &&
             error.rfind("CUDA driver not found", 0) == 0,
         "the same error on every call: " + error);
}

void ArchNames() {
  Expect(tf_disc::CudaArchName(9, 0) == "sm_90", "sm_90");
  Expect(tf_disc::CudaArchName(8, 6) == "sm_86", "sm_86");
  Expect(tf_disc::CudaArchName(12, 0) == "sm_120", "sm_120");
}

}  // namespace

int main() {
  Expect(DiscSetSupportTable(kTable) == 0, "support table");
  GpuOptionOff();
  CpuUnchanged();
  GpuOptionOn();
  BackendWithoutDriver();
  ArchNames();
  if (check::Failures() == 0) std::printf("ok\n");
  return check::Failures() == 0 ? 0 : 1;
}
