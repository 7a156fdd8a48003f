"""The blade_disc_tf compiler: TF FunctionDef cluster -> shared library.

Layers, each a subpackage: frontend (FunctionDef -> graph model -> IR through
the op registry), ir (MHLO-style IR, printer/parser/verifier), shapes
(symbolic dims), passes (the pipeline), codegen (C++ source), build (system
compiler + disk cache).  Entry points: service.compile_request,
options.CompileOptions, registry.support_table.
"""
__version__ = "0.1.0"
