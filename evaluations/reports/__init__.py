"""Report writers for evaluation runs."""
