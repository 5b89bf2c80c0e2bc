"""nsys2prv: Nsight Systems reports -> one clock-aligned Paraver trace."""

__version__ = "0.6.0"
