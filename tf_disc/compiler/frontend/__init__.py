"""FunctionDef -> graph model (graph.py) -> IR through the registry (lower.py)."""
from .graph import GraphModel, Node, parse_function_def  # noqa: F401
from .lower import lower_graph  # noqa: F401
