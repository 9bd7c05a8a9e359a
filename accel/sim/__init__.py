"""Simulated Trainium capacity: device profiles, an ONNX cost model, a batch scheduler, and workloads."""
