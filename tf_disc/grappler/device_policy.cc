#include "tf_disc/grappler/device_policy.h"

#include <unordered_set>

#include "tensorflow/core/util/device_name_utils.h"

namespace tf_disc {

DeviceKind KindOfDevice(const std::string& device) {
  if (device.empty()) return DeviceKind::kCpu;
  tensorflow::DeviceNameUtils::ParsedName parsed;
  if (!tensorflow::DeviceNameUtils::ParseFullName(device, &parsed)) return DeviceKind::kOther;
  if (!parsed.has_type || parsed.type == "CPU") return DeviceKind::kCpu;
  if (parsed.type == "GPU") return DeviceKind::kGpu;
  return DeviceKind::kOther;
}

bool GpuAllowsOp(const std::string& op) {
  static const auto* allowed = new std::unordered_set<std::string>{
      // Elementwise, unary.
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Cos", "Cosh",
      "Elu", "Erf", "Erfc", "Exp", "Expm1", "Floor", "Identity", "Inv", "IsFinite", "IsInf",
      "IsNan", "LeakyRelu", "Log", "Log1p", "LogicalNot", "Neg", "Reciprocal", "Relu", "Relu6",
      "Rint", "Round", "Rsqrt", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Snapshot",
      "Softplus", "Softsign", "Sqrt", "Square", "StopGradient", "Tan", "Tanh",
      // Elementwise, binary and n-ary (with broadcasting).
      "Add", "AddN", "AddV2", "Atan2", "BiasAdd", "Div", "DivNoNan", "Equal", "FloorDiv",
      "FloorMod", "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr",
      "Maximum", "Minimum", "Mod", "Mul", "NotEqual", "Pow", "RealDiv", "Select", "SelectV2",
      "SquaredDifference", "Sub", "TruncateDiv",
      // Gradients of elementwise ops.
      "ReluGrad", "Relu6Grad", "RsqrtGrad", "SigmoidGrad", "SqrtGrad", "TanhGrad",
      // Reductions, softmax (LayerNorm patterns are reductions and elementwise ops).
      "All", "Any", "ArgMax", "ArgMin", "BiasAddGrad", "LogSoftmax", "Max", "Mean", "Min",
      "Prod", "Softmax", "Sum",
      // GEMMs (cuBLASLt).
      "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "MatMul",
      // Data movement and broadcasting.
      "BroadcastTo", "Concat", "ConcatV2", "ExpandDims", "Fill", "OnesLike", "Pack", "Reshape",
      "Slice", "Split", "SplitV", "Squeeze", "StridedSlice", "Transpose", "Unpack", "ZerosLike",
      // Shape ops (host-side int32 values).
      "BroadcastArgs", "BroadcastGradientArgs", "Const", "Range", "Rank", "Shape", "ShapeN",
      "Size",
  };
  return allowed->count(op) > 0;
}

}  // namespace tf_disc
