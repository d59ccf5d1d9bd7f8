"""What the tests share (no test module imports another; tests/test_suite_layout.py checks it).

- :mod:`.harness`: running ``helm-run`` / ``helm-summarize`` as a user would, and reading what they wrote;
- :mod:`.suite`: the shared session suite (the ``sample_suite`` / ``copy_suite`` fixtures of tests/conftest.py);
- :mod:`.sample`: facts about the bundled sample, read from its files;
- :mod:`.videos`: synthetic videos whose frames carry their number, and broken files;
- :mod:`.fakes`: loopback fakes, one per provider API, on one server (and the Hugging Face Hub);
- :mod:`.metric_inputs`: hand-built HELM request states for the metric;
- :mod:`.path_cases`: crafted paths out of a command's root (the export-media refusals);
- :mod:`.protocol`: the protocol's fixed texts, copied;
- :mod:`.tiny_qwen3vl`: a tiny random-weight Qwen3-VL checkpoint; :mod:`.unwritable`: folders nobody may write.
"""
