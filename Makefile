# The few verbs people need. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# What the service runs (demo, up, worker): wheels only, nothing to compile, on plain Python.
STAMP  := $(VENV)/.installed
# What developing needs on top: test, lint and type tools, and the CLBlast peer (pyclblast builds
# from source against Debian's libclblast-dev: `make system-deps` first).
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: venv dev demo up worker test test-fast bench lint typecheck contracts check format system-deps \
	demo-install-check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,clblast]'
	touch $(DEV_STAMP)

venv: $(STAMP)  ## create .venv and install what the service runs

dev: $(DEV_STAMP)  ## ... and the test, lint and benchmark tools (after `make system-deps`)

demo: $(STAMP)  ## bring the service up on embedded defaults, profile zoo models, serve the API
	$(BIN)/latencylab demo

up: $(STAMP)  ## web server, one worker and the trainer in the foreground (embedded defaults unless configured)
	$(BIN)/latencylab up

worker: $(STAMP)  ## a worker with its device agent for this machine's devices
	$(BIN)/latencylab worker

# The README's promise for `make demo`: Python 3.11 and make suffice. The service's dependencies
# install into a fresh virtual environment from wheels only (--only-binary: no compiler, no system
# library is used), and the CLI and Django settings load there.
DEMO_CHECK := var/demo-install-check
demo-install-check:  ## prove the demo's dependency set installs from wheels alone into a fresh venv
	rm -rf $(DEMO_CHECK) && mkdir -p $(DEMO_CHECK)
	$(PYTHON) -m venv $(DEMO_CHECK)/venv
	$(DEMO_CHECK)/venv/bin/python -m pip install --quiet --upgrade pip
	$(DEMO_CHECK)/venv/bin/python -m pip wheel --quiet --no-deps --wheel-dir $(DEMO_CHECK)/dist .
	$(DEMO_CHECK)/venv/bin/python -m pip install --quiet --only-binary=:all: $(DEMO_CHECK)/dist/*.whl
	cd $(DEMO_CHECK) && venv/bin/latencylab --help > /dev/null
	cd $(DEMO_CHECK) && LATENCYLAB_VAR_DIR=$(CURDIR)/$(DEMO_CHECK)/var venv/bin/python -c \
		"import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'server.settings'; django.setup(); \
		import workers.run, devicelab.backends.cpu, devicelab.backends.opencl; print('demo dependency set: ok')"
	rm -rf $(DEMO_CHECK)

# A server on DATABASE_URL refuses to start without SECRET_KEY; the tests get a throwaway one.
TEST_SECRET_KEY := test-only-$(shell $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(32))')

# Parallel test processes (pytest-xdist): one per core, each with a share of the tests; an idle one
# takes the rest of a busy one's (slow tests are spread through the shares: tests/conftest.py).
TEST_PROCESSES ?= auto
PYTEST := $(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist worksteal

test: $(DEV_STAMP)  ## the whole test suite (PostgreSQL/Redis when DATABASE_URL/CELERY_BROKER_URL are set)
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(PYTEST)

test-fast: $(DEV_STAMP)  ## the tests not marked slow (no browser, no service processes, no image build)
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(PYTEST) -m "not slow"

bench: $(DEV_STAMP)  ## every benchmark; numbers go to var/benchmarks/
	for b in benchmarks/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(DEV_STAMP)  ## ruff: lint rules and formatting, checked (`make format` fixes what it can)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The experiment boundary is a contract (issue 30): the whole Django-free library, and the server,
# worker and dashboard modules that receive its results (the services that ingest them, the job
# runners, the task, the readers of a stored profile's environment) are checked with mypy --strict
# too (the rest of the tree with the project's mypy settings).
STRICT_MODULES = devicelab server/profiling/services.py server/fusion/services.py \
	server/tenancy/services.py server/remote/services.py server/predictors/records.py \
	workers/jobs workers/failures.py workers/tasks.py dashboard/conditions.py \
	server/labs/models.py server/labs/services.py server/labs/schema.py

typecheck: $(DEV_STAMP)  ## mypy on the application packages
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(BIN)/mypy devicelab server workers dashboard latencylab
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(BIN)/mypy --strict --follow-imports=silent $(STRICT_MODULES)

contracts: $(DEV_STAMP)  ## the import contracts of .importlinter (layers, no Django in devicelab, no cycles)
	$(BIN)/lint-imports

check: lint typecheck contracts  ## every static check CI runs before the tests

format: $(DEV_STAMP)  ## ruff: format and apply the fixable lint rules
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

system-deps:  ## Debian packages the project needs (run as root)
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		python3-venv ca-certificates pocl-opencl-icd ocl-icd-libopencl1 clinfo chromium \
		libclblast-dev

clean:
	rm -rf $(VENV) var/test_* .pytest_cache
