"""``agentcore demo``: a retail customer-service agent, governed, remembered, evaluated and costed end to end.

The domain follows τ-bench's retail store (users, orders, products, 16 tools); the store is generated from a seed
so the demo needs no external data.
"""
