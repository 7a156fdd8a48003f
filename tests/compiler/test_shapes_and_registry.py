"""Symbolic shapes (query vs assume, broadcast simplification) and the
support table format."""
import json

import pytest

from blade_disc_tf.compiler import registry
from blade_disc_tf.compiler.errors import ShapeError
from blade_disc_tf.compiler.shapes.symbolic import ShapeEnv, parse_dim


def test_broadcast_simplification():
    env = ShapeEnv()
    assert env.broadcast_dim("1", "s0") == "s0"
    assert env.broadcast_dim("s0", "s0") == "s0"
    assert env.broadcast_dim("s1", "s0") == "bcast(s0,s1)"
    assert env.broadcast_dim("bcast(s0,s1)", "s0") == "bcast(s0,s1)"
    assert env.broadcast_dim("s0", "3") == "3"
    with pytest.raises(ShapeError):
        env.broadcast_dim("2", "3")
    assert env.broadcast_shapes(("s0", "s1"), ("s1",)) == ("s0", "s1")
    assert parse_dim("bcast(s0,s1)") == ("bcast", ["s0", "s1"])


def test_query_vs_assume():
    env = ShapeEnv()
    assert not env.known_equal("s0", "s1")          # a query commits to nothing
    assert not env.known_equal("s0", "s1")
    assert env.needs_broadcast_check(("s0",), ("s1",))
    env.assume_equal("s1", "s0")                     # caller emits the check
    assert env.known_equal("s0", "s1") and env.canon("s1") == "s0"
    assert not env.needs_broadcast_check(("s0",), ("s1",))
    env.assume_equal("s0", "4")
    assert env.canon("s1") == "4"
    with pytest.raises(ShapeError):
        env.assume_equal("s1", "5")


def test_support_table_format():
    table = registry.support_table()
    json.dumps(table)
    assert set(table) == {"ops"}
    ops = table["ops"]
    assert len(ops) == len(registry.REGISTRY)
    for name, entry in ops.items():
        assert set(entry) == {"type_attrs", "attr_values", "const_inputs", "value_inputs", "fast_math"}
        assert not set(entry["const_inputs"]) & set(entry["value_inputs"])
        for attr, enums in entry["type_attrs"].items():
            assert enums and all(isinstance(e, int) for e in enums)
    assert ops["BiasAdd"]["attr_values"] == {"data_format": ["NHWC"]}
    assert ops["Equal"]["attr_values"] == {"incomplete_shape_error": [True]}
    assert ops["Exp"]["type_attrs"] == {"T": [1, 2, 19, 14]}  # float, double, half, bfloat16
    assert ops["LogicalAnd"]["type_attrs"] == {}
    assert "Conv3D" not in ops
    # sizes are read at run time; a permutation stays a key value
    assert ops["Reshape"]["value_inputs"] == [1] and ops["Reshape"]["const_inputs"] == []
    assert ops["StridedSlice"]["const_inputs"] == [3]
    assert ops["Transpose"]["const_inputs"] == [1]
