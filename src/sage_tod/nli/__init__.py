"""S2's machinery: NLI model resolution, scoring backends, the pair cache, claim
templates, the paraphrase encoder, training, calibration and benchmarks.

Importing this package is cheap: numpy, torch, transformers and onnxruntime are
imported only by the functions that need them, so `sage-tod` starts fast and
S1-only configurations never pay for S2.
"""

from __future__ import annotations
