"""Reading the fixed-width tables benchmarks/timing.print_table prints, for
the benchmark smoke tests."""
from __future__ import annotations

from typing import Dict


def table_rows(out: str, title: str) -> Dict[str, Dict[str, str]]:
    """First cell -> {column: cell} of the table whose title contains `title`."""
    lines = out[out.index(title):].splitlines()
    header = lines[1].split()
    rows = {}
    for line in lines[2:]:
        if not line.strip():
            break
        cells = line.split()
        rows[cells[0]] = dict(zip(header, cells))
    return rows
