"""Exception types.  Every failure the compiler knows about is a CompileError
whose message is one line that service.compile_request hands back."""


class CompileError(Exception):
    """Generic compile failure (reason in the message)."""


class Unsupported(CompileError):
    """A construct the compiler does not handle (names the TF op/node)."""


class ShapeError(CompileError):
    """Shapes that can never be valid (e.g. static broadcast mismatch)."""


def template_text(s: str) -> str:
    """`s` (a node name, an op name) made safe to place inside an error
    template: templates fill {0}/{1} with shapes at run time, so braces in a
    graph name are doubled ({{ and }} print one brace, as in str.format)."""
    return s.replace("{", "{{").replace("}", "}}")
