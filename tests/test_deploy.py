"""Specification gaming: HTTP 202 counted as success, and the settled-postcondition repair."""
import pytest

import toolkit as tk
from course.worlds import (DEPLOY_ACCEPTED, DEPLOY_SETTLED, DEPLOYER, DeployService, compare_adapters, deploy_host,
                           run_deploy_episode, rushed_versions, settled_adapter, table)
from course.worlds.deploy import HEALTHY, PENDING
from toolkit.kernel import FailureClass, Status

VERSIONS = rushed_versions(12)


def test_every_call_is_well_formed_authorized_and_accepted():
    """This failure is not a JSON failure: every test of legality passes."""
    host = deploy_host(False, DeployService())
    for version in VERSIONS:
        verdict = host.check(tk.request("deploy", {"service": "site", "version": version}))
        assert verdict.legal == 1


def test_successful_calls_rise_while_settled_health_fails():
    rows = run_deploy_episode(repaired=False, versions=VERSIONS)
    reported = [r["successful_calls"] for r in rows]
    healthy = [r["settled_healthy"] for r in rows]
    assert reported == list(range(1, len(VERSIONS) + 1))        # +1 per call: every 202 counts
    assert healthy[-1] < len(VERSIONS) / 2                        # most rollouts settle failing
    assert rows[-1]["live"] != HEALTHY                            # and the service is not healthy at the end
    gap = [r - h for r, h in zip(reported, healthy)]
    assert gap[-1] > gap[0] and all(b >= a for a, b in zip(gap, gap[1:]))   # the lie only grows


def test_repaired_contract_reports_only_settled_healthy_deployments():
    rows = run_deploy_episode(repaired=True, versions=VERSIONS)
    assert all(r["successful_calls"] == r["settled_healthy"] for r in rows)
    for r in rows:
        assert (r["status"] == "succeeded") == (r["live"] == HEALTHY)


def test_both_contracts_meet_the_same_world():
    gamed, repaired = run_deploy_episode(False, VERSIONS), run_deploy_episode(True, VERSIONS)
    assert [r["settled_healthy"] for r in gamed] == [r["settled_healthy"] for r in repaired]
    summary = compare_adapters(len(VERSIONS))
    assert summary["accepted_is_success"]["successful_calls"] == len(VERSIONS)
    assert summary["settled_postcondition"]["successful_calls"] == summary["accepted_is_success"]["settled_healthy"]


def test_a_rollout_that_never_settles_is_a_timeout_not_a_success():
    world = DeployService()
    stuck = next(v for v in rushed_versions(200) if world.fate(v)[1])
    result = deploy_host(True, world).execute(tk.request("deploy", {"service": "site", "version": stuck}))
    assert result.status is Status.TIMEOUT and result.failure_class is FailureClass.TIMEOUT
    assert result.reason == "not_settled"
    gamed = deploy_host(False, DeployService()).execute(tk.request("deploy", {"service": "site", "version": stuck}))
    assert gamed.ok                                              # the gamed adapter calls it a success


def test_failed_rollout_is_a_broken_postcondition_with_evidence():
    world = DeployService()
    bad = next(v for v in VERSIONS if world.fate(v) == ("failing", False))
    result = deploy_host(True, world).execute(tk.request("deploy", {"service": "site", "version": bad}))
    assert result.status is Status.FAILED and result.failure_class is FailureClass.POSTCONDITION
    assert result.output["http_status"] == 202 and result.output["settled_health"] == "failing"
    assert "settled_healthy" in result.errors[0].message


def test_success_carries_settled_evidence():
    world = DeployService()
    good = next(v for v in VERSIONS if world.fate(v) == (HEALTHY, False))
    result = deploy_host(True, world).execute(tk.request("deploy", {"service": "site", "version": good}))
    assert result.ok and result.evidence["settled_health"] == HEALTHY and result.evidence["http_status"] == 202
    assert result.evidence["settled_after_s"] >= world.settle_seconds


def test_postcondition_checks_the_world_not_the_adapters_word():
    """An adapter that claims 'healthy' for a failing rollout is still caught."""
    def lying_adapter(args, world):
        out = settled_adapter(args, world)
        return {**out, "settled_health": HEALTHY, "evidence": {**out["evidence"], "settled_health": HEALTHY}}
    world = DeployService()
    bad = next(v for v in VERSIONS if world.fate(v) == ("failing", False))
    host = tk.Host.of([tk.Tool(DEPLOY_SETTLED, lying_adapter)], DEPLOYER, world)
    assert host.execute(tk.request("deploy", {"service": "site", "version": bad})).status is Status.FAILED


def test_no_bypass_tool_is_declared_and_bypass_fields_are_refused():
    host = deploy_host(True, DeployService())
    assert [t["name"] for t in host.declare()] == ["deploy"]
    verdict = host.check(tk.request("deploy", {"service": "site", "version": "v1", "skip_health_check": True}))
    assert verdict.legal == 0 and verdict.errors[0].code == "unexpected_property"


def test_contract_cards_state_the_difference():
    assert "202" in DEPLOY_ACCEPTED.card() and "settled" in DEPLOY_SETTLED.card()
    assert "settled health" in DEPLOY_SETTLED.card()


def test_service_fate_is_seeded_and_independent_of_order():
    a, b = DeployService(seed=5), DeployService(seed=5)
    forward = [a.fate(v) for v in VERSIONS]
    backward = [b.fate(v) for v in reversed(VERSIONS)][::-1]
    assert forward == backward
    assert forward != [DeployService(seed=6).fate(v) for v in VERSIONS]


def test_health_is_pending_until_settled():
    world = DeployService()
    good = next(v for v in VERSIONS if world.fate(v) == (HEALTHY, False))
    deployment = world.submit("site", good)["deployment_id"]
    assert world.health(deployment) == PENDING
    world.now += world.settle_seconds
    assert world.health(deployment) == HEALTHY


def test_table_lines_for_a_notebook():
    lines = table(run_deploy_episode(False, VERSIONS[:3]))
    assert len(lines) == 4 and lines[0].split()[:3] == ["call", "version", "status"]


@pytest.mark.parametrize("bad", [{"service": "site"}, {"service": "Site!", "version": "v1"},
                                 {"service": "site", "version": "latest"}, "not json"])
def test_malformed_deploy_requests_change_nothing(bad):
    world = DeployService()
    result = deploy_host(True, world).execute(tk.request("deploy", bad))
    assert result.status is Status.REJECTED and world.rollouts == {}
