// A minimal model server, as TF Serving loads models: loads the op library
// (TF_LoadLibrary), then tensorflow::LoadSavedModel, and runs one signature
// on float32 inputs read from raw files, writing each output as raw float32.
//
// usage: serve_main OP_LIBRARY MODEL_DIR SIGNATURE IO_DIR COUNT
//   reads  IO_DIR/in<k>_<input>.{bin,shape}   for k in [0, COUNT)
//   writes IO_DIR/got<k>_<output>.{bin,shape}, then prints the op library's
//   stats JSON (DiscGetStats) on the last line of stdout.
#include <dlfcn.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tensorflow/c/c_api.h"
#include "tensorflow/cc/saved_model/loader.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/public/session.h"

namespace {

bool ReadTensor(const std::string& stem, tensorflow::Tensor* out) {
  std::ifstream shape_file(stem + ".shape");
  if (!shape_file) return false;
  tensorflow::TensorShape shape;
  int64_t d;
  while (shape_file >> d) shape.AddDim(d);
  *out = tensorflow::Tensor(tensorflow::DT_FLOAT, shape);
  std::ifstream bin(stem + ".bin", std::ios::binary);
  auto data = out->tensor_data();
  bin.read(const_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return static_cast<size_t>(bin.gcount()) == data.size();
}

void WriteTensor(const std::string& stem, const tensorflow::Tensor& t) {
  std::ofstream shape_file(stem + ".shape");
  for (int i = 0; i < t.dims(); ++i) shape_file << (i ? " " : "") << t.dim_size(i);
  std::ofstream bin(stem + ".bin", std::ios::binary);
  auto data = t.tensor_data();
  bin.write(data.data(), static_cast<std::streamsize>(data.size()));
}

int Fail(const std::string& what) {
  std::cerr << "serve_main: " << what << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return Fail("usage: OP_LIBRARY MODEL_DIR SIGNATURE IO_DIR COUNT");
  const std::string io_dir = argv[4];
  const int count = std::stoi(argv[5]);

  TF_Status* status = TF_NewStatus();
  TF_LoadLibrary(argv[1], status);
  if (TF_GetCode(status) != TF_OK) return Fail(TF_Message(status));
  TF_DeleteStatus(status);

  tensorflow::SavedModelBundle bundle;
  absl::Status s = tensorflow::LoadSavedModel(
      tensorflow::SessionOptions(), tensorflow::RunOptions(), argv[2],
      {"serve"}, &bundle);
  if (!s.ok()) return Fail("LoadSavedModel: " + std::string(s.message()));
  auto sig_it = bundle.GetSignatures().find(argv[3]);
  if (sig_it == bundle.GetSignatures().end()) return Fail("no such signature");
  const tensorflow::SignatureDef& sig = sig_it->second;

  std::vector<std::string> out_keys, out_names;
  for (const auto& kv : sig.outputs()) {
    out_keys.push_back(kv.first);
    out_names.push_back(kv.second.name());
  }
  for (int k = 0; k < count; ++k) {
    std::vector<std::pair<std::string, tensorflow::Tensor>> feeds;
    for (const auto& kv : sig.inputs()) {
      tensorflow::Tensor t;
      std::string stem = io_dir + "/in" + std::to_string(k) + "_" + kv.first;
      if (!ReadTensor(stem, &t)) return Fail("cannot read " + stem);
      feeds.emplace_back(kv.second.name(), std::move(t));
    }
    std::vector<tensorflow::Tensor> outputs;
    s = bundle.GetSession()->Run(feeds, out_names, {}, &outputs);
    if (!s.ok()) return Fail("Run: " + std::string(s.message()));
    for (size_t i = 0; i < outputs.size(); ++i) {
      WriteTensor(io_dir + "/got" + std::to_string(k) + "_" + out_keys[i], outputs[i]);
    }
  }
  std::cout << "served " << count << " request(s)" << std::endl;
  // The library is already loaded: RTLD_NOLOAD just returns its handle.
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  auto get_stats = handle ? reinterpret_cast<int64_t (*)(char*, int64_t)>(
                                dlsym(handle, "DiscGetStats"))
                          : nullptr;
  if (get_stats == nullptr) return Fail("DiscGetStats not found");
  std::string stats(get_stats(nullptr, 0) + 1, '\0');
  get_stats(&stats[0], static_cast<int64_t>(stats.size()));
  std::cout << stats.c_str() << std::endl;
  return 0;
}
