// The checks' one assertion for the standalone C++ drivers of this folder:
// a failed expectation is printed and counted, the run goes on.
#ifndef TESTS_CPP_LAYER_EXPECT_H_
#define TESTS_CPP_LAYER_EXPECT_H_

#include <cstdio>
#include <string>

namespace check {

inline int& Failures() {
  static int failures = 0;
  return failures;
}

inline void Expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++Failures();
  }
}

}  // namespace check

#endif  // TESTS_CPP_LAYER_EXPECT_H_
