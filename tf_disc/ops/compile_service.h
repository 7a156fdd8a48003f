// The registered compiler callback and the library's own compile thread.
// Compiles never run on TF inter-op threads: the callback may call into
// Python, which could deadlock against a blocked inter-op pool.
#ifndef TF_DISC_OPS_COMPILE_SERVICE_H_
#define TF_DISC_OPS_COMPILE_SERVICE_H_

#include <functional>
#include <string>

#include "tf_disc/ops/compile_callback.h"

namespace tf_disc {

struct CompileReply {
  bool ok = false;
  std::string error;   // when !ok
  std::string path;    // when ok
  bool compiled = false;
  double seconds = 0;
  // Of seconds, the compiler's own passes (lowering, pipeline, codegen); the
  // rest is the system compiler and the disk cache.
  double codegen_seconds = 0;
};

void SetCompileCallback(DiscCompileCallback cb);
DiscCompileCallback GetCompileCallback();

// Calls `cb` with the request and parses its reply.  Runs on the compile
// thread.
CompileReply InvokeCompileCallback(DiscCompileCallback cb,
                                   const std::string& request_json,
                                   const std::string& fdef);

// Runs `task` on the compile thread (FIFO, one at a time).
void ScheduleOnCompileThread(std::function<void()> task);

}  // namespace tf_disc

#endif  // TF_DISC_OPS_COMPILE_SERVICE_H_
