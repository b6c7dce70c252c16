"""One run of TensorFlow Lite's ``benchmark_model`` on a phone: its command line and its verdict.

The command pins the process with the phone's own ``taskset`` (Android's toybox: a hex mask
before the command, no util-linux ``-c`` list), asks for exact counts (``--min_secs=0
--warmup_min_secs=0``: the tool otherwise runs on until a second has passed), per-operator
profiling into a CSV file on the phone, and the peak memory footprint. A binary that predates
the CSV mode ignores those flags (it logs them as unconsumed) and prints its text tables
instead; the backend reads whichever it finds.

A run that exits non-zero is the *model's* failure (the runtime refused an operator, a delegate
could not be applied, the tool crashed on the model): ``BackendError`` with the tool's own
error lines. Connection losses and timeouts are raised by ``adb.PhoneLink`` as ``DeviceLost``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.backends.android.adb import ShellOutput
from devicelab.backends.base import BackendError

REMOTE_DIR = "/data/local/tmp/latencylab"
REMOTE_TOOL = f"{REMOTE_DIR}/benchmark_model"
MAX_SECS = 86_400  # the tool's own cap on the timed phase (default 150 s) must never cut a job short

# settings.delegate -> the tool's flags (each delegate off unless asked for)
DELEGATE_FLAGS = {
    "cpu": ["--use_xnnpack=false"],
    "xnnpack": ["--use_xnnpack=true"],
    "gpu": ["--use_xnnpack=false", "--use_gpu=true"],
    "nnapi": ["--use_xnnpack=false", "--use_nnapi=true"],
}
DEFAULT_DELEGATE = "xnnpack"  # what the tool itself uses by default (TFLite 2.x onward, LiteRT)

_SIGNALS = {134: "SIGABRT", 135: "SIGBUS", 136: "SIGFPE", 137: "SIGKILL", 139: "SIGSEGV"}
_ERROR_LINE = re.compile(
    r"^(?:ERROR|E/|F/|FATAL|Fatal|terminating|Aborted|Segmentation|Failed|Didn't|Node number)", re.I
)


def core_mask(cores: Sequence[int]) -> str:
    """The hex affinity mask toybox's ``taskset`` takes (``c0`` for cores 6 and 7)."""
    mask = 0
    for c in cores:
        mask |= 1 << c
    return f"{mask:x}"


@dataclass(frozen=True)
class ToolCommand:
    """The shell command of one run and where its CSV goes."""

    command: str
    csv_path: str
    mask: str | None


def command_line(
    model_path: str,
    csv_path: str,
    *,
    delegate: str,
    threads: int,
    warmup_runs: int,
    runs: int,
    precision: str,
    cores: Sequence[int] = (),
    tool: str = REMOTE_TOOL,
    op_profiling: bool = True,
) -> ToolCommand:
    """The full shell command of a run (``taskset`` first when cores are pinned); without
    ``op_profiling`` (a cold start), no per-operator profile and no CSV."""
    profiling = [
        "--enable_op_profiling=true",
        "--op_profiling_output_mode=csv",
        f"--op_profiling_output_file={csv_path}",
    ]
    flags = [
        f"--graph={model_path}",
        f"--num_threads={threads}",
        f"--warmup_runs={warmup_runs}",
        f"--num_runs={runs}",
        "--min_secs=0",
        "--warmup_min_secs=0",
        f"--max_secs={MAX_SECS}",
        *DELEGATE_FLAGS[delegate],
        *(profiling if op_profiling else []),
        "--report_peak_memory_footprint=true",
    ]
    # fp16 arithmetic, where the delegate has it (the builtin CPU kernels compute in fp32, fp16
    # weights or not): each delegate has its own flag (--allow_fp16 reaches NNAPI only).
    if delegate == "gpu":
        flags.append(f"--gpu_precision_loss_allowed={'true' if precision == 'fp16' else 'false'}")
    elif precision == "fp16" and delegate == "xnnpack":
        flags.append("--xnnpack_force_fp16=true")
    elif precision == "fp16" and delegate == "nnapi":
        flags.append("--allow_fp16=true")
    mask = core_mask(cores) if cores else None
    words = ([f"taskset {mask}"] if mask else []) + [shlex.quote(tool)] + [shlex.quote(f) for f in flags]
    return ToolCommand(" ".join(words), csv_path if op_profiling else "", mask)


def error_lines(text: str, limit: int = 6) -> list[str]:
    """The tool's own error lines (the last few), log prefixes kept."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [
        line for line in lines if _ERROR_LINE.search(re.sub(r"^(?:INFO|WARNING|ERROR): ", "", line)) or "ERROR" in line
    ]
    return (errors or lines)[-limit:]


def check_exit(out: ShellOutput, serial: str, model: str) -> None:
    """``BackendError`` (the model's failure) with the tool's message when the run failed."""
    if out.exit_code == 0:
        return
    how = f"exit status {out.exit_code}"
    if out.exit_code in _SIGNALS:
        how += f" ({_SIGNALS[out.exit_code]})"
    if out.exit_code == 127:
        raise BackendError(
            f"phone {serial}: benchmark_model was not found on the phone ({how}): {out.text.strip()[:300]}"
        )
    if out.exit_code == 126:
        raise BackendError(
            f"phone {serial}: benchmark_model cannot be executed ({how}); is the configured binary built for "
            f"this phone's ABI? {out.text.strip()[:300]}"
        )
    message = " | ".join(error_lines(out.text)) or "no output"
    raise BackendError(f"benchmark_model failed on model {model!r} on phone {serial} ({how}): {message}")


# (EI_CLASS, e_machine) of an ELF header -> the Android ABI that runs it (elf.h: ELFCLASS32 = 1,
# ELFCLASS64 = 2; EM_386 = 3, EM_ARM = 40, EM_X86_64 = 62, EM_AARCH64 = 183).
ELF_ABIS = {(2, 183): "arm64-v8a", (1, 40): "armeabi-v7a", (2, 62): "x86_64", (1, 3): "x86"}


def binary_abi(header: bytes) -> str | None:
    """The Android ABI of an executable from its ELF header (its first 20 bytes suffice), or None
    when it is not an ELF file of a known ABI."""
    if len(header) < 20 or header[:4] != b"\x7fELF" or header[5] not in (1, 2):
        return None
    # EI_DATA: ELFDATA2LSB = 1, ELFDATA2MSB = 2
    machine = int.from_bytes(header[18:20], "little") if header[5] == 1 else int.from_bytes(header[18:20], "big")
    return ELF_ABIS.get((header[4], machine))


def abi_refusal(tool_abi: str | None, abilist: Sequence[str]) -> str:
    """Why a phone cannot run a binary of ``tool_abi`` (empty when it can, or when either is unknown)."""
    if tool_abi is None or not abilist or tool_abi in abilist:
        return ""
    return (
        f"the configured benchmark_model is an {tool_abi} binary and this phone runs {', '.join(abilist)} "
        f"(ro.product.cpu.abilist): configure a benchmark_model built for {abilist[0]} on this worker"
    )


__all__ = [
    "ELF_ABIS",
    "abi_refusal",
    "binary_abi",
    "DEFAULT_DELEGATE",
    "DELEGATE_FLAGS",
    "MAX_SECS",
    "REMOTE_DIR",
    "REMOTE_TOOL",
    "ToolCommand",
    "check_exit",
    "command_line",
    "core_mask",
    "error_lines",
]
