"""Device profile data (TOML) shipped with agentcore; ``agentcore.accel.sim.profiles`` reads it.

Kept as a package so the TOML files install as package data and load through ``importlib.resources``.
"""
