"""The research side: benchmark data, slices, injectors, bench and its report,
statistics, LLM-judge baselines, NLI training/adaptation/calibration and the
local LLM server.

Never imported by the runtime (an import-linter contract in `make test`
enforces it): evaluating turns needs none of this, and its heavier
dependencies live in the `bench` and `nli` extras.
"""
