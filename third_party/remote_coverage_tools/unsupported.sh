#!/bin/sh
echo "bazel coverage is not available offline (third_party/remote_coverage_tools)" >&2
exit 1
