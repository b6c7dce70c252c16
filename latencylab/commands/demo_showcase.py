"""What ``latencylab demo`` shows beyond the CPU profiles: a predictor of the host CPU trained on a
quick training set of NB-201 cells (what the README's NAS loop asks), the qed phones as dataset
devices, a predictor trained for one of them, the OpenCL device (or how to get one), an admin log-in.

Each step says what it did in one line and never stops the demo: missing qed data or a
predictor the services refuse is reported and the demo goes on.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

ADMIN_USERNAME = "admin"
# The phone predictor: RF with the affine overhead, the best fit on the qed phones
# (docs/predictors.md, "Accuracy"), and the quick hyper-parameter search, so that it trains in
# about half a minute on a busy 2-core machine (pixel4, evaluation included: 27 s and 5.9 %
# end-to-end MAPE; the paper's search took 80 s for 5.8 %).
PHONE_METHOD, PHONE_SEARCH, PHONE_OVERHEAD = "rf", "fast", "affine"
# The host CPU's predictor, for the README's NAS loop: NB-201 cells are what that loop predicts,
# and at CIFAR size (16-100 MFLOPs) 24 of them measure in a minute or two. 24 cells leave the 20 %
# held out for the evaluation at >= 5 networks, so the predictor is rankable (README, "Guard
# rails"); Lasso with the quick search trains in seconds. The cells run on core 0 and the
# predictor is for that scenario: it then trains on the cells alone, not on the demo's zoo models,
# whose kernel types (squeezenet's concat, ...) ran in too few networks and would refuse training.
HOST_METHOD, HOST_SEARCH, HOST_OVERHEAD, HOST_CORES = "lasso", "fast", "affine", [0]
HOST_CELLS, HOST_CELL_SEED = 24, 201
HOST_CELL_SETTINGS = {"threads": 1, "cores": HOST_CORES, "warmup_runs": 1, "runs": 5}
OPENCL_WAIT_SECONDS = 5.0
OPENCL_HINT = (
    "OpenCL: no device, this system has no OpenCL driver: `sudo make system-deps` installs one (PoCL); "
    "then run the demo again"
)


def ensure_admin() -> tuple[str, str]:
    """The demo's lab admin (staff and superuser, for /admin/) with a fresh password each run:
    (user name, password). The demo user stays an ordinary team member."""
    from django.contrib.auth import get_user_model

    password = secrets.token_urlsafe(9)
    user, _ = get_user_model().objects.get_or_create(username=ADMIN_USERNAME)
    user.is_staff = user.is_superuser = user.is_active = True
    user.set_password(password)
    user.save(update_fields=["is_staff", "is_superuser", "is_active", "password"])
    return ADMIN_USERNAME, password


def import_qed_phones() -> str:
    """Import the qed phones from the data folder ``latencylab qed import`` reads by default;
    one line saying what was imported, or why nothing was."""
    from devicelab.predict.errors import PredictorError
    from server.predictors.qed_import import import_qed

    try:
        outcome = import_qed()
    except PredictorError as exc:
        return f"qed phones: not imported ({exc}); set LATENCYLAB_QED_DATA to the folder that holds them"
    networks = sorted({d.networks for d in outcome.devices})
    each = f"{networks[0]}" if len(networks) == 1 else f"{networks[0]}-{networks[-1]}"
    names = ", ".join(d.device.name for d in outcome.devices)
    return (
        f"qed phones: {len(outcome.devices)} dataset devices ({names}), {each} measured networks each, "
        f"from {outcome.data_dir}"
    )


def host_training_graphs(count: int = HOST_CELLS) -> list[Any]:
    """The NB-201 cells the demo profiles on the host CPU to train its predictor (a fixed draw, so
    a second demo run finds them measured)."""
    from devicelab.graph.nas import nb201

    cells = nb201.sample_strings(count, seed=HOST_CELL_SEED)
    return [nb201.from_string(cell, name=f"nb201-demo-{i}") for i, cell in enumerate(cells)]


def submit_jobs(team: Any, user: Any, device: Any, graphs: list[Any], settings: dict[str, Any]) -> list[Any]:
    """Upload each graph as the team's model and queue one profiling job of it on ``device``, as a
    person does through the API; the jobs in order."""
    from devicelab.graph import graph_to_json
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    jobs = []
    for graph in graphs:
        model, _ = upload_model(team, user, graph_to_json(graph).encode(), f"{graph.name}.json", name=graph.name)
        jobs.append(submit_profiling_job(team, model, device, settings, user=user))
    return jobs


def phone_with_most_data() -> Any:
    """The imported qed phone with the most measured networks (the first imported among equals),
    annotated with ``networks``; None when none is imported."""
    from django.db.models import Count

    from server.devices.models import Device, DeviceKind

    return (
        Device.objects.filter(kind=DeviceKind.IMPORTED, hardware__source="qed")
        .annotate(networks=Count("imported_measurements"))
        .filter(networks__gt=0)
        .order_by("-networks", "pk")
        .first()
    )


def queue_phone_predictor(base_url: str, demo_started: datetime, send: bool = True) -> str | None:
    """Queue the training of a shared predictor for the phone with the most data, unless one is
    ready, queued, or being trained by this demo's trainer; one line saying what and where to
    watch it (the trainer process trains it in the background); None without a qed phone (the
    import has said why). With ``send`` false the row
    waits queued without a message (the demo is about to stop): the next trainer to run sends
    it again, so a stop never leaves a half-trained row behind."""
    phone = phone_with_most_data()
    if phone is None:
        return None
    recipe = {"method": PHONE_METHOD, "search": PHONE_SEARCH, "overhead": PHONE_OVERHEAD}
    return _queue_predictor("phone predictor", None, phone, phone.networks, recipe, base_url, demo_started, send)


def queue_host_predictor(base_url: str, team: Any, device: Any, demo_started: datetime, send: bool = True) -> str:
    """Queue the training of ``team``'s predictor of the host CPU ``device`` on the team's
    profiles of the demo's NB-201 cells (one thread on core 0), unless one is ready, queued, or
    being trained by this demo's trainer; one line saying what and where to watch it. ``send`` as
    for ``queue_phone_predictor``."""
    from server.predictors.records import count_networks

    networks = count_networks(team, device, 1, HOST_CORES)
    recipe = {"method": HOST_METHOD, "search": HOST_SEARCH, "overhead": HOST_OVERHEAD, "cores": HOST_CORES}
    return _queue_predictor("host CPU predictor", team, device, networks, recipe, base_url, demo_started, send)


def _queue_predictor(
    label: str,
    team: Any,
    device: Any,
    networks: int,
    recipe: dict[str, Any],
    base_url: str,
    demo_started: datetime,
    send: bool,
) -> str:
    """The one line of ``queue_phone_predictor`` / ``queue_host_predictor`` after queueing the
    ``recipe`` (``request_predictor``'s method, search, overhead, ...) predictor of ``team`` (None:
    shared) for ``device`` if needed."""
    from django.core.exceptions import ValidationError
    from django.db.models import Q

    from server.predictors.models import Predictor, PredictorState
    from server.predictors.services import request_predictor

    current = (
        Predictor.objects.filter(device=device, team=team, method=recipe["method"])
        .filter(
            Q(state__in=[PredictorState.READY, PredictorState.QUEUED])
            | Q(state=PredictorState.TRAINING, started_at__gte=demo_started)
        )
        .order_by("-version")
        .first()
    )
    if current is not None and current.state == PredictorState.READY:
        mape = "" if current.e2e_mape is None else f", end-to-end MAPE {100 * current.e2e_mape:.1f} %"
        return (
            f"{label}: #{current.pk} {current.method} v{current.version} for {device.name} is ready{mape}: "
            f"{base_url}/predictors/{current.pk}/"
        )
    if current is None:
        try:
            current = request_predictor(team, device, enqueue=send, **recipe)
        except ValidationError as exc:
            return f"{label}: not queued for {device.name}: {'; '.join(exc.messages)}"
    what = f"{label}: #{current.pk} {current.method} v{current.version} for {device.name} ({networks} networks)"
    if not send and current.state == PredictorState.QUEUED:
        return f"{what} queued; it trains when the service runs (make demo, latencylab up): {base_url}/predictors/"
    return f"{what} {current.state} in the background; watch it at {base_url}/predictors/"


def opencl_line(cpu_device: Any, pause: Callable[[], None], wait_seconds: float = OPENCL_WAIT_SECONDS) -> str:
    """The OpenCL devices the demo's worker registered beside its CPU (waiting up to
    ``wait_seconds`` for them), or the one-line hint how to get a driver."""
    from server.devices.models import Device, DeviceKind

    deadline = time.monotonic() + wait_seconds
    while True:
        found = list(Device.objects.online().filter(kind=DeviceKind.OPENCL, worker=cpu_device.worker).order_by("pk"))
        if found:
            return "OpenCL device: " + ", ".join(f"{d.name} (#{d.pk})" for d in found)
        if time.monotonic() >= deadline:
            return OPENCL_HINT
        pause()


__all__ = [
    "ADMIN_USERNAME",
    "HOST_CELLS",
    "HOST_CELL_SETTINGS",
    "HOST_CORES",
    "HOST_METHOD",
    "HOST_OVERHEAD",
    "HOST_SEARCH",
    "OPENCL_HINT",
    "PHONE_METHOD",
    "PHONE_OVERHEAD",
    "PHONE_SEARCH",
    "ensure_admin",
    "host_training_graphs",
    "import_qed_phones",
    "opencl_line",
    "phone_with_most_data",
    "queue_host_predictor",
    "queue_phone_predictor",
    "submit_jobs",
]
