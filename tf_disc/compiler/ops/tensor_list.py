"""TensorList ops as dense buffers: a list of n elements of shape E is the
tensor [n, *E] of its element dtype (what XLA does with a known element
shape).  A list is a DT_VARIANT in TF, so the optimizer clusters these ops
only together with every producer and consumer of the list (a variant never
crosses the cluster's boundary).

A TensorListReserve whose element shape has unknown dims (Keras: the batch)
is a PendingList until the first op that fixes them: a SetItem (the item's
shape) or a While whose body writes it (ops/control_flow.py).  Elements
never written read as zeros, as in TF."""
from __future__ import annotations

import dataclasses

from .. import dtypes
from ..dtypes import ALL
from ..errors import ShapeError, Unsupported
from ..ir.core import Op, TensorType
from .hostvals import host_dims, make_host
from .rule import OpRule

UNKNOWN = "?"  # an element dim no op has fixed yet


@dataclasses.dataclass(eq=False)
class PendingList:
    """A reserved list whose element dims are not all known: n elements of
    `elem` (UNKNOWN where not fixed; None: not even the rank)."""
    node: str
    dtype: dtypes.DType
    n: str
    elem: tuple[str, ...] | None

    @property
    def type(self) -> TensorType:
        if self.elem is None:
            raise Unsupported(f"node '{self.node}' (TensorListReserve): element rank unknown")
        return TensorType(self.dtype, (self.n,) + self.elem)

    @property
    def shape(self) -> tuple[str, ...]:
        return self.type.shape


def zeros(b, dtype, shape: tuple[str, ...]):
    return b.broadcast_to(b.constant(0, dtype), tuple(shape))


def materialize(b, v, elem: tuple[str, ...] | None = None):
    """v as a dense value: a PendingList becomes zeros with its unknown dims
    taken from elem (None: they must be known already)."""
    if not isinstance(v, PendingList):
        return v
    if v.elem is None and elem is not None:
        v = dataclasses.replace(v, elem=(UNKNOWN,) * len(elem))
    dims = list(v.type.shape[1:])
    for j, d in enumerate(dims):
        if d == UNKNOWN:
            if elem is None or elem[j] == UNKNOWN:
                raise Unsupported(f"node '{v.node}' (TensorListReserve): the element shape "
                                  "is only known at run time")
            dims[j] = elem[j]
    return zeros(b, v.dtype, (v.n,) + tuple(dims))


def _element_shape(b, v, node) -> tuple[str, ...] | None:
    """A list's element_shape input: dims (UNKNOWN for -1), or None for an
    unknown rank."""
    dims = host_dims(b, v)
    if dims is None:
        raise Unsupported(f"node '{node.name}' ({node.op}): element_shape must be a constant")
    if v.type.rank == 0:
        if dims != ["-1"]:
            raise ShapeError(f"node '{node.name}' ({node.op}): bad element_shape {dims}")
        return None
    return tuple(UNKNOWN if d == "-1" else d for d in dims)


def _num(b, v, node, what: str) -> str:
    dims = host_dims(b, v)
    if dims is None or len(dims) != 1:
        raise Unsupported(f"node '{node.name}' ({node.op}): {what} is not computable")
    return dims[0]


def lower_reserve(b, node, xs):
    shape, num = xs
    elem = _element_shape(b, shape, node)
    n = _num(b, num, node, "num_elements")
    dt = dtypes.from_tf(node.attrs["element_dtype"])
    pending = PendingList(node.name, dt, n, elem)
    if elem is None or UNKNOWN in elem:
        return [pending]
    return [materialize(b, pending)]


def lower_empty(b, node, xs):
    """EmptyTensorList (while_v2's gradient accumulators): a reserved list of
    no elements.  max_num_elements is not enforced: a push beyond it, an
    error in TF, succeeds here (the accumulators never exceed theirs)."""
    elem = _element_shape(b, xs[0], node)
    pending = PendingList(node.name, dtypes.from_tf(node.attrs["element_dtype"]), "0", elem)
    if elem is None or UNKNOWN in elem:
        return [pending]
    return [materialize(b, pending)]


def lower_from_tensor(b, node, xs):
    tensor, shape = xs
    if tensor.type.rank < 1:
        raise ShapeError(f"node '{node.name}' (TensorListFromTensor): the tensor must be "
                         "at least a vector")
    return [tensor]


def lower_stack(b, node, xs):
    lst = materialize(b, xs[0])
    if lst in b.unset_lists:  # the loop fails when it sets no row (runtime/.../disc_loop.h)
        loop, which = b.unset_lists[lst]
        loop.attrs["unset_list"] = which
    n = node.attrs.get("num_elements", -1)
    if n not in (-1, None) and not b.env.known_equal(lst.shape[0], str(n)):
        b.ops.append(Op("assert_dim_eq", [], [], {
            "node": node.name, "op": node.op, "lhs": [lst.shape[0]], "rhs": [str(n)],
            "msg": "Operation expected a list with {1} elements but got a list with {0} "
                   "elements."}))
    return [lst]


def lower_get_item(b, node, xs):
    lst, index = materialize(b, xs[0]), xs[1]
    if index.type.rank != 0:
        raise ShapeError(f"node '{node.name}' (TensorListGetItem): index must be a scalar")
    return [b.emit("gather", [lst, index], lst.dtype, lst.shape[1:], axis=0)]


def _with_item(b, node, lst, item, msg: str):
    """lst (materialized with item's dims where pending), its element shape
    checked against item's (TF's message `msg`)."""
    lst = materialize(b, lst, item.shape)
    if lst.type.rank != item.type.rank + 1:
        raise ShapeError(f"node '{node.name}' ({node.op}): item rank {item.type.rank} for a "
                         f"list of rank {lst.type.rank - 1} elements")
    for j in range(item.type.rank):
        b.assert_dim_eq(item, j, lst, j + 1, node.name, node.op, msg, show_shapes=True)
    return lst


def lower_set_item(b, node, xs):
    lst, index, item = xs
    if node.attrs.get("resize_if_index_out_of_bounds"):
        raise Unsupported(f"node '{node.name}' (TensorListSetItem): resize_if_index_out_of_bounds")
    if index.type.rank != 0:
        raise ShapeError(f"node '{node.name}' (TensorListSetItem): index must be a scalar")
    lst = _with_item(b, node, lst, item, "Tried to set a tensor with incompatible shape at a "
                     "list index. Item element shape: {0} list shape: {1}")
    return [b.emit("list_set", [lst, index, b.reshape_to(item, lst.shape[1:])], lst.dtype,
                   lst.shape)]


def _is_empty(lst) -> bool:
    n = lst.n if isinstance(lst, PendingList) else lst.shape[0]
    return n == "0"


def lower_push_back(b, node, xs):
    lst, item = xs
    empty = _is_empty(lst)
    lst = _with_item(b, node, lst, item, "Tried to push a tensor with incompatible shape. Item "
                     "element shape: {0} list shape: {1}")
    from ..shapes.symbolic import dim_add
    row = b.emit("reshape", [item], item.dtype, ("1",) + lst.shape[1:])
    out = b.emit("concatenate", [lst, row], lst.dtype, (dim_add(lst.shape[0], "1"),)
                 + lst.shape[1:], dimension=0)
    _track_host_push(b, lst, item, empty, out)
    return [out]


def _track_host_push(b, lst, item, empty: bool, out) -> None:
    """A shape-valued item pushed onto an empty list, or onto one holding
    only the same dims, makes a host list (Builder.host_lists); pushed onto
    another list (a loop body's argument), a host push the loop checks
    (ops/control_flow.py)."""
    dims = host_dims(b, item)
    if dims is None or item.type.rank > 1:
        return
    if empty or b.host_lists.get(lst) == dims:
        b.host_lists[out] = dims
    else:
        b.host_pushes[out] = (lst, dims)


def lower_pop_back(b, node, xs):
    """The last element and the list without it: a view of its first n-1
    rows.  An empty list fails in the gather at index -1 (TF's
    InvalidArgument, naming the node).  From a host list (a gradient loop's
    shape accumulator) the element is shape-valued, without a gather."""
    lst = materialize(b, xs[0])
    if lst.type.rank < 1:
        raise ShapeError(f"node '{node.name}' (TensorListPopBack): a list of rank "
                         f"{lst.type.rank}")
    from ..shapes.symbolic import dim_mul, dim_sub
    last = dim_sub(lst.shape[0], "1")
    row = dim_mul(*lst.shape[1:]) if lst.type.rank > 1 else "1"
    rest = b.emit("view", [lst], lst.dtype, (last,) + lst.shape[1:],
                  strides=[row] + [dim_mul(*lst.shape[k + 1:]) if lst.shape[k + 1:] else "1"
                                   for k in range(1, lst.type.rank)], base="0")
    dims = b.host_lists.get(lst)
    if dims is not None:  # every element holds these dims: the item is shape-valued
        b.host_lists[rest] = dims
        return [rest, make_host(b, dims, lst.dtype, scalar=lst.type.rank == 1)]
    index = make_host(b, [last], dtypes.I32, scalar=True)
    return [rest, b.emit("gather", [lst, index], lst.dtype, lst.shape[1:], axis=0)]


def lower_length(b, node, xs):
    lst = xs[0]
    return [make_host(b, [lst.shape[0]], dtypes.I32, scalar=True)]


def lower_element_shape(b, node, xs):
    """The element dims: a dense list's own (as XLA answers), -1 where a
    reserved list has not fixed one yet (as TF does; -1 alone for an
    unknown rank)."""
    lst = xs[0]
    dt = dtypes.from_tf(node.attrs.get("shape_type", dtypes.I32.tf_enum))
    if isinstance(lst, PendingList):
        if lst.elem is None:
            return [make_host(b, ["-1"], dt, scalar=True)]
        return [make_host(b, ["-1" if d == UNKNOWN else d for d in lst.elem], dt)]
    return [make_host(b, list(lst.shape[1:]), dt)]


def _elem_dtype(dts, attrs):
    return [dtypes.from_tf(attrs["element_dtype"])]


def _unranked(env, shapes, attrs):
    return [None]


def _rule(name, lower, **kw):
    return OpRule(name, lower, {"element_dtype": ALL}, dtype_rule=_elem_dtype,
                  shape_rule=_unranked, fusion="list", **kw)


RULES = [
    _rule("TensorListReserve", lower_reserve, const_inputs=(0,), value_inputs=(1,)),
    _rule("EmptyTensorList", lower_empty, const_inputs=(0,)),
    _rule("TensorListFromTensor", lower_from_tensor, const_inputs=(1,)),
    _rule("TensorListStack", lower_stack, const_inputs=(1,)),
    _rule("TensorListGetItem", lower_get_item, const_inputs=(2,)),
    _rule("TensorListSetItem", lower_set_item,
          attr_values={"resize_if_index_out_of_bounds": (False,)}),
    _rule("TensorListPushBack", lower_push_back),
    OpRule("TensorListPopBack", lower_pop_back, {"element_dtype": ALL},
           dtype_rule=lambda d, a: [dtypes.from_tf(a["element_dtype"])] * 2,
           shape_rule=lambda env, s, a: [None, None], fusion="list", const_inputs=(1,)),
    OpRule("TensorListLength", lower_length, {}, dtype_rule=lambda d, a: [dtypes.I32],
           shape_rule=lambda env, s, a: [()], fusion="list"),
    OpRule("TensorListElementShape", lower_element_shape, {"shape_type": dtypes.INTS},
           dtype_rule=lambda d, a: [dtypes.from_tf(a["shape_type"])],
           shape_rule=lambda env, s, a: [None], fusion="list"),
]
