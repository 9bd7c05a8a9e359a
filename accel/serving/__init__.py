"""Simulated LLM serving: model catalogue, analytical cost model, continuous-batching simulation, capacity."""
