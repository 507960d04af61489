"""Evaluation: metrics (pure), dataset loaders, per-stage runs and sweeps."""
