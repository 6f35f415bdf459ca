"""Chapter 05: leases: a pending key has an owner and an expiry, so a dead owner's claim is settled, not stuck.

A live lease's owner may still finish (*in progress, ask again*); a dead one's key (expired, ended,
or its process gone) is settled from the downstream record by ``reconcile`` / ``reap``, never by a
blind re-run. Completion is fenced by the owner (``settle_row``), so a late owner learns it lost."""
from __future__ import annotations

import math
import os
import secrets
import socket
from typing import Any, Iterable

from toolkit._show import scrub
from toolkit.kernel import Answer, LedgerStatus
from toolkit.effects import busy, decode_result

LIVE = "live"
_HOST = socket.gethostname()


def claim_owner(name: str | None = None) -> str:
    """A new claim's owner: ``name`` (default ``host/pid``, checked for life on this machine) and a random part."""
    return f"{name or f'{_HOST}/{os.getpid()}'}/{secrets.token_hex(6)}"


def lease_length(seconds: Any) -> float:
    """A lease's length in seconds, checked: a positive, finite number (``ValueError`` otherwise)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"lease_seconds must be a positive, finite number of seconds (got {seconds!r})")
    return float(seconds)


def lease_state(owner: str | None, lease_until: float | None, now: float) -> str:
    """``"live"``, or why nobody will finish the claim: ``lease expired``, ``owner gone`` or ``no lease``."""
    if owner is None or lease_until is None:
        return "no lease"
    if now >= lease_until:
        return "lease expired"
    if _process_gone(owner):
        return "owner gone"
    return LIVE


def _process_gone(owner: str) -> bool:
    """True only when the owner is a process of this machine that no longer exists (a zombie still counts)."""
    host, _, rest = owner.partition("/")
    pid, _, nonce = rest.partition("/")
    if os.name != "posix" or host != _HOST or not pid.isdigit() or not nonce or "/" in nonce:
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:            # it exists, and belongs to someone else
        return False
    return False


def storage_failure(key: Any, exc: Exception, after: str, secret: Iterable[str] = ()) -> Answer:
    """A database error as an answer: a lock held past the timeout is retryable, nothing else is."""
    shown = key if isinstance(key, str) else ""
    if busy(exc):
        return Answer.refusal("failed", shown, f"the database stayed locked past the busy timeout; {after}",
                              code="busy", retryable=True)
    detail = scrub(f"{type(exc).__name__}: {exc}", secret)
    return Answer.refusal("failed", shown, f"the ledger's database failed ({detail}); {after}", code="execution_failed")


def existing_answer(row: tuple, key: str, tool: str, digest: str, now: float) -> Answer:
    """What a ledger row (tool, fingerprint, state, result, owner, lease_until) answers to a call with ``key``."""
    before_tool, before, state, text, owner, until = row
    if before_tool != tool:
        return Answer.refusal("conflict", key, what="tool", before=before_tool, now=tool)
    if before != digest:
        return Answer.refusal("conflict", key, what="arguments", before=before[:12], now=digest[:12])
    if state == "pending":
        why = lease_state(owner, until, now)
        return Answer.refusal("in_progress", key, dead="" if why == LIVE else why)
    return Answer(LedgerStatus.REPLAYED, key, decode_result(text))


#: A pending row settled, fenced by its owner (a claim from before leases has none: '').
SETTLE = ("UPDATE ledger SET state = 'done', result = ?, owner = NULL, lease_until = NULL "
          "WHERE principal = ? AND key = ? AND state = 'pending' AND COALESCE(owner, '') = ?")


def settle_row(conn: Any, principal: str, key: str, owner: str | None, text: str | None) -> int:
    """Settle a pending row with a stored result, fenced by ``owner`` (``text`` None deletes it);
    the rows changed."""
    if text is None:
        return conn.execute("DELETE FROM ledger WHERE principal = ? AND key = ? AND state = 'pending' "
                            "AND COALESCE(owner, '') = ?", (principal, key, owner or "")).rowcount
    return conn.execute(SETTLE, (text, principal, key, owner or "")).rowcount
