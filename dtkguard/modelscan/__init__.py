"""FP8/FP4 detection in model folders, files and serving processes."""
