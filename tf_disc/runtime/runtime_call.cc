#include "tf_disc/runtime/runtime_call.h"

#include <algorithm>
#include <string>

#include "tensorflow/core/framework/allocator.h"
#include "tensorflow/core/framework/tensor_shape.h"

namespace tf_disc {

RuntimeCall::RuntimeCall(tensorflow::OpKernelContext* ctx, tensorflow::Allocator* temp_allocator,
                         size_t temp_alignment, int32_t device, void* stream)
    : ctx_(ctx),
      abi_{},
      temp_allocator_(temp_allocator),
      temp_alignment_(temp_alignment),
      allocated_(ctx->num_outputs(), false) {
  abi_.ctx = this;
  abi_.device = device;
  abi_.stream = stream;
  abi_.alloc_output = &RuntimeCall::AllocOutput;
  abi_.alloc_temp = &RuntimeCall::AllocTemp;
  abi_.free_temp = &RuntimeCall::FreeTemp;
  abi_.set_error = &RuntimeCall::SetError;
}

RuntimeCall::~RuntimeCall() {
  for (void* p : temps_) temp_allocator_->DeallocateRaw(p);
}

void RuntimeCall::RecordError(absl::Status status) {
  // The first error wins; later ones are usually consequences.
  if (has_error_) return;
  has_error_ = true;
  ctx_->SetStatus(status);
}

absl::Status RuntimeCall::Run(DiscEntryFn entry, const DiscBuffer* inputs, int32_t num_inputs) {
  int32_t rc = entry(&abi_, inputs, num_inputs);
  std::lock_guard<std::mutex> lock(mu_);
  if (rc != 0 && !has_error_) {
    RecordError(absl::InternalError("DiscLaunch: generated code returned " +
                                    std::to_string(rc) + " without reporting an error"));
  }
  if (!has_error_) {
    for (size_t i = 0; i < allocated_.size(); ++i) {
      if (!allocated_[i]) {
        RecordError(absl::InternalError("DiscLaunch: generated code did not allocate output " +
                                        std::to_string(i)));
        break;
      }
    }
  }
  return ctx_->status();
}

void* RuntimeCall::AllocOutput(void* self_ptr, int32_t index, int32_t rank,
                               const int64_t* dims) {
  RuntimeCall* self = Of(self_ptr);
  std::lock_guard<std::mutex> lock(self->mu_);
  if (self->has_error_) return nullptr;
  if (index < 0 || index >= static_cast<int32_t>(self->allocated_.size())) {
    self->RecordError(absl::InternalError("DiscLaunch: output index " + std::to_string(index) +
                                          " out of range"));
    return nullptr;
  }
  if (self->allocated_[index]) {
    self->RecordError(absl::InternalError("DiscLaunch: output " + std::to_string(index) +
                                          " allocated twice"));
    return nullptr;
  }
  if (rank < 0 || rank > DISC_MAX_RANK || (rank > 0 && dims == nullptr)) {
    self->RecordError(absl::InternalError("DiscLaunch: bad rank " + std::to_string(rank) +
                                          " for output " + std::to_string(index)));
    return nullptr;
  }
  tensorflow::TensorShape shape;
  for (int32_t i = 0; i < rank; ++i) {
    absl::Status s = shape.AddDimWithStatus(dims[i]);
    if (!s.ok()) {
      self->RecordError(absl::InternalError("DiscLaunch: bad shape for output " +
                                            std::to_string(index) + ": " +
                                            std::string(s.message())));
      return nullptr;
    }
  }
  // Memory as the executor placed the output (host memory for the outputs
  // a launch node lists in _output_hostmem).
  tensorflow::Tensor* out = nullptr;
  absl::Status s = self->ctx_->allocate_output(index, shape, &out);
  if (!s.ok()) {
    self->RecordError(s);
    return nullptr;
  }
  self->allocated_[index] = true;
  return out->data();
}

void* RuntimeCall::AllocTemp(void* self_ptr, size_t bytes) {
  RuntimeCall* self = Of(self_ptr);
  void* p = self->temp_allocator_->AllocateRaw(self->temp_alignment_, std::max<size_t>(bytes, 1));
  std::lock_guard<std::mutex> lock(self->mu_);
  if (p == nullptr) {
    self->RecordError(absl::ResourceExhaustedError("DiscLaunch: failed to allocate " +
                                                   std::to_string(bytes) +
                                                   " bytes of scratch memory"));
    return nullptr;
  }
  self->temps_.push_back(p);
  return p;
}

void RuntimeCall::FreeTemp(void* self_ptr, void* ptr) {
  if (ptr == nullptr) return;
  RuntimeCall* self = Of(self_ptr);
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    auto it = std::find(self->temps_.begin(), self->temps_.end(), ptr);
    if (it == self->temps_.end()) return;  // not ours: ignore, never crash
    *it = self->temps_.back();
    self->temps_.pop_back();
  }
  self->temp_allocator_->DeallocateRaw(ptr);
}

void RuntimeCall::SetError(void* self_ptr, int32_t code, const char* message) {
  RuntimeCall* self = Of(self_ptr);
  const char* text = message ? message : "unknown error";
  std::lock_guard<std::mutex> lock(self->mu_);
  if (code == DISC_ERROR_FALLBACK) {
    const bool any_output =
        std::find(self->allocated_.begin(), self->allocated_.end(), true) !=
        self->allocated_.end();
    if (!self->has_error_ && !any_output) {
      self->has_error_ = true;  // nothing more runs; the caller falls back
      self->fallback_reason_ = text;
      return;
    }
    self->RecordError(absl::InvalidArgumentError(text));
    return;
  }
  absl::StatusCode c = static_cast<absl::StatusCode>(code);
  if (code <= 0 || code > 16) c = absl::StatusCode::kInternal;
  self->RecordError(absl::Status(c, text));
}

}  // namespace tf_disc
