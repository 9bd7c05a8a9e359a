"""agentcore.memory"""
