"""Chat completions from an OpenAI-compatible endpoint, Anthropic Messages or Bedrock Converse.

The two HTTP protocols are spoken with the standard library (no SDK needed at run time); Bedrock goes through
``boto3``'s ``bedrock-runtime`` client (the ``bedrock`` extra). OpenAI-compatible covers vLLM, Ollama, llama.cpp's
server, LiteLLM and Bedrock's OpenAI-compatible endpoint. Keys are read from an environment variable named in
the configuration, never stored in it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agentcore.errors import AgentCoreError, ConfigError

if TYPE_CHECKING:
    from agentcore.accel.ledger import Ledger

log = logging.getLogger(__name__)
ProviderName = Literal["openai", "anthropic", "bedrock"]


class LLMError(AgentCoreError):
    """A completion could not be had: the endpoint failed, timed out or answered something unreadable."""


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    """The reply text, the tokens the provider counted, and the wall time of the call (measured here)."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int
    seconds: float


class LLMConfig(BaseModel):
    """Which model to ask and how; ``[judge]`` in a suite file is one of these."""

    model_config = ConfigDict(extra="forbid")

    provider: ProviderName = "openai"
    model: str
    base_url: str | None = Field(default=None, description="default: the provider's public endpoint")
    api_key_env: str | None = Field(default=None, description="name of the environment variable holding the key")
    region: str | None = Field(default=None, description="Bedrock: AWS region")
    timeout_s: float = Field(default=60.0, gt=0)
    max_tokens: int = Field(default=512, gt=0)
    temperature: float = Field(default=0.0, ge=0, le=2)
    usd_per_1k_input_tokens: float = Field(default=0.0, ge=0, description="your price; 0 leaves dollars unpriced")
    usd_per_1k_output_tokens: float = Field(default=0.0, ge=0)

    def price(self, completion: Completion) -> float:
        """Dollars of ``completion`` at the configured per-token prices."""
        return (
            completion.input_tokens * self.usd_per_1k_input_tokens
            + completion.output_tokens * self.usd_per_1k_output_tokens
        ) / 1000


class LLMProvider(Protocol):
    model: str

    def complete(self, messages: list[Message], *, json_output: bool = False) -> Completion: ...


def _key(config: LLMConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ConfigError(f"the LLM key variable {config.api_key_env} is not set")
    return key


def _post(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read()[:300].decode("utf-8", "replace")
        raise LLMError(f"{url} answered HTTP {error.code}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise LLMError(f"{url} could not be reached: {error}") from None
    except json.JSONDecodeError as error:
        raise LLMError(f"{url} answered something that is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise LLMError(f"{url} answered {type(payload).__name__}, not a JSON object")
    return payload


class OpenAICompatible:
    """``POST {base_url}/chat/completions`` (default base URL: OpenAI's ``/v1``)."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.model = config.model
        self.url = (config.base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"

    def complete(self, messages: list[Message], *, json_output: bool = False) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
        }
        if json_output:
            body["response_format"] = {"type": "json_object"}
        key = _key(self.config)
        started = time.perf_counter()
        payload = _post(self.url, body, {"authorization": f"Bearer {key}"} if key else {}, self.config.timeout_s)
        try:
            text = payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url} answered without choices[0].message.content") from None
        usage = payload.get("usage") or {}
        return Completion(
            text=text,
            model=str(payload.get("model") or self.model),
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            seconds=time.perf_counter() - started,
        )


class AnthropicMessages:
    """``POST {base_url}/v1/messages`` with ``anthropic-version: 2023-06-01``."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.model = config.model
        self.url = (config.base_url or "https://api.anthropic.com").rstrip("/") + "/v1/messages"

    def complete(self, messages: list[Message], *, json_output: bool = False) -> Completion:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        key = _key(self.config)
        headers = {"anthropic-version": "2023-06-01", **({"x-api-key": key} if key else {})}
        started = time.perf_counter()
        payload = _post(self.url, body, headers, self.config.timeout_s)
        blocks = payload.get("content")
        if not isinstance(blocks, list):
            raise LLMError(f"{self.url} answered without a content list")
        usage = payload.get("usage") or {}
        return Completion(
            text="".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"),
            model=str(payload.get("model") or self.model),
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            seconds=time.perf_counter() - started,
        )


class BedrockConverse:
    """``bedrock-runtime`` ``converse`` through boto3 (credentials and region the AWS way, or ``region``)."""

    def __init__(self, config: LLMConfig, client: Any = None) -> None:
        self.config = config
        self.model = config.model
        if client is None:
            try:
                import boto3
            except ImportError:
                hint = "pip install 'agentcore-governance[bedrock]'"
                raise ConfigError(f"the bedrock provider needs boto3: {hint}") from None
            client = boto3.client("bedrock-runtime", region_name=config.region)
        self.client = client

    def complete(self, messages: list[Message], *, json_output: bool = False) -> Completion:
        from botocore.exceptions import BotoCoreError, ClientError

        request: dict[str, Any] = {
            "modelId": self.model,
            "messages": [{"role": m.role, "content": [{"text": m.content}]} for m in messages if m.role != "system"],
            "inferenceConfig": {"maxTokens": self.config.max_tokens, "temperature": self.config.temperature},
        }
        system = [{"text": m.content} for m in messages if m.role == "system"]
        if system:
            request["system"] = system
        started = time.perf_counter()
        try:
            response = self.client.converse(**request)
        except (BotoCoreError, ClientError) as error:
            raise LLMError(f"Bedrock converse with {self.model} failed: {error}") from None
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        usage = response.get("usage", {})
        return Completion(
            text="".join(block.get("text", "") for block in blocks),
            model=self.model,
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
            seconds=time.perf_counter() - started,
        )


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a model answered (a Markdown code fence around it is tolerated), or None if it is not one."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        answer = json.loads(body)
    except json.JSONDecodeError:
        return None
    return answer if isinstance(answer, dict) else None


def create_provider(config: LLMConfig) -> LLMProvider:
    providers: dict[str, type[OpenAICompatible] | type[AnthropicMessages] | type[BedrockConverse]] = {
        "openai": OpenAICompatible,
        "anthropic": AnthropicMessages,
        "bedrock": BedrockConverse,
    }
    return providers[config.provider](config)


class MeteredLLM:
    """A provider whose every completion is written to the cost ledger, like an ONNX call through accel.

    Receipts are ``kind="llm"`` with the provider's input and output token counts; ``cpu_seconds`` and
    ``latency_seconds`` are the measured wall time of the remote call; dollars are the configured per-token price
    (0 when none is given: remote serving is not simulated yet). ``user`` charges one call to a user (memory
    extraction charges the actor whose events were read).
    """

    def __init__(
        self, provider: LLMProvider, config: LLMConfig, *, ledger: Ledger | None, tenant: str, agent: str | None
    ) -> None:
        self.provider, self.config, self.ledger = provider, config, ledger
        self.tenant, self.agent = tenant, agent

    @property
    def model(self) -> str:
        return self.provider.model

    def complete(self, messages: list[Message], *, json_output: bool = False, user: str | None = None) -> Completion:
        from agentcore.accel.runtime import Receipt

        completion = self.provider.complete(messages, json_output=json_output)
        if self.ledger is not None:
            self.ledger.record(
                Receipt(
                    model=f"llm:{completion.model}",
                    variant=self.config.provider,
                    tenant=self.tenant,
                    agent=self.agent,
                    user=user,
                    items=1,
                    batches=1,
                    kind="llm",
                    tokens=completion.input_tokens + completion.output_tokens,
                    input_tokens=completion.input_tokens,
                    output_tokens=completion.output_tokens,
                    cpu_seconds=completion.seconds,
                    latency_seconds=completion.seconds,
                    usd=self.config.price(completion),
                )
            )
        return completion
