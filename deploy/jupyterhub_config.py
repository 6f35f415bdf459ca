"""JupyterHub for a class on one machine: one shared password, the course start page, one shared billing service.

    COURSE_CLASS_PASSWORD=... COURSE_ADMIN_TOKEN=... python -m jupyterhub -f deploy/jupyterhub_config.py

Run it from the course's environment (the one where ``pip install -e ".[class]"`` ran): the single-user
server, the proxy and the billing service are the executables next to this Python. Settings come from
environment variables (INSTRUCTORS.md, "Running a class"):

    COURSE_CLASS_PASSWORD   the password every student logs in with (8 characters or more; required)
    COURSE_ADMIN_TOKEN      an API token with the hub's admin role, for the instructor's tools (optional)
    COURSE_HUB_PORT         the port students open (default 8000)
    COURSE_HUB_IP           the address it listens on (default 127.0.0.1; 0.0.0.0 opens it to the room's network)
    COURSE_HUB_STATE_DIR    the hub's database, cookie secret, proxy token, the billing books and the students'
                            folders (default: .class-hub/ in the course folder)
    COURSE_HUB_API_PORT, COURSE_PROXY_API_PORT, COURSE_BILLING_PORT
                            the three internal ports on 127.0.0.1 (default 8081, 8001, 8002)

Every student's server runs as the user who started the hub (SimpleLocalProcessSpawner), each in a
folder of its own under the state folder holding a copy of the course's notebooks and exercises. That
isolates nobody: it is for one trusted room, or a test. The billing service is a hub-managed service,
reached by every kernel through the proxy at COURSE_BILLING_URL
(http://127.0.0.1:<port>/services/billing/); it knows each caller from their hub token, so a student
sees and tags only their own invoices, and the admin token (the dashboard's) sees them all.
"""
import os
import secrets
import shutil
import sys
from pathlib import Path

COURSE = Path(__file__).resolve().parent.parent          # the course folder (this file is deploy/jupyterhub_config.py)
BIN = Path(sys.executable).parent                       # the course environment's executables
START_PAGE = "notebooks/00_start_here.ipynb"
STUDENT_COPY = ("notebooks", "exercises", "pyproject.toml")   # what each student's folder starts with

c = get_config()  # noqa: F821 - JupyterHub's config loader defines get_config


def _setting(name, default=None):
    value = os.environ.get(name, "").strip()
    return value if value else default


def _port(name, default):
    value = _setting(name, str(default))
    if not value.isdigit() or not 0 < int(value) < 65536:
        sys.exit(f"jupyterhub_config: {name} must be a port number (1-65535), not {value!r}")
    return int(value)


def _kept_secret(path, size=32):
    """A secret generated once and kept in the state folder (readable by this user only)."""
    if not path.exists():
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(secrets.token_hex(size))    # created readable by this user only, never wider
    return path.read_text().strip()


# ---------------------------------------------------------------- settings
password = _setting("COURSE_CLASS_PASSWORD")
if not password or len(password) < 8:
    sys.exit("jupyterhub_config: set COURSE_CLASS_PASSWORD to the class's password (8 characters or more) "
             "before starting the hub; every student logs in with it (see INSTRUCTORS.md, 'Running a class')")
admin_token = _setting("COURSE_ADMIN_TOKEN")
if admin_token is not None and len(admin_token) < 16:
    sys.exit("jupyterhub_config: COURSE_ADMIN_TOKEN must be at least 16 characters (try: openssl rand -hex 32)")
hub_ip = _setting("COURSE_HUB_IP", "127.0.0.1")
hub_port = _port("COURSE_HUB_PORT", 8000)
hub_api_port = _port("COURSE_HUB_API_PORT", 8081)
proxy_api_port = _port("COURSE_PROXY_API_PORT", 8001)
billing_port = _port("COURSE_BILLING_PORT", 8002)
state = Path(_setting("COURSE_HUB_STATE_DIR", str(COURSE / ".class-hub"))).expanduser().resolve()
state.mkdir(parents=True, exist_ok=True)
(state / "students").mkdir(exist_ok=True)

# ---------------------------------------------------------------- the hub, its proxy, its state
c.JupyterHub.bind_url = f"http://{hub_ip}:{hub_port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{hub_api_port}"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}    # a spawn request answers 202 at once
# A room starting at once on a small machine: 20 servers took 37 s on 2 cores; give a busy machine room before a
# spawn counts as failed (JupyterHub's defaults are 60 s to start and 30 s to answer).
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120
c.JupyterHub.proxy_class = "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy")]   # the Python proxy: no node
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.auth_token = _kept_secret(state / "proxy_auth_token")
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

# ---------------------------------------------------------------- who gets in
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = password
c.Authenticator.allow_all = True          # any name with the class's password; each name is one student
# The login page says what to type, and what a student's folder holds: the start page speaks of
# solutions/, which stays with the instructor (a student's folder gets STUDENT_COPY only).
LOGIN_NOTE = (
    "<strong>Username:</strong> any name you choose (your first name will do); the same name "
    "brings back your own folder next time, and the class's tally counts you under it. "
    "<strong>Password:</strong> the class password your instructor gives you.<br>"
    "Your folder holds the chapters (<code>notebooks/</code>) and the exercises "
    "(<code>exercises/</code>). The worked solutions the start page mentions "
    "(<code>solutions/</code>) are not on this hub: your instructor shares them after the "
    "exercises.")
c.JupyterHub.template_vars = {"announcement_login": LOGIN_NOTE}

# ---------------------------------------------------------------- each student's server
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "students" / "{username}")
c.Spawner.notebook_dir = str(state / "students" / "{username}")
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = f"/lab/tree/{START_PAGE}"
c.Spawner.args = [f"--LabApp.app_settings_dir={COURSE / 'lab-settings'}",
                  "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
if hasattr(os, "geteuid") and os.geteuid() == 0:
    c.Spawner.args.append("--allow-root")   # a container or classroom VM run as root; jupyter refuses otherwise
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV", "CONDA_ROOT", "LANG", "LC_ALL",
                      "LD_LIBRARY_PATH", "JUPYTERHUB_SINGLEUSER_APP", "JUPYTER_PATH", "JUPYTER_PLATFORM_DIRS",
                      "PYTHONDONTWRITEBYTECODE"]
billing_url = _setting("COURSE_BILLING_URL") or \
    f"http://{'127.0.0.1' if hub_ip in ('', '0.0.0.0', '::', 'localhost') else hub_ip}:{hub_port}/services/billing/"
c.Spawner.environment = {"COURSE_BILLING_URL": billing_url}   # JUPYTERHUB_USER names the student


def copy_course(spawner):
    """A student's first start: their folder gets its own copy of the notebooks and exercises (never overwritten)."""
    home = Path(spawner.home_dir)
    home.mkdir(parents=True, exist_ok=True)
    for name in STUDENT_COPY:
        source, target = COURSE / name, home / name
        if target.exists() or not source.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        else:
            shutil.copy2(source, target)


c.Spawner.pre_spawn_hook = copy_course

# ---------------------------------------------------------------- the shared billing service, run by the hub
# It asks the hub who calls (every request shows a hub token, on the proxy's path and on its own
# port alike), tags each invoice with the caller and shows a student only their own; the admin
# token sees every invoice. It runs under its own supervisor (--restart), which reaps it and starts
# it again at once if it dies: the hub itself notices a dead service only on its 30 s poll.
BILLING = "billing"
c.JupyterHub.services = [{
    "name": BILLING,
    "url": f"http://127.0.0.1:{billing_port}",
    "command": [sys.executable, "-m", "course.worlds.billing_http", "serve", "--db", str(state / "billing.db"),
                "--port", str(billing_port), "--prefix", f"/services/{BILLING}/",
                "--hub-auth", "--restart"],
    "cwd": str(COURSE),
    "display": False,
}]
# A student's own tokens, and their server's token (which their kernels inherit), may call billing.
c.JupyterHub.load_roles = [{"name": "user",
                            "scopes": ["self", f"access:services!service={BILLING}"]}]
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server",
                                 f"access:services!service={BILLING}"]
if admin_token:
    c.JupyterHub.services.append({"name": "course-admin", "api_token": admin_token})
    c.JupyterHub.load_roles.append({"name": "admin", "services": ["course-admin"]})
