"""MHLO-style IR: core data structures, text printer/parser, verifier."""
from .core import Func, Op, Region, Value, TensorType  # noqa: F401
from .printer import print_func  # noqa: F401
from .parser import parse_func  # noqa: F401
from .verifier import verify  # noqa: F401
