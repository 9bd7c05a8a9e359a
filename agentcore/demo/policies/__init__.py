"""The retail demo's policy bundle and its tests: package data, no code."""
