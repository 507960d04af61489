"""Hand-written source of the demo corpus (data/demo/traces.jsonl); see scripts/write_demo_corpus.py."""
