"""Exception types.  Every failure the compiler knows about is a CompileError
whose message is one line that service.compile_request hands back."""


class CompileError(Exception):
    """Generic compile failure (reason in the message)."""


class Unsupported(CompileError):
    """A construct the compiler does not handle (names the TF op/node)."""


class ShapeError(CompileError):
    """Shapes that can never be valid (e.g. static broadcast mismatch)."""
