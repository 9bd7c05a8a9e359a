"""agentcore.accel: every model call runs here, on onnxruntime, charged to simulated Trainium capacity."""
