# One image for the web server and the workers (the production shape of docker-compose.yml).
FROM python:3.11-slim-bookworm

# PoCL gives the worker an OpenCL device on the CPU; a GPU host mounts its vendor ICD instead.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      pocl-opencl-icd ocl-icd-libopencl1 clinfo curl procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# The build context less .dockerignore (tests, docs, var, .venv, .git, ...): the packages installed
# are those pyproject.toml's [tool.setuptools.packages.find] includes, listed there only.
COPY . .
RUN pip install --no-cache-dir .

ENV LATENCYLAB_VAR_DIR=/var/lib/latencylab \
    PYTHONUNBUFFERED=1
RUN mkdir -p /var/lib/latencylab
EXPOSE 8000
# Threaded workers (server/gunicorn_conf.py): one slow request holds a thread, not a whole process.
CMD ["gunicorn", "server.wsgi:application", "--bind", "0.0.0.0:8000", "--config", "python:server.gunicorn_conf", "--workers", "3"]
