"""Model sources, the BERT ONNX builder, its numpy reference, quantisation and the build cache."""
