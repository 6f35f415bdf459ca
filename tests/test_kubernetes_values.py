"""The class on a cluster: deploy/kubernetes/values.yaml against the Zero to JupyterHub chart's
published values schema (kept in deploy/kubernetes/chart-schema/, validated offline), and the
billing Deployment and PostgreSQL it points to."""
from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
KUBE = ROOT / "deploy" / "kubernetes"
SCHEMA = KUBE / "chart-schema" / "values.schema.yaml"
DEFAULTS = KUBE / "chart-schema" / "values.yaml"
#: Measured on one machine: a student's single-user server and one kernel, RSS.
STUDENT_MIB = 210
UNITS = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}


def quantity(text: str | int) -> int:
    """Bytes in a Kubernetes memory quantity such as 256M or 1Gi."""
    number, unit = re.fullmatch(r"(\d+)([KMG]i?)?", str(text)).groups()
    return int(number) * UNITS[unit or ""]


def values() -> dict:
    return yaml.safe_load((KUBE / "values.yaml").read_text())


def merged(defaults: dict, given: dict) -> dict:
    """What Helm validates: the chart's defaults with the given values over them (maps merged key
    by key, anything else replaced, a null removing the key)."""
    out = dict(defaults)
    for key, value in given.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def installed(given: dict) -> dict:
    return merged(yaml.safe_load(DEFAULTS.read_text()), given)


def manifests(name: str) -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all((KUBE / name).read_text()) if d}


def validator() -> jsonschema.Draft7Validator:
    schema = yaml.safe_load(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_the_schema_is_the_charts_own_kept_with_its_license_and_source():
    text = SCHEMA.read_text()
    defaults = yaml.safe_load(DEFAULTS.read_text())
    assert defaults["singleuser"]["memory"] == {"limit": None, "guarantee": "1G"}
    assert len(text.encode()) == 134_122 and text.count("\n") == 3221
    assert not re.search(r"\$ref:\s*['\"]?https?:", text), "nothing to fetch: it stays offline"
    license_text = (KUBE / "chart-schema" / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License") and "Apache License" in license_text
    source = (KUBE / "chart-schema" / "SOURCE.md").read_text()
    assert "48ea50e34daddde55d76e30df6ecd47e4abd4d8e" in source


def test_the_values_file_is_valid_for_the_chart():
    assert list(validator().iter_errors(values())), "alone it lacks the chart's defaults"
    errors = sorted(validator().iter_errors(installed(values())), key=lambda e: list(e.path))
    assert not errors, [f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors]


@pytest.mark.parametrize("path, bad", [(("singleuser", "memory", "limt"), "512M"),
                                       (("hub", "db", "type"), "sqlite-file"),
                                       (("singleuser", "image", "tag"), 2026)])
def test_the_schema_refuses_what_the_chart_would_not_take(path, bad):
    broken = values()
    node = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = bad
    assert not list(validator().iter_errors(installed(values())))
    assert list(validator().iter_errors(installed(broken))), f"{path} = {bad!r} is refused"


def test_each_student_gets_the_measured_memory_and_room_for_more():
    memory = values()["singleuser"]["memory"]
    guarantee, limit = quantity(memory["guarantee"]), quantity(memory["limit"])
    assert STUDENT_MIB * 1024**2 < guarantee < limit, "at least what a student was seen using"
    assert limit >= 2 * STUDENT_MIB * 1024**2


def test_the_billing_service_is_a_hub_service_in_a_deployment_of_its_own():
    hub = values()["hub"]
    found = manifests("billing.yaml")
    service, deployment = found["Service"], found["Deployment"]
    port = service["spec"]["ports"][0]["port"]
    assert hub["services"]["billing"]["url"] == f"http://{service['metadata']['name']}:{port}"
    assert "access:services!service=billing" in hub["loadRoles"]["user"]["scopes"]
    assert "access:services!service=billing" in hub["config"]["Spawner"]["server_token_scopes"]
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    command = container["command"]
    assert command[:3] == ["python", "-m", "course.worlds.billing_http"] and "--hub-auth" in command
    assert command[command.index("--port") + 1] == str(port) and "--restart" not in command
    env = {e["name"]: e for e in container["env"]}
    token = env["JUPYTERHUB_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert token == {"name": "hub", "key": "hub.services.billing.apiToken"}
    assert pod["metadata"]["labels"]["hub.jupyter.org/network-access-hub"] == "true"
    label = pod["metadata"]["labels"]["app.kubernetes.io/name"]
    given = values()
    for rules in (given["singleuser"]["networkPolicy"]["egress"],
                  given["proxy"]["chp"]["networkPolicy"]["egress"]):
        assert any(r["to"][0]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": label}
                   and r["ports"][0]["port"] == port for r in rules)
    url = given["singleuser"]["extraEnv"]["COURSE_BILLING_URL"]
    assert url == f"http://billing:{port}/services/billing/"


def test_the_hub_keeps_its_state_in_the_postgresql_of_postgres_yaml():
    db = values()["hub"]["db"]
    found = manifests("postgres.yaml")
    name, port = found["Service"]["metadata"]["name"], found["Service"]["spec"]["ports"][0]["port"]
    assert db["type"] == "postgres" and f"@{name}:{port}/" in db["url"] and "password" not in db
    (container,) = found["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert db["url"].endswith("/" + env["POSTGRES_DB"]["value"])
    assert "valueFrom" in env["POSTGRES_PASSWORD"], "the password comes from a Secret"
