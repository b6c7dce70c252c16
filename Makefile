# The few verbs people need. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv demo up worker test test-fast bench lint typecheck contracts check format system-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)  ## create .venv and install the project with its dev tools

demo: $(STAMP)  ## bring the service up on embedded defaults, profile zoo models, serve the API
	$(BIN)/latencylab demo

up: $(STAMP)  ## web server, one worker and the trainer in the foreground (embedded defaults unless configured)
	$(BIN)/latencylab up

worker: $(STAMP)  ## a worker with its device agent for this machine's devices
	$(BIN)/latencylab worker

# A server on DATABASE_URL refuses to start without SECRET_KEY; the tests get a throwaway one.
TEST_SECRET_KEY := test-only-$(shell $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(32))')

test: $(STAMP)  ## the whole test suite (PostgreSQL/Redis when DATABASE_URL/CELERY_BROKER_URL are set)
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(BIN)/python -m pytest

test-fast: $(STAMP)  ## the tests not marked slow (no browser, no service processes, no image build)
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(BIN)/python -m pytest -m "not slow"

bench: $(STAMP)  ## every benchmark; numbers go to var/benchmarks/
	for b in benchmarks/[!_]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(STAMP)  ## ruff: lint rules and formatting, checked (`make format` fixes what it can)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)  ## mypy on the application packages
	SECRET_KEY="$${SECRET_KEY:-$(TEST_SECRET_KEY)}" $(BIN)/mypy devicelab server workers dashboard latencylab

contracts: $(STAMP)  ## the import contracts of .importlinter (layers, no Django in devicelab, no cycles)
	$(BIN)/lint-imports

check: lint typecheck contracts  ## every static check CI runs before the tests

format: $(STAMP)  ## ruff: format and apply the fixable lint rules
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

system-deps:  ## Debian packages the project needs (run as root)
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		python3-venv ca-certificates pocl-opencl-icd ocl-icd-libopencl1 clinfo chromium \
		libclblast-dev

clean:
	rm -rf $(VENV) var/test_* .pytest_cache
