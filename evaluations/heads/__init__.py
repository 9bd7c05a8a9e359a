"""Small ONNX task heads trained by ``scripts/train_eval_heads.py``.

``heads.json`` records each head's features, weights, training data provenance and measured quality.
"""
