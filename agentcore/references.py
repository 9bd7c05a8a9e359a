"""``package.module:name`` references in settings and on the command line (tools, judges, agents), loaded one way.

This module imports nothing of ours but the errors, so every sub-package may use it.
"""

from __future__ import annotations

import importlib
from typing import Any

from agentcore.errors import ConfigError


def load_reference(spec: str | None, what: str) -> Any:
    """The object ``spec`` names; a ConfigError naming ``what`` it was for when the spec is malformed or missing."""
    module, colon, attribute = (spec or "").partition(":")
    if not (module and colon and attribute):
        raise ConfigError(f"{what}: {spec!r} is not a reference; use 'package.module:name'")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"{what}: cannot load {spec!r} ({error}); use 'package.module:name'") from None
