"""FP8/FP4 detection in model checkpoints and serving processes (headers only, never data)."""
