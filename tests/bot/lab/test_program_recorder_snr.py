"""lab/program_recorder.py's SNR from the two energies (no torch: the arithmetic alone)."""

from __future__ import annotations

import math

import pytest

from qnn_migrate.bot.lab.program_recorder import snr_db

NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize(
    ("signal", "noise", "expected"),
    [
        (100.0, 1.0, 20.0),  # the control: an ordinary output
        (1.0, 0.0, "inf"),  # exact
        (0.0, 1.0, "-inf"),  # a zero reference
        (NAN, NAN, "nan"),  # the output and the reference hold NaN
        (1.0, NAN, "nan"),  # the output holds NaN: was a number (NaN), read as 200 dB
        (INF, INF, "nan"),
        (INF, 1.0, "inf"),
        (1.0, INF, "-inf"),
    ],
)
def test_snr_db_is_a_number_or_says_which_it_is_not(
    signal: float, noise: float, expected: float | str
) -> None:
    got = snr_db(signal, noise)
    assert got == expected
    assert not (isinstance(got, float) and not math.isfinite(got))
