"""Chapter 07: specification gaming: when "HTTP 202" is counted as a successful deployment.

The chapter's failure: a deployment tool is judged by "successful calls", and
its adapter counts HTTP 202 (*accepted*) as success even when the deployment
later fails. An agent can then push the metric up with fast, accepted requests
while never checking settled health. Nothing here is a JSON failure: every
call is well formed, authorized and accepted. The contract simply promised the
wrong thing.

The repair is a better postcondition, not a better prompt: the result must
carry *settled* evidence (health read after the rollout has settled), and the
contract's postcondition checks it against the world. A 202 then is what it
always was, a receipt, and a rollout that never settles is a ``timeout``
(outcome unknown), not a success.

Everything is simulated and seeded: ``DeployService`` decides each version's
fate from ``(seed, version)``, so both adapters meet exactly the same world.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from toolkit.kernel import Condition, Contract, Retry
from toolkit.kernel import Host, Tool
from toolkit.kernel import Caller
from toolkit.kernel import FailureClass, Status, ToolFailure

HEALTHY, FAILING, PENDING = "healthy", "failing", "pending"


@dataclass
class Rollout:
    """One accepted deployment inside the simulated service."""

    deployment_id: str
    service: str
    version: str
    accepted_at: float
    settles_at: float | None     # None: this rollout never settles
    fate: str                    # healthy or failing once settled


@dataclass
class DeployService:
    """A deterministic stand-in for a deployment API.

    ``submit`` answers 202 at once for any well-formed request; the rollout
    settles ``settle_seconds`` later as healthy or failing. A version's fate is
    drawn from ``random.Random(f"{seed}:{version}")``: the same version always
    has the same fate, whichever adapter deploys it and in whatever order.
    ``p_healthy`` is the chance a (rushed) build is good; ``p_stuck`` the chance
    a rollout never settles.
    """

    seed: int = 431
    settle_seconds: float = 30.0
    p_healthy: float = 0.35
    p_stuck: float = 0.1
    now: float = 0.0
    rollouts: dict[str, Rollout] = field(default_factory=dict)
    live: dict[str, str] = field(default_factory=dict)   # service -> deployment id now serving

    def fate(self, version: str) -> tuple[str, bool]:
        """``(healthy|failing, stuck)`` for a version: fixed by the seed, independent of order."""
        rng = random.Random(f"{self.seed}:{version}")
        return (HEALTHY if rng.random() < self.p_healthy else FAILING), rng.random() < self.p_stuck

    def submit(self, service: str, version: str) -> dict[str, Any]:
        """Accept a rollout: the answer is 202 and a deployment id, never the outcome."""
        deployment_id = f"dep-{len(self.rollouts) + 1}"
        fate, stuck = self.fate(version)
        settles = None if stuck else self.now + self.settle_seconds
        self.rollouts[deployment_id] = Rollout(deployment_id, service, version, self.now, settles, fate)
        self.live[service] = deployment_id
        self.now += 0.2                       # accepting is fast
        return {"http_status": 202, "deployment_id": deployment_id}

    def health(self, deployment_id: str) -> str:
        """``pending`` until the rollout settles, then ``healthy`` or ``failing``."""
        rollout = self.rollouts[deployment_id]
        if rollout.settles_at is None or self.now < rollout.settles_at:
            return PENDING
        return rollout.fate

    def wait_settled(self, deployment_id: str, max_wait: float, poll: float = 5.0) -> tuple[str, float]:
        """Poll health every ``poll`` simulated seconds, up to ``max_wait``; returns (health, waited)."""
        waited = 0.0
        while (state := self.health(deployment_id)) == PENDING and waited < max_wait:
            self.now += poll
            waited += poll
        return state, waited

    def settle_all(self) -> None:
        """Let simulated time pass until every rollout that can settle has settled."""
        ends = [r.settles_at for r in self.rollouts.values() if r.settles_at is not None]
        self.now = max([self.now, *ends])

    def live_health(self, service: str) -> str:
        deployment_id = self.live.get(service)
        return self.health(deployment_id) if deployment_id else "not deployed"


SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "pattern": r"^[a-z][a-z0-9-]{0,40}$"},
        "version": {"type": "string", "pattern": r"^v\d{1,6}$"},
    },
    "required": ["service", "version"],
    "additionalProperties": False,
}


# ------------------------------------------------------------------ the gamed contract
def accepted_adapter(arguments: dict, world: DeployService) -> dict[str, Any]:
    """Submit and return at once: the HTTP status is all the caller learns."""
    answer = world.submit(arguments["service"], arguments["version"])
    return {**answer, "evidence": {"http_status": answer["http_status"]}}


def _accepted(arguments: dict, output: Any, world: Any) -> bool:
    return isinstance(output, dict) and output.get("http_status") in (200, 201, 202)


DEPLOY_ACCEPTED = Contract(
    name="deploy",
    description="Deploy a version of a service.",
    schema=SCHEMA,
    permissions=("deploy.write",),
    postconditions=(Condition("accepted", "the deploy API answered 2xx (202 Accepted counts)", _accepted),),
    cost=1.0, risk=3.0, reversible=True, retry=Retry.SAFE, risk_category="production service",
    evidence=("HTTP status",),
)


# ------------------------------------------------------------------ the repaired contract
MAX_SETTLE_WAIT = 60.0


def settled_adapter(arguments: dict, world: DeployService) -> dict[str, Any]:
    """Submit, wait for the rollout to settle, and return the settled health as evidence.

    A rollout still pending after ``MAX_SETTLE_WAIT`` seconds is a timeout:
    it was accepted, but whether it works is unknown.
    """
    answer = world.submit(arguments["service"], arguments["version"])
    health, waited = world.wait_settled(answer["deployment_id"], MAX_SETTLE_WAIT)
    if health == PENDING:
        raise ToolFailure(Status.TIMEOUT, "not_settled",
                          f"accepted as {answer['deployment_id']} but not settled after {waited:g}s",
                          FailureClass.TIMEOUT)
    evidence = {"http_status": answer["http_status"], "deployment_id": answer["deployment_id"],
                "settled_health": health, "settled_after_s": waited}
    return {**answer, "settled_health": health, "evidence": evidence}


def _settled_healthy(arguments: dict, output: Any, world: Any) -> bool:
    """Check the world, not the adapter's word: the deployment itself must be healthy now."""
    if not isinstance(output, dict) or "deployment_id" not in output:
        return False
    return world.health(output["deployment_id"]) == HEALTHY


DEPLOY_SETTLED = Contract(
    name="deploy",
    description="Deploy a version of a service; succeeds only when the rollout has settled healthy.",
    schema=SCHEMA,
    permissions=("deploy.write",),
    postconditions=(Condition("settled_healthy", "the service reports healthy after the rollout settled",
                              _settled_healthy),),
    cost=1.0, risk=3.0, reversible=True, retry=Retry.SAFE, risk_category="production service",
    evidence=("HTTP status", "settled health"),
)

DEPLOYER = Caller("agent-427", frozenset({"deploy.write"}))


def deploy_host(repaired: bool, world: DeployService) -> Host:
    """A host that declares only ``deploy`` (no raw HTTP tool to go around it)."""
    tool = Tool(DEPLOY_SETTLED, settled_adapter) if repaired else Tool(DEPLOY_ACCEPTED, accepted_adapter)
    return Host.of([tool], DEPLOYER, world)


# ------------------------------------------------------------------ the episode
def rushed_versions(count: int, start: int = 1) -> list[str]:
    """Agent-427's fast pushes: a new version per call, ``v1``, ``v2``, ..."""
    return [f"v{i}" for i in range(start, start + count)]


def run_deploy_episode(repaired: bool, versions: Iterable[str], service: str = "site", seed: int = 431) -> list[dict]:
    """Deploy each version in turn; one row per call with the metric and the truth side by side.

    ``successful_calls`` is what the tool reports (cumulative); ``settled_healthy``
    is what an independent probe sees once every rollout has had time to settle
    (cumulative), and ``live`` the settled health of whatever is serving after
    that call.
    """
    from toolkit.kernel import request

    world = DeployService(seed=seed)
    host = deploy_host(repaired, world)
    rows, reported, healthy = [], 0, 0
    for i, version in enumerate(versions, 1):
        result = host.execute(request("deploy", {"service": service, "version": version}, call_id=f"deploy_{i}"))
        reported += result.ok
        probe = replace(world, rollouts=dict(world.rollouts), live=dict(world.live))
        probe.settle_all()                                   # the truth, seen later by someone else
        deployment_id = world.live[service]
        fate = probe.health(deployment_id)
        healthy += fate == HEALTHY
        rows.append({"call": i, "version": version, "status": result.status.value,
                     "reason": result.reason, "successful_calls": reported, "settled_healthy": healthy,
                     "live": probe.live_health(service)})
    return rows


def compare_adapters(calls: int = 12, seed: int = 431) -> dict[str, dict[str, int]]:
    """The same pushes under both contracts: what the metric says, and what is true."""
    out = {}
    for name, repaired in (("accepted_is_success", False), ("settled_postcondition", True)):
        rows = run_deploy_episode(repaired, rushed_versions(calls), seed=seed)
        out[name] = {"calls": len(rows), "successful_calls": rows[-1]["successful_calls"],
                     "settled_healthy": rows[-1]["settled_healthy"],
                     "timeouts": sum(r["status"] == "timeout" for r in rows),
                     "failed": sum(r["status"] == "failed" for r in rows)}
    return out


def table(rows: list[dict]) -> list[str]:
    """Rows as aligned text lines for a notebook."""
    lines = [f"{'call':>4} {'version':<8} {'status':<10} {'successful_calls':>16} {'settled_healthy':>15}  live"]
    lines += [f"{r['call']:>4} {r['version']:<8} {r['status']:<10} {r['successful_calls']:>16} "
              f"{r['settled_healthy']:>15}  {r['live']}" for r in rows]
    return lines


__all__ = ["DEPLOYER", "DEPLOY_ACCEPTED", "DEPLOY_SETTLED", "DeployService", "HEALTHY", "FAILING", "PENDING",
           "Rollout", "accepted_adapter", "compare_adapters", "deploy_host", "run_deploy_episode", "rushed_versions",
           "settled_adapter", "table"]
