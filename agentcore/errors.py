"""The one exception hierarchy of agentcore.

Every error a user can see derives from :class:`AgentCoreError`, so applications can catch one type.
This module imports nothing of ours, so every sub-package (even the "pure" ones) may import it.
Sub-packages define their specific errors next to their code, deriving from the classes here.
"""

from __future__ import annotations


class AgentCoreError(Exception):
    """Base of every agentcore error. The message says what went wrong and what to do about it."""


class ConfigError(AgentCoreError):
    """A configuration file or setting is invalid."""


class ModelError(AgentCoreError):
    """A model could not be found, built, verified or run."""


class ModelNotFoundError(ModelError):
    """Model source files are missing."""


class ModelCorruptError(ModelError):
    """A model file does not match its recorded hash."""
