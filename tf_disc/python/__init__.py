"""blade_disc_tf: a dynamic-shape compiler for TensorFlow.

    import blade_disc_tf as disc
    disc.enable()   # every tf.function and TF1 Session run afterwards is optimized
"""
import os as _os

# In a source checkout the compiler lives beside this package (tf_disc/compiler);
# an installed wheel copies it to blade_disc_tf/compiler.  Adding tf_disc/ to
# the package path makes `blade_disc_tf.compiler` resolve in both layouts.
_tree_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_tree_root, "compiler", "__init__.py")):
    __path__.append(_tree_root)  # type: ignore[name-defined]

from .api import (  # noqa: E402
    clear_executable_cache,
    disable,
    enable,
    is_enabled,
    load_ops,
    options,
    reset_stats,
    session_config,
    set_options,
    stats,
    wait_for_compiles,
)
from .config import Options  # noqa: E402
from .convert import convert_saved_model  # noqa: E402
from .explain import explain  # noqa: E402
from .kernel_policy import KernelPolicy, current_kernel_policy, kernel_policy  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "KernelPolicy", "Options", "clear_executable_cache", "current_kernel_policy", "disable",
    "enable", "explain", "is_enabled", "kernel_policy", "load_ops", "options", "reset_stats",
    "session_config", "set_options", "stats", "convert_saved_model", "wait_for_compiles",
]
