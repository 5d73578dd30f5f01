"""Problem sizes per device and mode: big enough for an H100 to reach its peak in the full
CUDA profile, tiny on CPU so CI covers every code path in seconds.

Standalone (stdlib only): shipped to fresh cloud instances with the suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class ModelSize:
    d_model: int
    n_heads: int
    n_layers: int
    seq_len: int
    batch: int
    vocab: int


@dataclass(frozen=True)
class Profile:
    name: str
    # (M, N, K) per dtype; square shapes plus a large-K shape where tensor cores shine.
    matmul_shapes: dict[str, list[tuple[int, int, int]]]
    matmul_repeats: int
    matmul_target_s: float  # each timed repeat runs about this long (iterations calibrated)
    copy_bytes: int  # per buffer; far larger than L2 on a GPU
    transfer_bytes: int
    bw_repeats: int
    model: ModelSize
    train_warmup_steps: int
    train_steps: int  # step cap per precision mode
    # seconds per section; the whole suite stays under their sum
    budgets_s: dict[str, float] = field(default_factory=dict)

    @property
    def total_budget_s(self) -> float:
        return sum(self.budgets_s.values())


_SQ = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384)]
_BIG_K = [(8192, 8192, 32768)]

CUDA_FULL = Profile(
    name="cuda-full",
    matmul_shapes={
        "fp32": [(8192, 8192, 8192)],  # no tensor cores: one shape is enough and slow
        "tf32": [(8192, 8192, 8192), (16384, 16384, 16384)],
        "fp16": _SQ + _BIG_K,
        "bf16": _SQ + _BIG_K,
        "fp8": _SQ + _BIG_K,
    },
    matmul_repeats=7,
    matmul_target_s=0.15,
    copy_bytes=4 * GiB,
    transfer_bytes=1 * GiB,
    bw_repeats=7,
    model=ModelSize(d_model=1024, n_heads=16, n_layers=8, seq_len=1024, batch=16, vocab=32768),
    train_warmup_steps=5,
    train_steps=30,
    budgets_s={"facts": 15, "matmul": 120, "memory": 20, "transfer": 25, "training": 100, "serving": 240},
)

CUDA_QUICK = Profile(
    name="cuda-quick",
    matmul_shapes={k: [(4096, 4096, 4096)] for k in ("fp32", "tf32", "fp16", "bf16", "fp8")},
    matmul_repeats=3,
    matmul_target_s=0.05,
    copy_bytes=512 * MiB,
    transfer_bytes=256 * MiB,
    bw_repeats=3,
    model=ModelSize(d_model=512, n_heads=8, n_layers=4, seq_len=512, batch=8, vocab=8192),
    train_warmup_steps=2,
    train_steps=8,
    budgets_s={"facts": 10, "matmul": 20, "memory": 5, "transfer": 5, "training": 20, "serving": 40},
)

CPU = Profile(
    name="cpu",
    matmul_shapes={k: [(128, 128, 128), (256, 256, 256)] for k in ("fp32", "tf32", "fp16", "bf16", "fp8")},
    matmul_repeats=3,
    matmul_target_s=0.01,
    copy_bytes=32 * MiB,
    transfer_bytes=0,
    bw_repeats=3,
    model=ModelSize(d_model=64, n_heads=4, n_layers=2, seq_len=32, batch=4, vocab=128),
    train_warmup_steps=2,
    train_steps=6,
    budgets_s={"facts": 5, "matmul": 4, "memory": 2, "transfer": 1, "training": 8, "serving": 6},
)


def pick(device_type: str, quick: bool) -> Profile:
    if device_type == "cuda":
        return CUDA_QUICK if quick else CUDA_FULL
    return CPU
