"""How the lab's devices look in the API, and how a request body names one."""

from __future__ import annotations

from rest_framework import serializers

from server.devices.models import Device


class DeviceSerializer(serializers.ModelSerializer):
    """A lab device, whether it is reachable (and why not), and what it can run."""

    queue = serializers.CharField(read_only=True)
    hardware = serializers.JSONField(
        read_only=True,
        help_text="What the worker reported. A CPU: cpu_model, arch, cores, clusters, memory_bytes; an OpenCL "
        "device: gpu_name, driver, opencl_version; a phone (kind android): manufacturer, model, soc, abi, "
        "android_version, sdk, cpu_clusters ([{name, cores, max_khz}], e.g. little/mid/big), gpu (the GLES "
        "renderer), ram_mb, runtime, serial; an imported phone: gpu_name, gpu_family, soc, source, dataset.",
    )
    capabilities = serializers.JSONField(
        read_only=True,
        help_text="What the device declared it can run (empty when it declared nothing): precisions, max_threads, "
        "pins_cores and cores, runtimes, formats, max_runs, max_warmup_runs, max_cold_runs (1: only the profile's "
        "own cold start); phones also delegates, core_clusters "
        "({name: core ids}, which settings.cores may name) and cools_down (whether settings.cooldown_c and "
        "cooldown_max_s are honoured).",
    )

    class Meta:
        model = Device
        fields = [
            "id",
            "kind",
            "identity",
            "name",
            "hardware",
            "capabilities",
            "status",
            "worker",
            "last_heartbeat",
            "offline_since",
            "offline_reason",
            "queue",
        ]
        read_only_fields = fields


def existing_device(pk: int) -> Device:
    """The device with id ``pk``, or a ``ValidationError`` pointing at the device list."""
    device = Device.objects.filter(pk=pk).first()
    if device is None:
        raise serializers.ValidationError(f"there is no device #{pk} (GET /api/devices/)")
    return device
