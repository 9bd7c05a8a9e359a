"""agentcore.evaluations"""
