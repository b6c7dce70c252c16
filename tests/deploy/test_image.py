"""The production image's file set starts: built as the Dockerfile builds it, it passes `manage check` and
`migrate` against PostgreSQL (no Docker engine runs here, so the Dockerfile's COPY lines and .dockerignore
are replayed into a temporary folder and the project is installed from there into a fresh venv)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

import pytest
from packaging.requirements import Requirement
from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]
LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"

pytestmark = pytest.mark.slow


# -- the Dockerfile and .dockerignore, replayed ------------------------------------------------


@dataclass(frozen=True)
class Copy:
    """One COPY step: build-context paths, and where they go in the image (into a folder, or as one file)."""

    sources: tuple[str, ...]
    dest: PurePosixPath
    into_folder: bool


@dataclass(frozen=True)
class ImagePlan:
    """What the Dockerfile does to the build context: its COPY steps and where it runs `pip install`."""

    copies: tuple[Copy, ...]
    install_dir: PurePosixPath


def _instructions(dockerfile: str) -> Iterator[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical = ""
    for line in dockerfile.splitlines():
        if line.lstrip().startswith("#"):
            continue
        logical += line.rstrip()
        if logical.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        if logical.strip():
            keyword, _, rest = logical.strip().partition(" ")
            yield keyword.upper(), rest.strip()
        logical = ""


def read_dockerfile(path: Path) -> ImagePlan:
    """The image plan of a one-stage Dockerfile that COPYs from the build context and pip-installs a folder."""
    workdir = PurePosixPath("/")
    copies: list[Copy] = []
    install_dir: PurePosixPath | None = None
    stages = 0
    for keyword, rest in _instructions(path.read_text()):
        if keyword == "FROM":
            stages += 1
        elif keyword == "WORKDIR":
            workdir = workdir / rest
        elif keyword == "ADD":
            raise AssertionError("the Dockerfile uses ADD; this test replays COPY only")
        elif keyword == "COPY":
            args = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
            flags = [a for a in args if a.startswith("--")]
            assert not any(f.startswith("--from") for f in flags), "COPY --from is not replayed by this test"
            *sources, dest = [a for a in args if not a.startswith("--")]
            folder = len(sources) > 1 or dest.endswith("/") or dest == "."
            copies.append(Copy(tuple(sources), workdir / dest, folder))
        elif keyword == "RUN" and "pip install" in rest:
            target = shlex.split(rest.split("pip install", 1)[1])[-1]
            install_dir = workdir / target
    assert stages == 1, "this test replays a one-stage Dockerfile"
    assert install_dir is not None, "the Dockerfile runs no `pip install DIR`"
    return ImagePlan(tuple(copies), install_dir)


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match plus `**`) as a regex over a slash-separated path."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            body = pattern[i + 1 : end]
            out, i = out + "[" + ("^" + body[1:] if body.startswith("^") else body) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def read_dockerignore(path: Path) -> list[re.Pattern[str]]:
    """The exclusion patterns of a .dockerignore (none if it is missing)."""
    if not path.exists():
        return []
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert not line.startswith("!"), "this test does not replay .dockerignore exceptions (!PATTERN)"
        patterns.append(_pattern_regex(os.path.normpath(line).lstrip("/")))
    return patterns


def context_files(context: Path, ignore: list[re.Pattern[str]]) -> list[str]:
    """Every file of the build context that `docker build` sends: an excluded folder is skipped whole."""
    kept: list[str] = []
    for folder, dirs, files in os.walk(context):
        rel = Path(folder).relative_to(context)
        dirs[:] = sorted(d for d in dirs if not any(p.match((rel / d).as_posix()) for p in ignore))
        for name in sorted(files):
            path = (rel / name).as_posix()
            if not any(p.match(path) for p in ignore):
                kept.append(path)
    return kept


def build_file_set(context: Path, root: Path, plan: ImagePlan, ignore: list[re.Pattern[str]]) -> None:
    """Copy into ``root`` (the image's /) what the plan's COPY steps copy from ``context``."""
    sent = context_files(context, ignore)
    for step in plan.copies:
        target = root / step.dest.relative_to("/")
        for source in step.sources:
            src = PurePosixPath(os.path.normpath(source))
            under = [f for f in sent if src == PurePosixPath(".") or f == str(src) or f.startswith(f"{src}/")]
            assert under, f"COPY {source}: nothing in the build context (or all of it in .dockerignore)"
            for f in under:
                if (context / src).is_dir():
                    out = target / PurePosixPath(f).relative_to(src) if str(src) != "." else target / f
                else:
                    out = target / src.name if step.into_folder else target
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(context / f, out)


def packages_in_pyproject(where: Path) -> set[str]:
    """Top-level packages that pyproject.toml's [tool.setuptools.packages.find] includes under ``where``."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    return {name.split(".")[0] for name in find_packages(where=str(where), include=config["include"])}


# -- a fresh venv that borrows the installed dependencies ---------------------------------------


@dataclass(frozen=True)
class Venv:
    """A venv with the project installed from an image file set."""

    path: Path
    site_packages: Path

    @property
    def bin(self) -> Path:
        """The venv's scripts folder."""
        return self.path / "bin"


def make_venv(path: Path, project: Path) -> Venv:
    """A venv without pip whose path ends with this environment's site-packages, and ``project`` installed.

    A plain path line in a .pth file is appended to sys.path without reading the .pth files there,
    so the dependencies import from this environment but its editable install of the project (a .pth
    finder that maps the packages to the checkout) stays inactive.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    here = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_borrowed_dependencies.pth").write_text("".join(f"{p}\n" for p in here))
    # --ignore-installed: the project's dist-info seen through the borrowed path is never uninstalled.
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--ignore-installed", "--disable-pip-version-check", str(project)],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return Venv(path, site)


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment less what would put the checkout or this venv first."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra)
    return env


def _hidden(url: str) -> str:
    return url.split("@")[-1]


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throwaway database on the test run's PostgreSQL (DATABASE_URL when postgres, else the local server)."""
    import psycopg2

    configured = os.environ.get("DATABASE_URL", "")
    server = configured if configured.startswith(("postgres://", "postgresql://")) else LOCAL_POSTGRES
    parts = urlsplit(server)
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    try:
        conn = psycopg2.connect(maintenance, connect_timeout=5)
    except psycopg2.OperationalError as exc:
        pytest.skip(f"no PostgreSQL reachable at {_hidden(maintenance)}: {str(exc).strip()}")
    conn.autocommit = True
    name = f"ll_image_{uuid.uuid4().hex[:10]}"
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.close()


def _build_requirements_met() -> None:
    """Fail early, naming the package, when this environment cannot build the project without isolation."""
    for line in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]:
        req = Requirement(line)
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"build requirement {line} is not installed (pip install -e '.[dev]')")
        assert req.specifier.contains(version), f"build requirement {line}: {version} is installed"


def _image(tmp: Path, drop: str | None = None) -> tuple[Path, Venv]:
    """The image's file set under ``tmp/root`` (less the folder ``drop``), installed into ``tmp/venv``."""
    _build_requirements_met()
    plan = read_dockerfile(REPO / "Dockerfile")
    root = tmp / "root"
    build_file_set(REPO, root, plan, read_dockerignore(REPO / ".dockerignore"))
    app = root / plan.install_dir.relative_to("/")
    if drop:
        shutil.rmtree(app / drop)
    return app, make_venv(tmp / "venv", app)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Venv]:
    """The image's file set and a venv with it installed."""
    return _image(tmp_path_factory.mktemp("image"))


def _latencylab(venv: Venv, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``latencylab ARGS`` from the venv, in ``cwd`` (outside the checkout and the copied files)."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(venv.bin / "latencylab"), *args],
        cwd=cwd,
        env=_clean_env(PATH=f"{venv.bin}{os.pathsep}{os.environ['PATH']}", **env),
        capture_output=True,
        text=True,
        timeout=600,
    )


# -- tests -------------------------------------------------------------------------------------


def test_the_image_copies_every_package_that_pyproject_installs(image):
    app, _ = image
    expected = packages_in_pyproject(REPO)
    assert {"devicelab", "server", "workers", "dashboard", "latencylab", "migrations"} <= expected
    assert expected == packages_in_pyproject(app)
    assert not (app / "tests").exists() and not (app / ".venv").exists() and not (app / ".git").exists()


def test_the_packages_import_from_the_new_venv_with_their_data_files(image, tmp_path):
    app, venv = image
    packages = sorted(packages_in_pyproject(REPO))
    probe = (
        "import importlib, json, sys\n"
        f"files = {{name: importlib.import_module(name).__file__ for name in {packages!r}}}\n"
        "print(json.dumps({'files': files, 'path': sys.path, 'modules': sorted(sys.modules)}))\n"
    )
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    done = subprocess.run(
        [str(venv.bin / "python"), "-c", probe], cwd=cwd, env=_clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    for name, file in seen["files"].items():
        assert Path(file).is_relative_to(venv.site_packages), f"{name} imported from {file}"
    assert str(REPO) not in seen["path"]
    assert not [m for m in seen["modules"] if m.startswith("__editable__")], "the checkout's editable finder ran"
    # Templates, static files and OpenCL kernels are package data: each one must be installed too.
    for name in packages:
        for source in (app / name).rglob("*"):
            if source.is_file() and "__pycache__" not in source.parts and source.suffix != ".pyc":
                installed = venv.site_packages / source.relative_to(app)
                assert installed.exists(), f"{source.relative_to(app)} is not installed (package-data?)"


def test_manage_check_and_migrate_pass_against_postgresql(image, postgres_url, tmp_path):
    _, venv = image
    env = {"DATABASE_URL": postgres_url, "LATENCYLAB_VAR_DIR": str(tmp_path / "var")}
    check = _latencylab(venv, tmp_path / "elsewhere", "manage", "check", **env)
    assert check.returncode == 0, check.stderr
    assert "no issues" in check.stdout
    migrate = _latencylab(venv, tmp_path / "elsewhere", "manage", "migrate", "--noinput", **env)
    assert migrate.returncode == 0, migrate.stderr

    import psycopg2

    with psycopg2.connect(postgres_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT DISTINCT app FROM django_migrations")
        applied = {row[0] for row in cur.fetchall()}
    assert {"accounts", "devices", "networks", "profiling", "predictors"} <= applied


def test_the_web_command_loads_the_wsgi_application(image, postgres_url, tmp_path):
    _, venv = image
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = _clean_env(DATABASE_URL=postgres_url, LATENCYLAB_VAR_DIR=str(tmp_path / "var"))
    # The image's CMD; gunicorn puts its working folder on sys.path, so it runs outside the copied files.
    done = subprocess.run(
        [str(venv.bin / "python"), "-m", "gunicorn", "--check-config", "server.wsgi:application"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_manage_check_fails_when_the_image_leaves_a_package_out(tmp_path):
    _, venv = _image(tmp_path / "image", drop="dashboard")
    check = _latencylab(venv, tmp_path / "elsewhere", "manage", "check", LATENCYLAB_VAR_DIR=str(tmp_path / "var"))
    assert check.returncode != 0
    assert "No module named 'dashboard'" in check.stderr
