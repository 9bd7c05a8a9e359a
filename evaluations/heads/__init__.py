"""Small ONNX task heads trained by ``scripts/train_eval_heads.py``; ``heads.json`` records their provenance and quality."""
