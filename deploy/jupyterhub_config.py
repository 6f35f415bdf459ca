"""JupyterHub for a class on one machine: one shared password, the course start page, one shared billing service.

    COURSE_CLASS_PASSWORD=... COURSE_ADMIN_TOKEN=... python -m jupyterhub -f deploy/jupyterhub_config.py

Run it from the course's environment (the one where ``pip install -e ".[class]"`` ran): the single-user
server, the proxy and the billing service are the executables next to this Python. Settings come from
environment variables (INSTRUCTORS.md, "Running a class"):

    COURSE_CLASS_PASSWORD   the password every student logs in with (8 characters or more; required)
    COURSE_ADMIN_TOKEN      an API token with the hub's admin role, for the instructor's tools (optional)
    COURSE_HUB_PORT         the port students open (default 8000)
    COURSE_HUB_IP           the address it listens on (default 127.0.0.1; 0.0.0.0 opens it to the room's network)
    COURSE_HUB_STATE_DIR    the hub's database, cookie secret, proxy token, the billing books
                            (and, shared, the students' folders) (default: .class-hub/ in the
                            course folder)
    COURSE_HUB_ISOLATION    "users": one Unix user per student (the default when the hub runs
                            as root); "shared": every student runs as the hub's user (the
                            default otherwise)
    COURSE_STUDENT_GROUP    the Unix group of the students the hub creates (default course-students)
    COURSE_HUB_API_PORT, COURSE_PROXY_API_PORT, COURSE_BILLING_PORT
                            the three internal ports on 127.0.0.1 (default 8081, 8001, 8002)

Students apart ("users", as root): the hub creates a Unix user for each new student name (adduser, a
home /home/<name> of mode 0700, the group COURSE_STUDENT_GROUP) and runs their server and kernels as
that user; a name that is already a user of this machine and not in that group (root, a service, a
colleague) cannot log in. The course's Python and folder must be open to every user (e.g.
under /opt, not /root). The state folder is the hub's alone (0700, its files 0600); the admin
token and the class password leave the hub's environment once read, so neither the proxy nor
the services inherit them; no secret is put on a command line (every user may read those). A
student's folder starts as a copy of the course made by the student's own user.

Shared ("shared", a laptop demo): every student's server runs as the user who started the hub
(SimpleLocalProcessSpawner), each in a folder of its own under the state folder. That isolates
nobody: any student can read and change everyone's files and the hub's state. Use it for one
trusted room on your own machine, or a test.

The billing service is a hub-managed service, run as the hub's user, reached by every kernel
through the proxy at COURSE_BILLING_URL (http://127.0.0.1:<port>/services/billing/); it knows each
caller from their hub token, so a student sees and tags only their own invoices, and the admin token
(the dashboard's) sees them all. Kernels get CurveZMQ keys from their server
(--KernelManager.transport_encryption=auto, as scripts/open_course.py): encrypted kernel sockets.
"""
import asyncio
import grp
import os
import pwd
import runpy
import secrets
import stat
import subprocess
import sys
from pathlib import Path

COURSE = Path(__file__).resolve().parent.parent          # the course folder (this file is deploy/jupyterhub_config.py)
BIN = Path(sys.executable).parent                       # the course environment's executables
START_PAGE = "notebooks/00_start_here.ipynb"
STUDENT_COPY = ("notebooks", "exercises", "pyproject.toml")   # what each student's folder starts with
STUDENT_FOLDER = COURSE / "deploy" / "student_folder.py"    # copies them, as the student
ISOLATION = ("users", "shared")
#: A student's name: a Unix user name adduser accepts (its NAME_REGEX), lower case; at most 32.
STUDENT_NAME = r"^[a-z][a-z0-9_-]{0,31}$"

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


def _private_file(path):
    """``path`` exists, readable and writable by this user only (SQLite gives its journals the
    same mode)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    os.chmod(path, 0o600)
    return path


def closed_to_others(path):
    """The first folder or file on the way to ``path`` that a user other than its owner cannot pass
    (or read), or None when every user can reach and read ``path``."""
    path = Path(os.path.realpath(path))
    for step in (*reversed(path.parents), path):
        mode = os.stat(step).st_mode
        needed = stat.S_IXOTH if step != path or stat.S_ISDIR(mode) else stat.S_IROTH
        if not mode & needed:
            return step
    return None


# ---------------------------------------------------------------- settings
password = _setting("COURSE_CLASS_PASSWORD")
if not password or len(password) < 8:
    sys.exit("jupyterhub_config: set COURSE_CLASS_PASSWORD to the class's password (8 characters or more) "
             "before starting the hub; every student logs in with it (see INSTRUCTORS.md, 'Running a class')")
admin_token = _setting("COURSE_ADMIN_TOKEN")
if admin_token is not None and len(admin_token) < 16:
    sys.exit("jupyterhub_config: COURSE_ADMIN_TOKEN must be at least 16 characters (try: openssl rand -hex 32)")
for _secret in ("COURSE_CLASS_PASSWORD", "COURSE_ADMIN_TOKEN"):
    os.environ.pop(_secret, None)     # read: the proxy and the services never inherit it
as_root = hasattr(os, "geteuid") and os.geteuid() == 0
isolation = _setting("COURSE_HUB_ISOLATION", "users" if as_root else "shared")
if isolation not in ISOLATION:
    sys.exit(f"jupyterhub_config: COURSE_HUB_ISOLATION is 'users' or 'shared', not {isolation!r}")
APART = isolation == "users"
if APART and not as_root:
    sys.exit("jupyterhub_config: COURSE_HUB_ISOLATION=users needs a hub run as root (it creates "
             "a Unix user per student and starts their servers as them); without root, set it to "
             "'shared', which isolates nobody")
student_group = _setting("COURSE_STUDENT_GROUP", "course-students")
hub_ip = _setting("COURSE_HUB_IP", "127.0.0.1")
hub_port = _port("COURSE_HUB_PORT", 8000)
hub_api_port = _port("COURSE_HUB_API_PORT", 8081)
proxy_api_port = _port("COURSE_PROXY_API_PORT", 8001)
billing_port = _port("COURSE_BILLING_PORT", 8002)
state = Path(_setting("COURSE_HUB_STATE_DIR", str(COURSE / ".class-hub"))).expanduser().resolve()
state.mkdir(mode=0o700, parents=True, exist_ok=True)
os.chmod(state, 0o700)                # the hub's alone: database, cookie secret, proxy token, books
if APART and os.stat(state).st_uid != os.geteuid():
    sys.exit(f"jupyterhub_config: the state folder {state} must belong to the hub's user (root)")
if not APART:
    (state / "students").mkdir(exist_ok=True)
if APART:                           # said at once; a student's start then fails saying the same
    for _shared in (sys.executable, sys.prefix, sys.base_prefix, COURSE):
        _closed = closed_to_others(_shared)
        if _closed is not None:
            print(f"jupyterhub_config: students cannot reach {_shared}: {_closed} is closed to "
                  "other users. Install the course's environment and folder where every user can "
                  "read them (e.g. /opt/course), or COURSE_HUB_ISOLATION=shared for a demo",
                  file=sys.stderr)
            break

# ---------------------------------------------------------------- the hub, its proxy, its state
c.JupyterHub.bind_url = f"http://{hub_ip}:{hub_port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{hub_api_port}"
c.JupyterHub.db_url = f"sqlite:///{_private_file(state / 'jupyterhub.sqlite')}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")   # the hub makes it 0600
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}    # a spawn request answers 202 at once
# A room starting at once on a small machine: 20 servers took 37 s on 2 cores; give a busy machine room before a
# spawn counts as failed (JupyterHub's defaults are 60 s to start and 30 s to answer).
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120
c.JupyterHub.proxy_class = "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy")]   # the Python proxy: no node
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.auth_token = _kept_secret(state / "proxy_auth_token")   # given in its env
c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

# ---------------------------------------------------------------- who gets in
c.Authenticator.allow_all = True          # any name with the class's password; each name is one student
if APART:
    from jupyterhub.auth import LocalAuthenticator
    from jupyterhub.authenticators.shared import SharedPasswordAuthenticator

    class ClassStudents(LocalAuthenticator, SharedPasswordAuthenticator):
        """The class password; each student a Unix user the hub made, in the students' group."""

        def is_student(self, name):
            """True for a name that is no user or group of this machine yet (the hub makes
            both), or a user in the students' group."""
            try:
                account = pwd.getpwnam(name)
            except KeyError:
                try:
                    grp.getgrnam(name)          # sudo, adm, staff...: never a student's own group
                except KeyError:
                    return True
                return False
            try:
                group = grp.getgrnam(student_group)
            except KeyError:
                return False
            return name in group.gr_mem or account.pw_gid == group.gr_gid

        def check_blocked_users(self, username, authentication=None):
            """Blocked: a user of this machine who is no student (allow_all skips check_allowed)."""
            return self.is_student(username) and \
                super().check_blocked_users(username, authentication)

        async def add_user(self, user):
            if not self.is_student(user.name):
                raise ValueError(f"{user.name} is a user of this machine, not a student here")
            await super().add_user(user)

        def add_system_user(self, user):
            """adduser (home 0700), then the students' group (made on first use)."""
            try:
                grp.getgrnam(student_group)
            except KeyError:
                subprocess.run(["groupadd", "--system", student_group], check=True)
            super().add_system_user(user)
            subprocess.run(["usermod", "--append", "--groups", student_group, user.name],
                           check=True)
            os.chmod(pwd.getpwnam(user.name).pw_dir, 0o700)   # whatever adduser's DIR_MODE says

    c.JupyterHub.authenticator_class = ClassStudents
    c.LocalAuthenticator.create_system_users = True
    c.Authenticator.username_pattern = STUDENT_NAME
    c.ClassStudents.user_password = password
    NAME_NOTE = ("your first name in lower-case letters (digits, - and _ may follow); the same "
                 "name brings back your own folder next time, which only you can open")
else:
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = password
    NAME_NOTE = ("any name you choose (your first name will do); the same name brings back your "
                 "own folder next time")
# The login page says what to type, and what a student's folder holds: the start page speaks of
# solutions/, which stays with the instructor (a student's folder gets STUDENT_COPY only).
LOGIN_NOTE = (
    f"<strong>Username:</strong> {NAME_NOTE}, and the class's tally counts you under it. "
    "<strong>Password:</strong> the class password your instructor gives you.<br>"
    "Your folder holds the chapters (<code>notebooks/</code>) and the exercises "
    "(<code>exercises/</code>). The worked solutions the start page mentions "
    "(<code>solutions/</code>) are not on this hub: your instructor shares them after the "
    "exercises.")
c.JupyterHub.template_vars = {"announcement_login": LOGIN_NOTE}

# ---------------------------------------------------------------- each student's server
if APART:
    c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"   # as the student's user
    c.LocalProcessSpawner.popen_kwargs = {"umask": 0o077}   # what they write (/tmp too) is theirs
else:
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(state / "students" / "{username}")
    c.Spawner.notebook_dir = str(state / "students" / "{username}")
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = f"/lab/tree/{START_PAGE}"
c.Spawner.args = [f"--LabApp.app_settings_dir={COURSE / 'lab-settings'}",
                  "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                  *runpy.run_path(str(COURSE / "scripts" / "open_course.py"))["kernel_options"]()]
if as_root and not APART:
    c.Spawner.args.append("--allow-root")   # shared, as root (a container): jupyter refuses else
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV", "CONDA_ROOT", "LANG", "LC_ALL",
                      "LD_LIBRARY_PATH", "JUPYTERHUB_SINGLEUSER_APP", "JUPYTER_PATH", "JUPYTER_PLATFORM_DIRS",
                      "PYTHONDONTWRITEBYTECODE"]
billing_url = _setting("COURSE_BILLING_URL") or \
    f"http://{'127.0.0.1' if hub_ip in ('', '0.0.0.0', '::', 'localhost') else hub_ip}:{hub_port}/services/billing/"
c.Spawner.environment = {"COURSE_BILLING_URL": billing_url}   # JUPYTERHUB_USER names the student


async def copy_course(spawner):
    """A student's start: their folder gets its own copy of the notebooks and exercises if it has
    none (never overwritten), made by deploy/student_folder.py run as the student (apart)."""
    name = spawner.user.name
    if APART:
        account = pwd.getpwnam(name)
        folder = account.pw_dir
        as_student = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [],
                      "umask": 0o077}
    else:
        folder, as_student = str(state / "students" / name), {}
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LD_LIBRARY_PATH") if k in os.environ}
    command = [sys.executable, str(STUDENT_FOLDER), str(COURSE), folder, *STUDENT_COPY]
    try:
        copying = await asyncio.create_subprocess_exec(
            *command, cwd="/", env={**env, "HOME": folder, "PYTHONDONTWRITEBYTECODE": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, **as_student)
        said = (await copying.communicate())[0].decode(errors="replace").strip()
    except PermissionError:
        copying, said = None, f"permission denied running {sys.executable}"
    if copying is None or copying.returncode != 0:
        raise RuntimeError(f"{name} cannot run the course's Python or read its folder "
                           f"({said[-400:]}); install the course where every user can read it "
                           "(INSTRUCTORS.md)")


c.Spawner.pre_spawn_hook = copy_course

# ---------------------------------------------------------------- the shared billing service, run by the hub
# It asks the hub who calls (every request shows a hub token, on the proxy's path and on its own
# port alike), tags each invoice with the caller and shows a student only their own; the admin
# token sees every invoice. It runs under its own supervisor (--restart), which reaps it and starts
# it again at once if it dies: the hub itself notices a dead service only on its 30 s poll. Its
# books are in the state folder (the hub's alone: no student may write them).
BILLING = "billing"
c.JupyterHub.services = [{
    "name": BILLING,
    "url": f"http://127.0.0.1:{billing_port}",
    "command": [sys.executable, "-m", "course.worlds.billing_http", "serve",
                "--db", str(_private_file(state / "billing.db")),
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
