"""Remote LLM providers for LLM judges and LLM memory strategies, metered like local inference.

``evaluations`` and ``memory`` reach an LLM only through here, so every model call of the library still goes
through ``accel``: each completion becomes a :class:`~agentcore.accel.runtime.Receipt` (tokens, measured wall
time, and dollars at the configured per-token price) in the same ledger as the ONNX calls.
"""

from agentcore.accel.llm.providers import (
    AnthropicMessages,
    BedrockConverse,
    Completion,
    LLMConfig,
    LLMError,
    LLMProvider,
    Message,
    MeteredLLM,
    OpenAICompatible,
    create_provider,
    json_object,
)

__all__ = [
    "AnthropicMessages",
    "BedrockConverse",
    "Completion",
    "LLMConfig",
    "LLMError",
    "LLMProvider",
    "Message",
    "MeteredLLM",
    "OpenAICompatible",
    "create_provider",
    "json_object",
]
