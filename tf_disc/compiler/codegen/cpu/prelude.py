"""The prelude: C++ helpers shared by every generated translation unit (TF
semantics that need more than one expression, Eigen's vectorizable math,
the host's error reporting).  They live in real headers under
runtime/cpu/ (cpu/prelude/disc_prelude.h includes the rest), which each unit
includes first, through build/command.py's include_dir().  It includes the
target-neutral host helpers (runtime/host/disc_host.h), whose
disc_kernel_error reports a kernel's DISC_KERNEL_ERR_* code."""

# The header every unit includes, relative to include_dir().
PRELUDE_HEADER = "cpu/prelude/disc_prelude.h"
PRELUDE_INCLUDE = f'#include "{PRELUDE_HEADER}"'
