"""Chapter 05: leases: a pending key has an owner and an expiry, so a dead owner's claim is settled, not stuck.

The durable ledger's ``call`` claims a key (a *pending* row) before the effect
runs. The claim is held by an owner until its lease runs out:

* while the lease is live the owner may still finish: another caller is told
  *in progress, ask again*, and ``reconcile`` leaves the key alone (a slow
  owner is not a dead one);
* once it is dead (the lease expired, the owner ended it because its call's
  outcome is unknown, or, on this machine, the owner's process is gone) nobody
  will finish the call: callers are told *in progress, do not wait*, and the
  key is settled from the downstream system's own record, never by a blind
  re-run: ``reconcile`` for one key, ``reap`` for every dead claim;
* completion is fenced: an owner writes its result only while the row still
  carries its own claim, so an owner that comes back after its key was settled
  or retaken learns that it lost the claim (a conflict), not that it ``ran``.

The lease must outlast the call it covers: give the effect a deadline shorter
than the lease. A lease cannot stop a slow owner's effect from reaching the
downstream system after its claim was retaken; only a downstream that honours
the key can, and fencing keeps the answers honest meanwhile.
"""
from __future__ import annotations

import os
import secrets
import socket
import sqlite3
from typing import Any, Callable, Iterable

from toolkit._show import scrub
from toolkit.effects import transaction
from toolkit.kernel import Answer, LedgerStatus
from toolkit.kernel.ledger import check_call, json_value
from toolkit.effects import decode_result, encode_result

LIVE = "live"
_HOST = socket.gethostname()


def claim_owner(name: str | None = None) -> str:
    """A new claim's owner: ``name`` (default ``host/pid``, checked for life on this machine) and a random part."""
    return f"{name or f'{_HOST}/{os.getpid()}'}/{secrets.token_hex(6)}"


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


def storage_failure(key: Any, exc: sqlite3.Error, after: str, secret: Iterable[str] = ()) -> Answer:
    """A SQLite error as an answer: a lock held past the timeout is retryable, anything else is not."""
    shown = key if isinstance(key, str) else ""
    if getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED") or "locked" in str(exc):
        return Answer.failed(shown, "busy", f"the database stayed locked past the busy timeout; {after}", True)
    detail = scrub(f"{type(exc).__name__}: {exc}", secret)
    return Answer.failed(shown, "execution_failed", f"the ledger's database failed ({detail}); {after}", False)


class LeaseSettlement:
    """Settling dead claims from the downstream record: ``reconcile`` one key, ``reap`` them all.

    Mixed into ``toolkit.effects.sqlite_ledger.SqliteLedger``, which provides
    ``conn``, ``clock``, its lock and its row readers.
    """

    def reconcile(self, key: str, arguments: Any, inquire: Callable[[Any], Any], *,
                  tool: str = "", principal: str = "") -> Answer:
        """Settle a dead claim on ``key`` from the downstream system's own record, never by a blind re-run.

        A live lease is a slow owner: the answer is *in progress* and
        ``inquire`` is not asked. For a dead claim ``inquire(arguments)`` asks
        the downstream system about the key (it travels in the arguments): the
        recorded outcome settles the key (RECONCILED); None releases the claim
        (FAILED ``not_applied``: the same key may now be used again); an
        exception leaves it pending (PENDING: ask a human).
        """
        refused, digest = check_call(key, arguments, tool, principal)
        if refused:
            return refused
        arguments = json_value(arguments)   # JSON text of an object: the parsed object
        try:
            with self._lock:
                row = self._select(principal, key)
        except sqlite3.Error as exc:
            return storage_failure(key, exc, "nothing was settled")
        if row is None:
            return Answer.failed(key, "not_found", "no claim for this key", False)
        answer = self._existing(row, key, tool, digest, self.clock())
        if answer.status is not LedgerStatus.IN_PROGRESS or answer.error.retryable:
            return answer               # finished, a conflict, or a live lease: its owner may still finish
        try:
            found = inquire(arguments)
        except Exception as exc:
            return Answer.unknown(key, f"the downstream check raised {type(exc).__name__}; "
                                       "the outcome is still unknown")
        return self._settle(principal, key, row[4], found, tool, digest)

    def reap(self, find: Callable[[str], Any]) -> list[Answer]:
        """Settle every dead claim from the downstream record: ``find(key)`` returns its outcome or None.

        One answer per dead claim, oldest first: RECONCILED (the record's
        outcome is now the key's result), FAILED ``not_applied`` (no record:
        the claim is released and the key may be used again) or PENDING
        (``find`` raised: the claim stays for a person). Live claims are left
        alone. A database failure is one FAILED answer.
        """
        try:
            with self._lock:
                rows = self.conn.execute("SELECT principal, key, tool, fingerprint, owner, lease_until FROM ledger "
                                         "WHERE state = 'pending' ORDER BY rowid").fetchall()
        except sqlite3.Error as exc:
            return [storage_failure("", exc, "nothing was reaped")]
        now, answers = self.clock(), []
        for principal, key, tool, digest, owner, until in rows:
            if lease_state(owner, until, now) == LIVE:
                continue
            try:
                found = find(key)
            except Exception as exc:
                answers.append(Answer.unknown(key, f"the downstream check raised {type(exc).__name__}; "
                                                   "the outcome is still unknown"))
                continue
            answers.append(self._settle(principal, key, owner, found, tool, digest))
        return answers

    def _settle(self, principal: str, key: str, owner: str | None, found: Any, tool: str, digest: str) -> Answer:
        """Write the record's verdict, fenced by the dead claim's owner; if the row moved on, answer from it."""
        try:
            with self._lock, transaction(self.conn):
                if found is None:
                    moved = self.conn.execute("DELETE FROM ledger WHERE principal = ? AND key = ? "
                                              "AND state = 'pending' AND owner IS ?", (principal, key, owner))
                else:
                    text = encode_result(found)
                    moved = self.conn.execute("UPDATE ledger SET state = 'done', result = ?, owner = NULL, "
                                              "lease_until = NULL WHERE principal = ? AND key = ? "
                                              "AND state = 'pending' AND owner IS ?", (text, principal, key, owner))
                row = None if moved.rowcount == 1 else self._select(principal, key)
        except sqlite3.Error as exc:
            return storage_failure(key, exc, "the claim is unchanged")
        if moved.rowcount == 1 and found is None:
            return Answer.failed(key, "not_applied", "the downstream system has no record of this key", True)
        if moved.rowcount == 1:
            return Answer(LedgerStatus.RECONCILED, key, decode_result(text))
        if row is None:
            return Answer.failed(key, "not_applied", "another caller released the claim; the key is free", True)
        return self._existing(row, key, tool, digest, self.clock())   # settled or retaken meanwhile


__all__ = ["LIVE", "LeaseSettlement", "claim_owner", "lease_state"]
