"""NLI model training, SGD-dev adaptation, claim measurement, calibration and speed benchmarks."""
