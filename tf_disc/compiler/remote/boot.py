"""The compile worker's program, run by path by blade_disc_tf/_compile_worker.py:

    python boot.py '<JSON: sys_path, package_path, tensorflow_path, parent_pid, nice>'

It imports neither TensorFlow's runtime nor blade_disc_tf's __init__ (which
imports the TF-facing API): both packages become bare ones whose modules
import alone, so the worker holds the compiler, numpy and protobuf only.
Its stdin and stdout are the request and reply pipes; they move to other
descriptors and stdout becomes stderr, so that nothing printed can corrupt
a reply."""
import json
import os
import sys
import types


def _bare_package(name: str, path: list) -> None:
    """Package `name` whose submodules are found on `path`, its __init__ not run."""
    module = types.ModuleType(name)
    module.__path__ = list(path)
    sys.modules[name] = module


def main() -> None:
    config = json.loads(sys.argv[1])
    sys.path[:] = config["sys_path"]
    requests_fd, replies_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    _bare_package("blade_disc_tf", config["package_path"])
    _bare_package("tensorflow", config["tensorflow_path"])

    from blade_disc_tf.compiler.build.process import lower_priority
    from blade_disc_tf.compiler.frontend import tf_protos

    tf_protos.use_sent_op_defs_only()
    lower_priority(os.getpid(), int(config["nice"]))
    from blade_disc_tf.compiler.remote import server

    server.serve(requests_fd, replies_fd, int(config["parent_pid"]))


if __name__ == "__main__":
    main()
