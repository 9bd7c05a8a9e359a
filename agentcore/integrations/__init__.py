"""Agent framework integrations: one module per framework, each behind its own extra, on the public Gateway API."""
