"""Symbolic shapes: see symbolic.py."""
from .symbolic import ShapeEnv, parse_dim, split_dims, is_static, static_value  # noqa: F401
