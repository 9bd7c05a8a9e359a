"""agentcore.policies"""
