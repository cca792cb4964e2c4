"""Comparisons for real-QNN results: masked .pte bytes, numerics that an all-zero output cannot pass.

Pure functions over bytes and numpy arrays; every one has a control in test_infrastructure.py.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

# ExecuTorch's QNN context header: magic, an 8-byte signature (a nanosecond timestamp taken
# at compile time), the size of the QNN context binary that follows. The bot's program
# recorder masks it for its fingerprints; the tier compares with the same function.
from qnn_migrate.bot.lab.program_recorder import QNN_CONTEXT_MAGIC
from qnn_migrate.bot.lab.program_recorder import mask_qnn_headers as mask_signatures


def signatures(data: bytes) -> list[int]:
    """The signatures of the QNN context headers in ``data`` (what mask_signatures zeroes)."""
    found = []
    masked = mask_signatures(data)
    at = data.find(QNN_CONTEXT_MAGIC)
    while at >= 0:
        if masked[at + 4 : at + 12] != data[at + 4 : at + 12]:
            found.append(struct.unpack_from("<Q", data, at + 4)[0])
        at = data.find(QNN_CONTEXT_MAGIC, at + 1)
    return found


def bytes_differing(a: bytes, b: bytes) -> int:
    """How many bytes of ``a`` and ``b`` differ, position by position, plus their length difference."""
    shorter = min(len(a), len(b))
    x = np.frombuffer(a, dtype=np.uint8, count=shorter)
    y = np.frombuffer(b, dtype=np.uint8, count=shorter)
    return int(np.count_nonzero(x != y)) + abs(len(a) - len(b))


def nearly_equal(a: bytes, b: bytes, max_bytes: int) -> bool:
    """Whether ``a`` and ``b`` have one length and differ in at most ``max_bytes`` bytes."""
    return len(a) == len(b) and bytes_differing(a, b) <= max_bytes


def snr_db(actual: np.ndarray, reference: np.ndarray) -> float:
    """Signal-to-noise ratio of ``actual`` against ``reference`` in dB (inf when equal)."""
    ref = reference.astype(np.float64).ravel()
    err = actual.astype(np.float64).ravel() - ref
    noise = float(np.sum(err * err))
    signal = float(np.sum(ref * ref))
    if noise == 0.0:
        return float("inf")
    if signal == 0.0:
        return float("-inf")
    return 10.0 * float(np.log10(signal / noise))


def check_close(
    actual: Sequence[np.ndarray],
    reference: Sequence[np.ndarray],
    *,
    min_snr_db: float,
    max_rel_error: float,
    what: str = "",
) -> list[dict[str, float]]:
    """Assert each output matches its reference: SNR >= min_snr_db and
    max|a - r| <= max_rel_error * max|r|. An all-zero output has SNR 0 dB and relative error 1,
    so it fails any bound worth having (unlike ExecuTorch's atol 0.1 / rtol 1).
    Returns the measured figures per output.
    """
    assert len(actual) == len(reference), (
        f"{what}: {len(actual)} outputs, expected {len(reference)}"
    )
    figures = []
    for i, (a, r) in enumerate(zip(actual, reference, strict=True)):
        a = np.asarray(a)
        r = np.asarray(r)
        assert a.shape == r.shape, f"{what} output {i}: shape {a.shape}, expected {r.shape}"
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        err = float(np.max(np.abs(a.astype(np.float64) - r))) if r.size else 0.0
        rel = err / scale if scale > 0 else (0.0 if err == 0 else float("inf"))
        snr = snr_db(a, r)
        figures.append({"snr_db": snr, "rel_error": rel})
        assert snr >= min_snr_db and rel <= max_rel_error, (
            f"{what} output {i}: SNR {snr:.1f} dB (need >= {min_snr_db}), max error {err:.3g} = "
            f"{rel:.3g} of max |reference| {scale:.3g} (need <= {max_rel_error})"
        )
    return figures


def within_lsb(a: np.ndarray, b: np.ndarray, lsb: float | np.ndarray, n: float = 1.0) -> bool:
    """Whether every element of ``a`` and ``b`` differs by at most ``n`` LSB."""
    return bool(
        np.all(
            np.abs(a.astype(np.float64) - b.astype(np.float64)) <= n * np.asarray(lsb) * (1 + 1e-6)
        )
    )


def fp16_lsb(x: np.ndarray) -> np.ndarray:
    """One fp16 unit in the last place at each element's magnitude."""
    return np.spacing(np.abs(x).astype(np.float16)).astype(np.float64)


def same_structure(a: Any, b: Any) -> list[str]:
    """Differences in delegate counts, backends and ops outside between two Lowered results."""
    problems = []
    if a.delegates != b.delegates:
        problems.append(f"delegates {a.delegates} vs {b.delegates}")
    if a.backends != b.backends:
        problems.append(f"backends {a.backends} vs {b.backends}")
    if a.outside != b.outside:
        problems.append(f"ops outside {a.outside} vs {b.outside}")
    return problems
