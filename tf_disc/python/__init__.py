"""blade_disc_tf: a dynamic-shape compiler for TensorFlow."""
import os as _os

# In a source checkout the compiler lives beside this package (tf_disc/compiler);
# an installed wheel copies it to blade_disc_tf/compiler.  Adding tf_disc/ to
# the package path makes `blade_disc_tf.compiler` resolve in both layouts.
_tree_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_tree_root, "compiler", "__init__.py")):
    __path__.append(_tree_root)  # type: ignore[name-defined]
