"""The compile worker: a process of its own that runs the compiler for a TF
process's asynchronous compiles, so that no compile work holds that
process's GIL while its calls run in TF.  boot.py is its program,
server.py its loop, protocol.py the frames both sides exchange; the TF
side is blade_disc_tf/_compile_worker.py."""
