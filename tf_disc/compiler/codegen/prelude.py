"""The prelude: C++ helpers shared by every generated translation unit (TF
semantics that need more than one expression, Eigen's vectorizable math,
the host's error reporting).  They live in real headers under
runtime/cpu/ (cpu/prelude/disc_prelude.h includes the rest), which each unit
includes first, through build/command.py's include_dir().

Integer ops that can fail set the kernel's `err` to one of the header's
DISC_KERNEL_ERR_* codes; the host reports it with its message here."""

# The header every unit includes, relative to include_dir().
PRELUDE_HEADER = "cpu/prelude/disc_prelude.h"
PRELUDE_INCLUDE = f'#include "{PRELUDE_HEADER}"'

# Kernel err code -> message (disc_prelude.h's DISC_KERNEL_ERR_* enum).
ERROR_MESSAGES = {
    1: "Integer division by zero",
    2: "Integers to negative integer powers are not allowed",
}
