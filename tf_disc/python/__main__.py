"""python -m blade_disc_tf convert SRC DST: the SavedModel converter's CLI."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m blade_disc_tf",
                                     description="blade_disc_tf tools")
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser(
        "convert", help="compile a SavedModel's clusters ahead of time",
        description="Clusters every signature of the SavedModel in SRC, compiles each "
                    "cluster for the signature's symbolic shapes and writes a SavedModel "
                    "with the executables embedded to DST; serve it with only the op "
                    "library loaded (blade_disc_tf.load_ops() or tf.load_op_library).")
    conv.add_argument("src", metavar="SRC", help="input SavedModel directory (TF2 or TF1)")
    conv.add_argument("dst", metavar="DST", help="output directory (must not exist or be empty)")
    conv.add_argument("--signature", action="append", dest="signatures", metavar="KEY",
                      help="TF2: convert only this signature (repeatable; default all)")
    conv.add_argument("--cache-dir", help="compile cache directory")
    conv.add_argument("--min-cluster-size", type=int, help="smallest cluster to compile")
    conv.add_argument("--cxx", help="C++ compiler")
    conv.add_argument("--target-isa", action="append", dest="target_isas", metavar="TIER",
                      help="embed an executable for this x86-64 tier (x86-64-v2, avx2, avx512, "
                           "avx512_bf16, avx512_amx; repeatable; default avx2, avx512 and this machine's)")
    args = parser.parse_args(argv)

    import blade_disc_tf as disc

    options = {k: v for k, v in (("cache_dir", args.cache_dir), ("cxx", args.cxx),
                                 ("min_cluster_size", args.min_cluster_size)) if v is not None}
    try:
        disc.convert_saved_model(args.src, args.dst, args.signatures,
                                 progress=lambda line: print(line, flush=True),
                                 target_isas=args.target_isas or (), **options)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
