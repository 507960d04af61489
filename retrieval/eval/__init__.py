"""Evaluation: metrics (pure), dataset loaders (BEIR, LoCoMo, the demo set), per-stage runs, sweeps
and the fusion lab, and the comparisons the Compare page shows (`compare`)."""
