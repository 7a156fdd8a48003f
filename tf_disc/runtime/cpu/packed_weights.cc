#include "tf_disc/runtime/cpu/packed_weights.h"

#include <optional>
#include <utility>

#include "tf_disc/runtime/disc_abi.h"
#include "tf_disc/runtime/cpu/gemm_bf16.h"
#include "tf_disc/runtime/cpu/gemm_packed.h"
#include "tf_disc/runtime/cpu/kernel_dispatch.h"

namespace tf_disc {

// A packed B and the buffer it was packed from, held so that the buffer
// stays unchanged and allocated while the copy lives.
struct PackedWeights::Pack {
  Pack(const tensorflow::Tensor& input, const Layout& layout, PackGauge gauge)
      : held(input), layout(layout), gauge(gauge) {}
  ~Pack() {
    if (gauge != nullptr && bytes > 0) gauge(layout.kind, 0, -bytes);
  }
  const tensorflow::Tensor held;
  const Layout layout;
  const PackGauge gauge;
  std::unique_ptr<Bf16PackedB> bf16;  // one of the two
  std::unique_ptr<Fp32PackedB> fp32;
  int64_t bytes = 0;
};

namespace {

using Pack = PackedWeights::Pack;
using Layout = PackedWeights::Layout;

// Byte offset of g's B in `input`, or -1 when B is not wholly inside it.
int64_t OffsetIn(const tensorflow::Tensor& input, const GemmArgs& g) {
  if (input.dtype() != tensorflow::DT_FLOAT || input.NumElements() == 0) return -1;
  const char* data = input.tensor_data().data();
  const char* b = static_cast<const char*>(g.b);
  const int64_t size = static_cast<int64_t>(input.tensor_data().size());
  if (b < data || b >= data + size || (b - data) % sizeof(float) != 0) return -1;
  if (g.ldb < 0 || g.stride_b < 0) return -1;
  const int64_t entries = g.stride_b == 0 ? 1 : g.batch;
  const int64_t rows = g.trans_b ? g.n : g.k, cols = g.trans_b ? g.k : g.n;
  const int64_t last = (entries - 1) * g.stride_b + (rows - 1) * g.ldb + cols;  // elements
  const int64_t offset = b - data;
  return offset + last * static_cast<int64_t>(sizeof(float)) <= size ? offset : -1;
}

bool SameBuffer(const tensorflow::Tensor& a, const tensorflow::Tensor& b) {
  return a.tensor_data().data() == b.tensor_data().data() &&
         a.tensor_data().size() == b.tensor_data().size();
}

// Which packed B g's kernel reads, if any: RunGemm runs the bf16 kernel for
// fast-math GEMMs it applies to, the fp32 route otherwise.
std::optional<PackKind> KindFor(const GemmArgs& g) {
  if ((g.dtype & DISC_GEMM_FAST_BF16) != 0 && Kernels().bf16_gemm_applies(g)) {
    return PackKind::kBf16;
  }
  GemmArgs plain = g;
  plain.dtype &= ~DISC_GEMM_FAST_BF16;
  if (Kernels().prepacked_fp32_applies(plain)) return PackKind::kFp32;
  return std::nullopt;
}

// Packs made by any kernel, by buffer: a second kernel reading the same
// weight in the same layout takes the first one's copy.
struct SharedPacks {
  std::mutex mu;
  std::vector<std::weak_ptr<const Pack>> packs;  // expired ones pruned on insert
};

SharedPacks& Shared() {
  static auto* shared = new SharedPacks;  // never destroyed: kernels may outlive statics
  return *shared;
}

std::shared_ptr<const Pack> FindShared(const Layout& layout, const tensorflow::Tensor& input) {
  SharedPacks& s = Shared();
  std::lock_guard<std::mutex> lock(s.mu);
  for (const auto& weak : s.packs) {
    std::shared_ptr<const Pack> p = weak.lock();
    if (p != nullptr && p->layout == layout && SameBuffer(p->held, input)) return p;
  }
  return nullptr;
}

// `made`, registered, or the equal pack another kernel registered meanwhile.
std::shared_ptr<const Pack> Publish(std::shared_ptr<const Pack> made) {
  SharedPacks& s = Shared();
  std::lock_guard<std::mutex> lock(s.mu);
  size_t live = 0;
  for (const auto& weak : s.packs) {
    std::shared_ptr<const Pack> p = weak.lock();
    if (p == nullptr) continue;
    if (p->layout == made->layout && SameBuffer(p->held, made->held)) return p;
    s.packs[live++] = weak;
  }
  s.packs.resize(live);
  s.packs.push_back(made);
  return made;
}

// Packs g's B from `input` (outside any lock: packing runs on the pool,
// whose threads may be running other calls of this kernel).
std::shared_ptr<const Pack> MakePack(const tensorflow::Tensor& input, const Layout& layout,
                                     const GemmArgs& g, int num_threads,
                                     const GemmParallelFor& parallel_for, PackGauge gauge) {
  auto pack = std::make_shared<Pack>(input, layout, gauge);
  if (layout.kind == PackKind::kBf16) {
    pack->bf16 = Kernels().pack_bf16_b(g, num_threads, parallel_for);
    if (pack->bf16 == nullptr) return nullptr;
    pack->bytes = static_cast<int64_t>(pack->bf16->bytes);
  } else {
    pack->fp32 = Kernels().pack_fp32_b(g, num_threads, parallel_for);
    if (pack->fp32 == nullptr) return nullptr;
    pack->bytes = static_cast<int64_t>(pack->fp32->bytes);
  }
  if (gauge != nullptr) gauge(layout.kind, 1, pack->bytes);
  return pack;
}

}  // namespace

bool PackedWeights::Layout::operator==(const Layout& o) const {
  return kind == o.kind && offset == o.offset && trans_b == o.trans_b && n == o.n && k == o.k &&
         ldb == o.ldb && stride_b == o.stride_b && entries == o.entries;
}

std::shared_ptr<const Pack> PackedWeights::Attach(int index, const tensorflow::Tensor& input,
                                                  GemmArgs* g, int num_threads,
                                                  const GemmParallelFor& parallel_for) {
  const std::optional<PackKind> kind = KindFor(*g);
  if (!kind) return nullptr;
  const int64_t offset = OffsetIn(input, *g);
  if (offset < 0) return nullptr;
  const Layout layout{*kind, offset, g->trans_b, g->n, g->k, g->ldb, g->stride_b,
                      g->stride_b == 0 ? 1 : g->batch};
  std::shared_ptr<const Pack> pack;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (e.index == index && e.layout == layout && SameBuffer(e.pack->held, input)) {
        pack = e.pack;
        break;
      }
    }
  }
  if (pack == nullptr) {
    pack = FindShared(layout, input);
    if (pack == nullptr) {
      pack = MakePack(input, layout, *g, num_threads, parallel_for, gauge_);
      if (pack == nullptr) return nullptr;
      pack = Publish(std::move(pack));
    }
    std::lock_guard<std::mutex> lock(mu_);
    bool kept = false;
    for (Entry& e : entries_) {
      if (e.index == index && e.layout == layout) {  // the input moved on: replace
        e.pack = pack;
        kept = true;
        break;
      }
    }
    if (!kept && entries_.size() < kMaxEntries) entries_.push_back(Entry{index, layout, pack});
  }
  if (pack->bf16 != nullptr) {
    g->packed_b = pack->bf16.get();
  } else {
    g->packed_b32 = pack->fp32.get();
  }
  return pack;
}

std::shared_ptr<const Pack> StableInputs::Attach(GemmArgs* g, int num_threads,
                                                 const GemmParallelFor& parallel_for) const {
  if (weights == nullptr || g->b == nullptr) return nullptr;
  for (const auto& [index, tensor] : inputs) {
    if (OffsetIn(*tensor, *g) >= 0) {
      return weights->Attach(index, *tensor, g, num_threads, parallel_for);
    }
  }
  return nullptr;
}

}  // namespace tf_disc
