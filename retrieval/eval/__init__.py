"""Evaluation: dataset loaders (BEIR, LoCoMo, the demo set), per-stage runs, sweeps, the fusion lab, the
evaluations the Tune and Compare pages run (`sessions`) and the comparisons Compare shows (`compare`).
Every metric comes from `retrieval.metrics`."""
