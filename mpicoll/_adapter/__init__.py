"""[1] Tensor in: every framework's tensor becomes a Buffer that MPI can use."""

from .buffer import Buffer, as_buffer
from .detect import framework_of

__all__ = ["Buffer", "as_buffer", "framework_of"]
