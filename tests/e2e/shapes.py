"""Random shapes that exercise what symbolic shapes must handle: 0 and 1 dims."""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

EDGE_SHAPES_2D = [(0, 3), (3, 0), (0, 0), (1, 1), (1, 7), (7, 1), (2, 3), (33, 65)]


def shapes_2d(count: int, seed: int = 0) -> List[Tuple[int, int]]:
    """`count` distinct 2-D shapes: the edge cases first, then random ones."""
    rng = np.random.default_rng(seed)
    shapes = list(EDGE_SHAPES_2D)
    while len(shapes) < count:
        shape = (int(rng.integers(1, 70)), int(rng.integers(1, 300)))
        if shape not in shapes:
            shapes.append(shape)
    return shapes[:count]


def random_f32(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
