"""The values of the run's choices, stated once: the command line offers them, ``Config`` holds one,
the POP metrics check and apply it (plain data: ``--help`` reads it without loading pandas)."""

from __future__ import annotations

from typing import Literal, get_args

# --nccl-as: NCCL kernels in the POP device tree as data movement (BasicAnalysis) or as useful work (TALP)
NcclAs = Literal["communication", "useful"]
NCCL_AS: tuple[str, ...] = get_args(NcclAs)
NCCL_AS_DEFAULT: NcclAs = "communication"
