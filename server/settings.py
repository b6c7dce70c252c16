"""Django settings for LatencyLab, read from the environment (see ``server/env.py``).

With nothing set, the server runs on embedded defaults: SQLite under ``var/`` and a kombu
filesystem broker, so a first run needs no database or broker server. Each embedded default
used is logged once.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from server.env import env_bool, env_int, env_list, env_str, is_set, note_embedded_default

BASE_DIR = Path(__file__).resolve().parent.parent

# -- core ------------------------------------------------------------------------------------

DEBUG = env_bool("DEBUG", False)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

VAR_DIR = Path(env_str("LATENCYLAB_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "server.accounts",
    "server.devices",
    "server.networks",
    "server.profiling",
    "server.predictors",
    "server.fusion",
    "server.tenancy",
    "server.selection",
    "server.remote",
    "server.labs",
    "server.api",
    "dashboard",
]

# One folder for every app's migrations, so the schema history reads in one place.
MIGRATION_MODULES = {
    "accounts": "migrations.accounts",
    "devices": "migrations.devices",
    "networks": "migrations.networks",
    "profiling": "migrations.profiling",
    "predictors": "migrations.predictors",
    "fusion": "migrations.fusion",
    "tenancy": "migrations.tenancy",
    "selection": "migrations.selection",
    "remote": "migrations.remote",
    "labs": "migrations.labs",
}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out log-in into its lockout answer.
    "axes.middleware.AxesMiddleware",
]

# -- security --------------------------------------------------------------------------------

# Behind a proxy that terminates TLS (the production shape): trust its X-Forwarded-Proto, send
# cookies over HTTPS only, redirect plain HTTP and ask browsers to remember HTTPS (HSTS).
LATENCYLAB_BEHIND_TLS_PROXY = env_bool("LATENCYLAB_BEHIND_TLS_PROXY", False)
if LATENCYLAB_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("LATENCYLAB_SECURE_COOKIES", LATENCYLAB_BEHIND_TLS_PROXY)
SECURE_SSL_REDIRECT = env_bool("LATENCYLAB_SSL_REDIRECT", LATENCYLAB_BEHIND_TLS_PROXY)
SECURE_HSTS_SECONDS = env_int("LATENCYLAB_HSTS_SECONDS", 31_536_000 if LATENCYLAB_BEHIND_TLS_PROXY else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("LATENCYLAB_HSTS_INCLUDE_SUBDOMAINS", LATENCYLAB_BEHIND_TLS_PROXY)
SECURE_HSTS_PRELOAD = env_bool("LATENCYLAB_HSTS_PRELOAD", LATENCYLAB_BEHIND_TLS_PROXY)
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): scripts and everything else from this origin only, no
# inline scripts. Inline styles stay allowed: plotly.js styles its charts with <style> elements.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Log-in lockout (django-axes): this many failed log-ins for one user name from one address lock
# that pair out for the cool-off, on the dashboard and the admin alike.
AXES_FAILURE_LIMIT = env_int("LATENCYLAB_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("LATENCYLAB_LOCKOUT_MINUTES", 15, minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# Token authentication: past this many bad tokens from one address within the window, its further
# bad tokens get 429 for the rest of the window; valid tokens always work (server/accounts/authentication.py).
LATENCYLAB_TOKEN_FAILURE_LIMIT = env_int("LATENCYLAB_TOKEN_FAILURE_LIMIT", 20, minimum=1)
LATENCYLAB_TOKEN_LOCKOUT_SECONDS = env_int("LATENCYLAB_TOKEN_LOCKOUT_SECONDS", 900, minimum=1)

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out user name and address
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "server.urls"
WSGI_APPLICATION = "server.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# -- database --------------------------------------------------------------------------------

_SUPPORTED_ENGINES = ("django.db.backends.postgresql", "django.db.backends.sqlite3")


def _database_from_url(url: str) -> dict[str, Any]:
    """Parse DATABASE_URL, naming the variable (password hidden) when it is not usable."""
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
    except ValueError as exc:
        shown = url.split("@")[-1] if "@" in url else url
        raise ImproperlyConfigured(f"DATABASE_URL={shown!r} is not a usable database URL: {exc}") from None
    if config.get("ENGINE") not in _SUPPORTED_ENGINES:
        raise ImproperlyConfigured(
            f"DATABASE_URL uses engine {config.get('ENGINE')!r}; LatencyLab supports postgres:// and sqlite://"
        )
    if not config.get("NAME"):
        raise ImproperlyConfigured(
            "DATABASE_URL names no database (expected e.g. postgres://user@host:5432/latencylab)"
        )
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Django's, with a health check that costs no round trip (server/postgres/base.py).
        config["ENGINE"] = "server.postgres"
    return config


def _sqlite(path: Path, test_path: Path) -> dict[str, Any]:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        # A worker process writes beside the web process: WAL lets readers go on during a write,
        # IMMEDIATE takes the write lock at BEGIN so two writers queue instead of deadlocking
        # on a lock upgrade, and the timeout is how long one waits for the other.
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        # A file, not :memory:, so a separate worker process can open the test database too.
        "TEST": {"NAME": str(test_path)},
    }


if is_set("DATABASE_URL"):
    _db = _database_from_url(env_str("DATABASE_URL", ""))
    if _db["ENGINE"] == "django.db.backends.sqlite3":
        _db = {
            **_sqlite(Path(_db["NAME"]), Path(_db["NAME"]).with_name("test_" + Path(_db["NAME"]).name)),
            "CONN_MAX_AGE": 0,
        }
else:
    note_embedded_default("DATABASE_URL", f"SQLite at {VAR_DIR / 'latencylab.sqlite3'}")
    _db = _sqlite(VAR_DIR / "latencylab.sqlite3", VAR_DIR / "test_latencylab.sqlite3")
DATABASES = {"default": _db}

# -- secret key --------------------------------------------------------------------------------


def _local_secret_key(path: Path) -> str:
    """This installation's own key, made once under ``var/`` (readable by its owner only)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(50)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key)
        return key
    except OSError as exc:
        raise ImproperlyConfigured(f"cannot read the local secret key {path}: {exc}") from None


if is_set("SECRET_KEY"):
    SECRET_KEY = env_str("SECRET_KEY", "")
elif not is_set("DATABASE_URL"):
    # Embedded defaults (the demo, a first `latencylab up`): a key of this installation's own,
    # never a key that ships with the code.
    SECRET_KEY = _local_secret_key(VAR_DIR / "secret_key")
    note_embedded_default("SECRET_KEY", f"a key made for this installation in {VAR_DIR / 'secret_key'}")
else:
    # A server on a real database is a deployment: it must not start on a key anyone can read.
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. A server on DATABASE_URL needs a secret of its own: set SECRET_KEY to e.g. "
        "the output of `python -c 'import secrets; print(secrets.token_urlsafe(50))'` (the test command "
        "`make test` sets a throwaway one)"
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# -- cache -----------------------------------------------------------------------------------

# Rate limits and lockouts count here, in Redis so that every web process sees the same counts:
# LATENCYLAB_CACHE_URL, else the broker's Redis when the broker is Redis (its database, under keys
# of their own, which clearing the cache leaves alone: server/cache.py), else each process's
# memory (each counts on its own). Parallel test processes (pytest-xdist) share the broker and
# each clears the cache as its tests start, so each counts under a prefix of its own.
_CACHE_KEY_PREFIX = "latencylab-cache" + env_str("PYTEST_XDIST_WORKER", "")
_BROKER_URL = env_str("CELERY_BROKER_URL", "")
if is_set("LATENCYLAB_CACHE_URL") or _BROKER_URL.startswith(("redis://", "rediss://")):
    CACHES = {
        "default": {
            "BACKEND": "server.cache.PrefixedRedisCache",
            "LOCATION": env_str("LATENCYLAB_CACHE_URL", _BROKER_URL),
            "KEY_PREFIX": _CACHE_KEY_PREFIX,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# -- files -----------------------------------------------------------------------------------

MEDIA_ROOT = VAR_DIR / "media"
MEDIA_URL = "/media/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_URL = "/static/"
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.js comes from the plotly Python package itself, so the dashboard needs no CDN.
    "dashboard.staticfiles.PlotlyJsFinder",
]
# Without a separate web server in front, Django serves the static files itself (the API docs
# page needs them); turn this off when a proxy serves STATIC_ROOT.
LATENCYLAB_SERVE_STATIC = env_bool("LATENCYLAB_SERVE_STATIC", True)

LATENCYLAB_MAX_UPLOAD_BYTES = env_int("LATENCYLAB_MAX_UPLOAD_BYTES", 100 * 1024 * 1024, minimum=1)
# The API's model detail and the dashboard's model page show the operator table of models up to
# this many operators; bigger ones show their totals and counts per type (one request must not
# build a table of a million rows).
LATENCYLAB_OPERATOR_TABLE_MAX = env_int("LATENCYLAB_OPERATOR_TABLE_MAX", 20_000, minimum=1)
# An upload up to this size is parsed while its request waits (201 with the operator table);
# a bigger one is stored, answered 202 `parsing` at once, and parsed by the trainer (a 75 MB
# graph JSON takes half a minute of a core and GBs of memory: not a web thread's work).
LATENCYLAB_PARSE_INLINE_MAX_BYTES = env_int("LATENCYLAB_PARSE_INLINE_MAX_BYTES", 4 * 1024 * 1024, minimum=0)
# A graph JSON body is the model itself, so the non-file body limit follows the model limit,
# with room for multipart framing and the other form fields.
DATA_UPLOAD_MAX_MEMORY_SIZE = LATENCYLAB_MAX_UPLOAD_BYTES + 1024 * 1024
# Larger uploaded files stream to FILE_UPLOAD_TEMP_DIR instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = min(LATENCYLAB_MAX_UPLOAD_BYTES, 10 * 1024 * 1024)
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(exist_ok=True)
# A small file can describe a huge model: a 143-byte ONNX file can ask the importer to fold
# Range(0, 2**28) (4 GB), an input can be declared [1, 3, 100000, 100000]. Every import (upload,
# POST /api/predict/, a job reading its model) is bounded by these counts of elements, checked
# before anything is allocated (devicelab.graph.limits; defaults hold the zoo with a wide margin):
# the most elements of one tensor (activation, initializer, an operator's weights), of all the
# constants an import folds, and the most operators (ONNX local functions inlined).
LATENCYLAB_MAX_MODEL_ELEMENTS = env_int("LATENCYLAB_MAX_MODEL_ELEMENTS", 2**27, minimum=1)
LATENCYLAB_MAX_FOLDED_ELEMENTS = env_int("LATENCYLAB_MAX_FOLDED_ELEMENTS", 2**24, minimum=1)
LATENCYLAB_MAX_MODEL_OPERATORS = env_int("LATENCYLAB_MAX_MODEL_OPERATORS", 2**20, minimum=1)

# -- devices and jobs ------------------------------------------------------------------------

LATENCYLAB_HEARTBEAT_SECONDS = env_int("LATENCYLAB_HEARTBEAT_SECONDS", 10, minimum=1)
LATENCYLAB_OFFLINE_AFTER_SECONDS = env_int("LATENCYLAB_OFFLINE_AFTER_SECONDS", 30, minimum=1)
if LATENCYLAB_OFFLINE_AFTER_SECONDS <= LATENCYLAB_HEARTBEAT_SECONDS:
    # Otherwise a healthy device is declared offline between two of its own heartbeats.
    raise ImproperlyConfigured(
        f"LATENCYLAB_OFFLINE_AFTER_SECONDS={LATENCYLAB_OFFLINE_AFTER_SECONDS} must be greater than "
        f"LATENCYLAB_HEARTBEAT_SECONDS={LATENCYLAB_HEARTBEAT_SECONDS}"
    )
LATENCYLAB_TASK_TIME_LIMIT = env_int("LATENCYLAB_TASK_TIME_LIMIT", 3600, minimum=60)
# A queued job of an idle device whose message went out longer ago than this is sent again by
# the device's agent (its message was lost: a broker restarted without persistence, a device
# process killed after it took the message). Re-sending is harmless: the claim is conditional.
LATENCYLAB_RESEND_AFTER_SECONDS = env_int("LATENCYLAB_RESEND_AFTER_SECONDS", 60, minimum=1)
# A predictor in training (and a running selection simulation) holds a lease this long, renewed by
# its trainer every quarter of it: a lease that ran out means the trainer was lost (killed, out of
# memory, restarted), and the trainers' sweeper queues the work again, or fails it after 3 attempts.
# A running job whose run reported no progress for this long (it reports at least every quarter
# of it while it runs) is taken for lost, its worker alive or not, and queued again (an attempt
# counted) by the lab's sweep.
LATENCYLAB_JOB_LEASE_SECONDS = env_int("LATENCYLAB_JOB_LEASE_SECONDS", 60, minimum=4)
LATENCYLAB_TRAINING_LEASE_SECONDS = env_int("LATENCYLAB_TRAINING_LEASE_SECONDS", 60, minimum=4)
# Prepended to every device queue name (server.taskqueue.device_queue), so that installations or
# test sessions sharing one broker never consume each other's messages.
LATENCYLAB_QUEUE_PREFIX = env_str("LATENCYLAB_QUEUE_PREFIX", "")

# The default of a profiling job's ``breakdown`` setting when the job does not say: whether the
# worker follows the profile with the time breakdown of one inference (seconds of photo decoding
# and resizing per job). A lab of many small NAS jobs, or the test suite, turns it off.
LATENCYLAB_TIME_BREAKDOWN = env_bool("LATENCYLAB_TIME_BREAKDOWN", True)

# Largest batch POST /api/predict/ accepts in one request.
LATENCYLAB_PREDICT_MAX_BATCH = env_int("LATENCYLAB_PREDICT_MAX_BATCH", 5000, minimum=1)
# After training, the trainer also computes the predictor's answer for every NAS-Bench-201 cell
# (15625 architectures, a few minutes of one core), so the API answers those from a table.
LATENCYLAB_PREDICT_NB201_TABLE = env_bool("LATENCYLAB_PREDICT_NB201_TABLE", True)
# A batch with at least PARALLEL_MIN architectures to deduce and predict (graph JSON, ONNX,
# NAS-Bench-201 cells not in a table) is split over PROCESSES processes: the web process and
# PROCESSES - 1 workers it starts (devicelab/predict/parallel.py). 1 answers every batch in the
# web process.
LATENCYLAB_PREDICT_PROCESSES = env_int("LATENCYLAB_PREDICT_PROCESSES", min(os.cpu_count() or 1, 4), minimum=1)
LATENCYLAB_PREDICT_PARALLEL_MIN = env_int("LATENCYLAB_PREDICT_PARALLEL_MIN", 200, minimum=1)
# Predictor guard rails (docs/predictors.md, "Guard rails"). A kernel type seen in fewer training
# networks than this gets no model of its own (a model of its kind or feature group stands in),
# and training is refused when nothing can stand in for it. A predictor evaluated on fewer test
# networks than MIN_TEST_NETWORKS trains and answers but is never a device's best.
LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL = env_int("LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL", 5, minimum=1)
LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS = env_int("LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS", 5, minimum=1)

# -- Celery (read by workers/ with namespace "CELERY") ----------------------------------------

if is_set("CELERY_BROKER_URL"):
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
    if "://" not in CELERY_BROKER_URL:
        raise ImproperlyConfigured(f"CELERY_BROKER_URL={CELERY_BROKER_URL!r} is not a URL (e.g. redis://host:6379/0)")
    # With acks_late, Redis hands an unacknowledged message to another worker after the
    # visibility timeout: it must outlast the longest task, or a slow job runs twice.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {"visibility_timeout": LATENCYLAB_TASK_TIME_LIMIT + 600}
else:
    BROKER_DIR = VAR_DIR / "broker"
    note_embedded_default("CELERY_BROKER_URL", f"kombu filesystem transport under {BROKER_DIR}")
    for _sub in ("queue", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    # The transport has no host, but kombu warns "No hostname was supplied" on every connection
    # made from a URL without one (each worker start, each pooled connection): name localhost.
    CELERY_BROKER_URL = "filesystem://localhost/"
    # kombu's transport with messages written whole (a consumer read half of one): devicelab/fsbroker.py.
    CELERY_BROKER_TRANSPORT = "devicelab.fsbroker:Transport"
    # One settings module serves producer and consumer alike, so the folder messages are
    # written to must be the folder they are read from.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }

CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = "UTC"
# The job row is the truth (state, progress, result), not Celery's result backend.
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
# A task is acknowledged after it ran, one message at a time per worker process, and given
# back to the queue if its worker dies; the job's conditional claim makes a redelivery safe.
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_TIME_LIMIT = LATENCYLAB_TASK_TIME_LIMIT
CELERY_TASK_SOFT_TIME_LIMIT = LATENCYLAB_TASK_TIME_LIMIT - 30
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# -- auth, API -------------------------------------------------------------------------------

# The dashboard signs people in with Django's session log-in; the API keeps its tokens.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "server.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["server.api.permissions.IsTeamMember"],
    "DEFAULT_PAGINATION_CLASS": "server.api.pagination.Pagination",
    # Requests without a (valid) token are rate-limited per address; a NAS loop's token is not. The
    # refused ones count too (server/api/exceptions.py): DRF checks permissions before throttles.
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"anon": env_str("LATENCYLAB_ANON_RATE", "300/min")},
    # Each list view's query parameters are a FilterSet of its app's api/filters.py (on server/api/filters.py's).
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # drf-spectacular's, plus the error answers (401, 404, 413, ...) every operation can give.
    "DEFAULT_SCHEMA_CLASS": "server.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "server.api.exceptions.exception_handler",
    # JSON through orjson, refused when nested too deeply (server/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "server.api.parsers.FastJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "LatencyLab API",
    "DESCRIPTION": "Upload networks, profile them on the lab's devices, read per-operator timings.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The docs page loads its JavaScript from our own static files, so it works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models have a "state" (jobs, predictors): name their choice sets explicitly.
    "ENUM_NAME_OVERRIDES": {
        "JobStateEnum": "server.profiling.models.JobState",
        "JobKindEnum": "server.profiling.models.JobKind",  # devices have a kind too
        "PrecisionEnum": "devicelab.backends.base.PRECISIONS",
        "BackendEnum": "devicelab.backends.base.DEVICE_KINDS",  # a job's settings.backend (devices add imported)
        "FusionPrecisionEnum": "devicelab.fusion.on_device.PRECISIONS",  # fusion runs no int8
        "ZooEnum": "server.tenancy.api.requests.ZOO_NAMES",  # fusion's zoo, sharing's networks
        "SharingStrategyEnum": "devicelab.tenancy.sweep.STRATEGIES",  # a spec's strategies, a row's strategy
        "ModelStateEnum": "server.networks.models.ModelState",
        "PredictorStateEnum": "server.predictors.models.PredictorState",
        "PredictorMethodEnum": "server.predictors.models.PredictorMethod",
        "SimulationStateEnum": "server.selection.models.SimulationState",
    },
}

# -- i18n, logging ---------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "latencylab": {"handlers": ["console"], "level": env_str("LATENCYLAB_LOG_LEVEL", "INFO"), "propagate": False},
        "server": {"handlers": ["console"], "level": env_str("LATENCYLAB_LOG_LEVEL", "INFO"), "propagate": False},
        # Every server error (a 500) with its traceback; Django logs them to the console only with DEBUG on.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}
