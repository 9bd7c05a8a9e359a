"""Turn a decision's result obligations into a :class:`Redaction`, once per distinct obligation set.

Patterns named like a built-in detector ("card numbers", "email addresses") use the validating detector
(Luhn, mod-97) rather than the bare regex, so look-alike numbers are left intact. A policy's own pattern runs on
RE2 (linear time, like ``matches``), so no tool result can make redaction hang.
"""

from __future__ import annotations

import functools

from agentcore.gateway.redaction import Detector, Redaction, detector
from agentcore.policies.model import NO_OBLIGATIONS, Obligations
from agentcore.policies.regex import compile_regex

_NO_REDACTION = Redaction()


def redaction_for(obligations: Obligations) -> Redaction:
    """Build (and cache) the redaction an obligation set asks for; a bad regex raises, failing closed. Most
    decisions carry no obligations: that one is found by identity, not by hashing the model."""
    return _NO_REDACTION if obligations is NO_OBLIGATIONS else _redaction_for(obligations)


@functools.lru_cache(maxsize=256)
def _redaction_for(obligations: Obligations) -> Redaction:
    detectors: list[Detector] = []
    for pattern in obligations.redact_patterns:
        try:
            detectors.append(detector(pattern.name))
        except ValueError:
            detectors.append(Detector(pattern.name, compile_regex(pattern.regex)))
    return Redaction(
        fields=tuple(obligations.redact_fields), detectors=tuple(detectors), suppress=obligations.suppress_output
    )
