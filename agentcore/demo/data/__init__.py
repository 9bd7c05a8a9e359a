"""Data of the retail demo (catalogue, intents, scenarios, suite, tool schemas): package data, no code."""
