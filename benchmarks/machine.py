"""The machine a benchmark ran on, for its printed tables."""
from __future__ import annotations

import os
from typing import Sequence


def cpu_line(flags_of_interest: Sequence[str]) -> str:
    """/proc/cpuinfo's model name, the CPU count and which of the given
    flags the CPU has."""
    name, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and name == "unknown":
                name = line.partition(":")[2].strip()
            elif line.startswith("flags"):
                flags = set(line.partition(":")[2].split())
                break
    have = " ".join(f for f in flags_of_interest if f in flags) or \
        "none of " + " ".join(flags_of_interest)
    return f"{name}; {os.cpu_count()} CPUs; flags: {have}"
