#include "tf_disc/ops/compile_service.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "tf_disc/common/json.h"

namespace tf_disc {
namespace {

std::atomic<DiscCompileCallback> g_callback{nullptr};

// A single worker thread with a FIFO queue, started on first use and never
// joined (it sleeps on the condition variable when idle; process exit ends it).
class CompileThread {
 public:
  void Schedule(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Loop(); }).detach();
    }
    queue_.push_back(std::move(task));
    cv_.notify_one();
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool started_ = false;
};

CompileThread& GetCompileThread() {
  static CompileThread* t = new CompileThread;  // leaked: thread outlives statics
  return *t;
}

}  // namespace

void SetCompileCallback(DiscCompileCallback cb) { g_callback.store(cb); }

DiscCompileCallback GetCompileCallback() { return g_callback.load(); }

CompileReply InvokeCompileCallback(DiscCompileCallback cb,
                                   const std::string& request_json,
                                   const std::string& fdef) {
  CompileReply reply;
  std::vector<char> buf(64 * 1024, '\0');
  auto start = std::chrono::steady_clock::now();
  int32_t rc = cb(request_json.c_str(), fdef.data(),
                  static_cast<int64_t>(fdef.size()), buf.data(),
                  static_cast<int64_t>(buf.size()));
  double wall = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start).count();
  buf.back() = '\0';  // never trust the callee to terminate
  if (rc != 0) {
    reply.error = "compiler callback failed";
    return reply;
  }
  json::Value doc;
  std::string parse_error;
  if (!json::Parse(std::string(buf.data()), &doc, &parse_error) ||
      !doc.is_object()) {
    reply.error = "compiler reply is not valid JSON: " + parse_error;
    return reply;
  }
  const json::Value* ok = doc.Find("ok");
  if (ok == nullptr || !ok->is_bool() || !ok->as_bool()) {
    const json::Value* err = doc.Find("error");
    reply.error = (err && err->is_string()) ? err->as_string()
                                            : "compiler reported failure";
    return reply;
  }
  const json::Value* path = doc.Find("path");
  if (path == nullptr || !path->is_string()) {
    reply.error = "compiler reply lacks 'path'";
    return reply;
  }
  reply.ok = true;
  reply.path = path->as_string();
  const json::Value* compiled = doc.Find("compiled");
  reply.compiled = compiled == nullptr || !compiled->is_bool() ||
                   compiled->as_bool();
  const json::Value* seconds = doc.Find("seconds");
  reply.seconds = (seconds && seconds->is_number()) ? seconds->as_number() : wall;
  const json::Value* codegen = doc.Find("codegen_seconds");
  reply.codegen_seconds = (codegen && codegen->is_number()) ? codegen->as_number() : 0.0;
  return reply;
}

void ScheduleOnCompileThread(std::function<void()> task) {
  GetCompileThread().Schedule(std::move(task));
}

}  // namespace tf_disc
