"""The compiler's layers import downwards only: the frontend, the IR, the
passes, the registry and shapes know no code generator, and the shared
codegen package knows no target's (codegen/cpu/ imports codegen/, never the
reverse), so a new target is a target/ module plus its own codegen package."""
import ast
import os

import pytest

import blade_disc_tf.compiler as compiler_pkg

ROOT = os.path.dirname(compiler_pkg.__file__)


def _imports(path: str) -> set[str]:
    """Absolute module names (relative to the compiler package) path imports."""
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    package = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            mod = base + (node.module.split(".") if node.module else [])
            found.add(".".join(mod))
            found.update(".".join(mod + [a.name]) for a in node.names)
    return found


def _files(*folders: str) -> list[str]:
    out = []
    for folder in folders:
        top = os.path.join(ROOT, folder)
        if os.path.isfile(top + ".py"):
            out.append(top + ".py")
        for dirpath, _, names in os.walk(top):
            out += [os.path.join(dirpath, n) for n in names if n.endswith(".py")]
    return sorted(out)


@pytest.mark.parametrize("path", _files("frontend", "ir", "passes", "shapes", "ops", "registry"),
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_target_neutral_layers_import_no_codegen(path):
    bad = {m for m in _imports(path) if m == "codegen" or m.startswith("codegen.")}
    assert not bad, f"{os.path.relpath(path, ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", [p for p in _files("codegen")
                                  if os.path.dirname(p) == os.path.join(ROOT, "codegen")],
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_shared_codegen_imports_no_target_package(path):
    bad = {m for m in _imports(path) if m.startswith(("codegen.cpu", "codegen.cuda"))}
    assert not bad, f"{os.path.relpath(path, ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("target,other", [("cpu", "cuda"), ("cuda", "cpu")])
def test_target_codegen_packages_do_not_import_each_other(target, other):
    for path in _files(os.path.join("codegen", target)):
        bad = {m for m in _imports(path) if m.startswith(f"codegen.{other}")}
        assert not bad, f"{os.path.relpath(path, ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_each_target_codegen_is_a_package_of_its_own(target):
    assert os.path.isfile(os.path.join(ROOT, "codegen", target, "__init__.py"))
    assert any(m.startswith(f"codegen.{target}")
               for m in _imports(os.path.join(ROOT, "target", f"{target}.py")))
