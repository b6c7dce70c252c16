"""gunicorn's settings: a worker freezes what loading the application made out of the collector."""

from __future__ import annotations

import gc

from server import gunicorn_conf


def test_a_worker_freezes_the_objects_of_the_loaded_application() -> None:
    gc.unfreeze()
    try:
        gunicorn_conf.post_worker_init(object())
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def test_the_url_configuration_is_loaded_before_the_freeze(tmp_path) -> None:
    """In a fresh process, as a gunicorn worker: the URL configuration Django would import at the
    first request (the dashboard, plotly, the ONNX importer, ...) is loaded and frozen with the rest,
    so full collections under load do not scan it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import django, gc, sys\n"
        "django.setup()\n"
        "assert 'dashboard.views' not in sys.modules, 'imported before the worker starts'\n"
        "from server import gunicorn_conf\n"
        "gunicorn_conf.post_worker_init(object())\n"
        "import dashboard.views\n"
        "left = {id(o) for o in gc.get_objects()}\n"
        "view_functions = [v for v in vars(dashboard.views).values() if callable(v) and gc.is_tracked(v)]\n"
        "assert view_functions\n"
        "assert not any(id(v) in left for v in view_functions), 'dashboard views left to the collector'\n"
        "print('frozen', gc.get_freeze_count(), 'left', len(left))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="server.settings", LATENCYLAB_VAR_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    frozen, left = int(done.stdout.split()[1]), int(done.stdout.split()[3])
    assert frozen > 4 * left
