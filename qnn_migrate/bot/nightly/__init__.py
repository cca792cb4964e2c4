"""The nightly run: per-SoC baselines and the one nightly issue."""
