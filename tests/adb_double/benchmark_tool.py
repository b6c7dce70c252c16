"""The emulated TensorFlow Lite ``benchmark_model`` (tools/benchmark) a pushed "binary" runs.

A file whose bytes start with ``FAKE_BENCHMARK_MODEL_MARKER`` and that is executable runs this
tool; the marker is followed by a generation tag: ``litert`` (LiteRT / current TFLite: ``INFO:``
log prefixes, ``--op_profiling_output_mode=csv``, XNNPACK operators in the op profile, p5/median/
p95 on the ``count=`` lines) or ``tf2.8`` (TensorFlow 2.8: no log prefix, the op table only as
text with a ``[start]`` column, XNNPACK's node as one ``TfLiteXNNPackDelegate`` row).

The tool prints what ``benchmark_main.cc``, ``benchmark_model.cc`` and
``benchmark_tflite_model.cc`` print, in their order and wording (stdout for INFO/WARN, stderr for
ERROR and for the runtime's own log lines), and it really takes the time it reports, scaled by
``Phone.time_scale``: it sleeps as it goes and prints each line when the real tool would, so a
test can pull the cable in the middle of a run. Its times come from ``tflite_runtime``'s model of
the phone (cluster frequencies now, thermal throttling, the cores ``taskset`` allows), with noise
seeded by the phone, the model and the command line.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np

from devicelab.graph.errors import GraphError
from tests.adb_double import benchmark_flags as flagmod
from tests.adb_double import op_profiling
from tests.adb_double.op_profiling import Event, Stat, StatsCalculator, g
from tests.adb_double.shell import SIGABRT, SIGSEGV, Killed, Proc, Program
from tests.adb_double.tflite_model import TfliteModel, read_model
from tests.adb_double.tflite_runtime import (
    GPU,
    GPU_PARTITION_US,
    KERNEL_NAMES,
    NNAPI,
    XNNPACK,
    Application,
    Hardware,
    Kernel,
    Plan,
    kernel_us,
    kernels,
)
from tests.adb_double.tflite_runtime import _gpu_us as gpu_op_us
from tests.adb_double.thermal import GPU_WATTS, NPU_WATTS

FAKE_BENCHMARK_MODEL_MARKER = b"\x7fELF latencylab-adb-double benchmark_model"
GENERATIONS = ("litert", "tf2.8")
GPU_ROWS = ("partition", "kernels")  # the GPU delegate as one partition row, or one row per OpenCL dispatch
# Faults a binary (``crash=``) or a phone (``Phone.tool_fault``) can make the tool show:
FAULTS = (
    "abort",  # SIGABRT during the first warm-up run: the shell prints "Aborted", exit 134
    "segfault",  # SIGSEGV there instead: "Segmentation fault", exit 139
    "unsupported_op",  # the op resolver lacks the first operator: "Didn't find op for builtin opcode ..."
    "xnnpack",  # the XNNPACK delegate fails to prepare: "Failed to apply XNNPACK delegate."
    "gpu_init",  # no OpenCL/OpenGL: "Failed to apply GPU delegate."
    "hang",  # the first warm-up run never returns (until killed)
)
TF28_MAX_BUILTIN = 149  # BuiltinOperator_MAX of TensorFlow 2.8's schema (MULTINOMIAL)
NNAPI_DEVICES = ["google-edgetpu", "nnapi-reference"]
_FILLER_BYTES = 48 * 1024


def benchmark_model_binary(generation: str = "litert", crash: str | None = None, gpu_rows: str | None = None) -> bytes:
    """The bytes of a pushable ``benchmark_model`` of this generation (and fault, if any).

    ``gpu_rows`` is how the GPU delegate shows in the op profile: ``partition`` (one
    ``TfLiteGpuDelegateV2`` row: TensorFlow before the delegate's per-dispatch events, LiteRT
    builds without them) or ``kernels`` (one row per OpenCL dispatch and no partition row, and a
    profiled pass of the kernels in every invocation: today's LiteRT 2.x, the LiteRT
    generation's default; LiteRT generation only)."""
    if gpu_rows is None:
        gpu_rows = "kernels" if generation == "litert" else "partition"
    if gpu_rows not in GPU_ROWS:
        raise ValueError(f"unknown gpu_rows {gpu_rows!r}; one of {GPU_ROWS}")
    if generation not in GENERATIONS:
        raise ValueError(f"unknown benchmark_model generation {generation!r}; one of {GENERATIONS}")
    if crash is not None and crash not in FAULTS:
        raise ValueError(f"unknown fault {crash!r}; one of {FAULTS}")
    tag = f" {generation}" + (f" crash={crash}" if crash else "") + f" gpu_rows={gpu_rows}" + "\n"
    filler = hashlib.shake_256(tag.encode()).digest(_FILLER_BYTES)  # looks like a binary, is deterministic
    return FAKE_BENCHMARK_MODEL_MARKER + tag.encode() + filler


def program_for(content: bytes) -> Program | None:
    """The emulated tool for a file's bytes, or None when the file is not one."""
    if not content.startswith(FAKE_BENCHMARK_MODEL_MARKER):
        return None
    line = content[len(FAKE_BENCHMARK_MODEL_MARKER) :].split(b"\n", 1)[0].decode(errors="replace").split()
    generation = line[0] if line and line[0] in GENERATIONS else "litert"
    crash = next((word.split("=", 1)[1] for word in line if word.startswith("crash=")), None)
    gpu_rows = next((word.split("=", 1)[1] for word in line if word.startswith("gpu_rows=")), "partition")
    return lambda proc: BenchmarkModel(proc, generation, crash, gpu_rows).main()


class _Failed(Exception):
    """A step returned kTfLiteError: the tool logs "Benchmarking failed." and exits 1."""


@dataclass
class _Clock:
    """Phone time the tool has spent, with the wall clock kept in step (× time_scale) and the
    heat the work produced handed to the phone's thermal model."""

    proc: Proc
    scale: float
    sim: float = 0.0
    real0: float = field(default_factory=time.monotonic)
    energy: dict[str, float] = field(default_factory=dict)
    loaded: float = 0.0
    load_started: float = field(default_factory=time.monotonic)

    def spend(self, seconds: float, watts: dict[str, float] | None = None) -> None:
        """Advance phone time by ``seconds`` (under a load of ``watts`` per power source)."""
        if not watts:
            self.flush()
        self.sim += seconds
        if watts:
            for source, w in watts.items():
                self.energy[source] = self.energy.get(source, 0.0) + w * seconds
            self.loaded += seconds
            if self.loaded >= 0.02:
                self.flush()
        self.pace()
        if not watts:
            self.load_started = time.monotonic()

    def pace(self, force: bool = False) -> None:
        """Sleep until the wall clock has caught up with the phone time spent."""
        delay = self.real0 + self.sim * self.scale - time.monotonic()
        if delay > (0.0 if force else 0.004):
            self.proc.sleep(delay)
        else:
            self.proc.check()

    def flush(self) -> None:
        """Hand the accumulated load to the thermal model."""
        if self.loaded > 0:
            watts = {k: e / self.loaded for k, e in self.energy.items()}
            self.proc.phone.thermal.apply_load(watts, self.loaded, self.load_started)
        self.energy, self.loaded = {}, 0.0
        self.load_started = time.monotonic()

    @property
    def us(self) -> int:
        """Phone time in whole microseconds."""
        return int(self.sim * 1e6)


class BenchmarkModel:
    """One run of the emulated tool in a process."""

    def __init__(self, proc: Proc, generation: str, crash: str | None, gpu_rows: str = "partition") -> None:
        self.proc = proc
        self.gpu_rows = gpu_rows
        self.phone = proc.phone
        self.generation = generation
        self.litert = generation == "litert"
        self.fault = crash or self.phone.tool_fault
        self.flags = flagmod.flags_for(generation)
        self.clock = _Clock(proc, max(0.0, float(self.phone.time_scale)))
        self.params = flagmod.Params()
        self.model: TfliteModel | None = None
        self.plan: Plan | None = None
        self.kernels: list[Kernel] = []
        self.init_events: list[Event] = []
        self.run_times: list[np.ndarray] = []  # kernel times of the regular runs, when profiling
        self.explicit: list[str] = []
        self.first_run = True
        self._hw: Hardware | None = None
        self._base: np.ndarray | None = None
        self._hw_at = -1.0
        seed = hashlib.sha256(f"{self.phone.serial}\0{' '.join(proc.argv[1:])}".encode()).digest()
        self.seed_base = seed

    # -- logging -----------------------------------------------------------------------------------

    def _log(self, severity: str, message: str) -> None:
        self.clock.pace(force=True)
        prefix = f"{severity}: " if self.litert else ""
        if severity in ("INFO", "WARN"):
            self.proc.out(f"{prefix}{message}\n")
        else:
            self.proc.err(f"{prefix}{message}\n")

    def info(self, message: str) -> None:
        """TFLITE_LOG(INFO): stdout."""
        self._log("INFO", message)

    def warn(self, message: str) -> None:
        """TFLITE_LOG(WARN): stdout."""
        self._log("WARN", message)

    def error(self, message: str) -> None:
        """TFLITE_LOG(ERROR): stderr."""
        self._log("ERROR", message)

    def runtime_log(self, severity: str, message: str) -> None:
        """The runtime's minimal logger / error reporter: ``SEVERITY: message`` on stderr."""
        self.clock.pace(force=True)
        self.proc.err(f"{severity}: {message}\n")

    # -- main ----------------------------------------------------------------------------------------

    def main(self) -> int:
        """``benchmark_main.cc``: STARTING!, run, and "Benchmarking failed." on an error."""
        self.info("STARTING!")
        try:
            self._run()
        except _Failed:
            self.error("Benchmarking failed.")
            return 1
        finally:
            self.clock.flush()
        return 0

    def _run(self) -> None:
        parsed = flagmod.parse(self.proc.argv, self.flags)
        self.params = parsed.params
        if not parsed.ok or self.params.as_bool("help"):
            for line in parsed.errors:
                self.error(line)
            self.error(flagmod.usage(self.proc.argv[0], self.flags))
            raise _Failed
        if parsed.unconsumed:
            self.warn(f"Unconsumed cmdline flags: {' '.join(parsed.unconsumed)}")
        self._validate()
        for line in flagmod.log_lines(self.params, self.flags, self._nnapi_devices()):
            self.info(line)
        graph = self.params.as_str("graph")
        path = self.proc.resolve(graph)
        f = self.phone.fs.get(path)
        model_size_mb = (len(f.read()) if f is not None else -1) / 1e6
        init_start = self.clock.us
        self._init(graph, path)
        init_us = self.clock.us - init_start
        if model_size_mb > 0:
            self.info(f"The input model file size (MB): {g(model_size_mb)}")
        else:
            self.warn("Failed to get the input model file size.")
        self.info(f"Initialized session in {g(init_us / 1e3)}ms.")
        p = self.params
        if p.as_bool("dry_run"):
            p.values.update(warmup_runs=0, warmup_min_secs=-1.0, num_runs=0, min_secs=-1.0)
        warmup = self._loop(p.as_int("warmup_runs"), p.as_float("warmup_min_secs"), p.as_float("max_secs"), False)
        regular = self._loop(p.as_int("num_runs"), p.as_float("min_secs"), p.as_float("max_secs"), True)
        self._log_results(init_us, warmup, regular)
        if p.as_bool("enable_op_profiling"):
            self._profile_output()

    def _nnapi_devices(self) -> list[str]:
        return list(getattr(self.phone, "nnapi_devices", NNAPI_DEVICES))

    def _validate(self) -> None:
        p = self.params
        if not p.as_str("graph"):
            self.error("Please specify the name of your TF Lite input file with --graph")
            raise _Failed
        if p.as_bool("enable_op_profiling") and self.litert:
            mode = p.as_str("op_profiling_output_mode")
            if mode not in ("stdout", "csv", "proto"):
                self.error(f"Output mode{mode} is not supported. Supported values are: 'stdout', 'csv' and 'proto'.")
                raise _Failed
            if p.as_str("profiling_output_csv_file"):
                p.values["op_profiling_output_mode"] = "csv"
                p.values["op_profiling_output_file"] = p.as_str("profiling_output_csv_file")

    # -- Init ------------------------------------------------------------------------------------------

    def _init(self, graph: str, path: str) -> None:
        f = self.phone.fs.get(path)
        if f is None:
            self.runtime_log("ERROR", f"Could not open '{graph}'.")
            self.runtime_log("ERROR", "The model allocation is null/empty")
            self.error(f"Failed to load model {graph}")
            raise _Failed
        data = f.read()
        self.clock.spend((300 + len(data) / 2e3) / 1e6)
        if not data:
            self.runtime_log("ERROR", "The model allocation is null/empty")
            self.error(f"Failed to load model {graph}")
            raise _Failed
        try:
            model = read_model(data)
        except GraphError:
            self.runtime_log("ERROR", "The model is not a valid Flatbuffer buffer")
            self.error(f"Failed to load model {graph}")
            raise _Failed from None
        self.model = model
        self.info(f"Loaded model {graph}")
        self._resolve_ops(model)
        threads = self.params.as_int("num_threads")
        if threads < -1:
            self.runtime_log("ERROR", "num_threads should be >= 0 or just -1 to let TFLite runtime set the value.")
            self.error("Failed to set thread number")
            raise _Failed
        self.clock.spend((200 + 20 * len(model.ops)) / 1e6)
        self.plan = Plan(model)
        self._apply_delegates()
        self._allocate_tensors()

    def _resolve_ops(self, model: TfliteModel) -> None:
        for op in model.ops:
            if not self.litert and op.code > TF28_MAX_BUILTIN:
                self.runtime_log(
                    "ERROR",
                    f"Op builtin_code out of range: {op.code}. Are you using old TFLite binary with newer model?",
                )
            elif self.fault == "unsupported_op" and op is model.ops[0]:
                self.runtime_log(
                    "ERROR",
                    f"Didn't find op for builtin opcode '{op.name}' version '{op.version}'. An older version of "
                    "this builtin might be supported. Are you using an old TFLite binary with a newer model?\n",
                )
            else:
                continue
            self.runtime_log("ERROR", "Registration failed.\n")
            self.error("Failed to initialize the interpreter")
            raise _Failed

    def _apply_delegates(self) -> None:
        p, plan = self.params, self.plan
        assert plan is not None
        # Providers in registration order; each creates its delegate when asked for it.
        wanted = [(GPU, "use_gpu"), (NNAPI, "use_nnapi"), (XNNPACK, "use_xnnpack")]
        created = [(d, flag) for d, flag in wanted if p.as_bool(flag)]
        for k, (delegate, _) in enumerate(created):
            self._announce_creation(delegate)
            if k == 0:
                self.info(f"{delegate} delegate created.")
        ranked = sorted(created, key=lambda item: p.given.get(item[1], 0))
        if len(ranked) >= 2:
            self.info(f"Going to apply {len(ranked)} delegates one after another.")
        if not ranked and p.as_bool("require_full_delegation"):
            self.error("Disallowed CPU fallback detected.")
            raise _Failed
        for delegate, _ in ranked:
            self.explicit.append(delegate)
            app = self._modify_graph(delegate, explicit=True)
            fully = plan.fully_delegated
            if p.as_bool("require_full_delegation") and not fully:
                self.error("Disallowed CPU fallback detected.")
                raise _Failed
            if fully:
                self.info(
                    f"Explicitly applied {delegate} delegate, and the model graph will be completely executed by "
                    "the delegate."
                )
            elif app.kernels > 0:
                self.info(
                    f"Explicitly applied {delegate} delegate, and the model graph will be partially executed by the "
                    f"delegate w/ {app.kernels} delegate kernels."
                )
            else:
                self.info(
                    f"Though {delegate} delegate is explicitly applied, the model graph will not be executed by the "
                    "delegate."
                )

    def _announce_creation(self, delegate: str) -> None:
        if delegate == XNNPACK:
            if self.params.as_bool("xnnpack_force_fp16") and "use_xnnpack" in self.params.given:
                self.info("XNNPack FP16 inference enabled.")
            self.runtime_log("INFO", "Created TensorFlow Lite XNNPACK delegate for CPU.")
        elif delegate == GPU:
            self.runtime_log("INFO", "Created TensorFlow Lite delegate for GPU.")
        else:
            self.runtime_log("INFO", "Created TensorFlow Lite delegate for NNAPI.")

    def _modify_graph(self, delegate: str, explicit: bool) -> Application:
        plan, model, p = self.plan, self.model, self.params
        assert plan is not None and model is not None
        start = self.clock.us
        limit = {GPU: 1, NNAPI: 3, XNNPACK: 0}[delegate]
        if p.as_int("max_delegated_partitions") > 0 and delegate != XNNPACK:
            limit = p.as_int("max_delegated_partitions")
        first_node = plan.next_index
        app = plan.apply(delegate, limit)
        if delegate == GPU and app.refusals and app.plan_size > app.replaced:
            tail = (
                f"{app.replaced} operations will run on the GPU, and the remaining {app.plan_size - app.replaced}"
                if app.replaced
                else f"No operations will run on the GPU, and all {app.plan_size}"
            )
            self.runtime_log(
                "ERROR",
                "Following operations are not supported by GPU delegate:\n"
                + "\n".join(app.refusals)
                + f"\n{tail} operations will run on the CPU.",
            )
        if app.replaced:
            self._log_replacing(app)
        ops = plan.delegated_ops(delegate)
        fail = (delegate == GPU and self.fault == "gpu_init") or (delegate == XNNPACK and self.fault == "xnnpack")
        if app.kernels and fail:
            self.clock.spend((2000 + 100 * ops) / 1e6)
            if delegate == GPU:
                self.runtime_log(
                    "ERROR",
                    'Can not open OpenCL library on this device - dlopen failed: library "libOpenCL.so" not found',
                )
                self.runtime_log("ERROR", "Falling back to OpenGL")
                self.runtime_log("ERROR", "TfLiteGpuDelegate Init: OpenGL-based API disabled")
                self.runtime_log("ERROR", "TfLiteGpuDelegate Prepare: delegate is not initialized")
            else:
                self.runtime_log("ERROR", "failed to create XNNPACK subgraph")
            self.runtime_log("ERROR", f"Node number {first_node} ({KERNEL_NAMES[delegate]}) failed to prepare.")
            self.runtime_log("ERROR", "Restored original execution plan after delegate application failure.")
            plan.nodes = Plan(model).nodes
            plan.next_index = len(model.ops)
            if explicit:
                self.error(f"Failed to apply {delegate} delegate.")
                raise _Failed
            self.runtime_log(
                "INFO",
                "Error in applying the default TensorFlow Lite delegate indexed at 0, and all previously applied "
                "delegates are reverted.",
            )
            return Application(delegate, 0, 0, app.plan_size, 0)
        weights = sum(op.weight_bytes for n in plan.nodes if n.delegate == delegate for op in n.ops)
        if delegate == XNNPACK:
            us, mem_kb = 400 + 60 * ops + weights / 1.5e3, weights / 1024
        elif delegate == GPU:
            serialized = p.as_str("delegate_serialize_dir") and p.as_str("delegate_serialize_token")
            us, mem_kb = (90000 + 4000 * ops) / (4 if serialized else 1), weights / 2048 + 6000
            if app.kernels:
                self.runtime_log("INFO", "Initialized OpenCL-based API.")
                self.runtime_log("INFO", f"Created {app.kernels} GPU delegate kernels.")
        else:
            us, mem_kb = 30000 + 1500 * ops, 2000 + weights / 4096
        if not app.kernels:
            us, mem_kb = 50 + 5 * app.plan_size, 0
        self.clock.spend(us / 1e6)
        self.init_events.append(
            Event("ModifyGraphWithDelegate", "ModifyGraphWithDelegate/0", self.clock.us - start, 0, int(mem_kb) * 1000)
        )
        return app

    def _log_replacing(self, app: Application) -> None:
        model = self.model
        assert model is not None
        kernel = KERNEL_NAMES[app.delegate]
        if self.litert:
            self.runtime_log(
                "VERBOSE",
                f"Replacing {app.replaced} out of {app.plan_size} node(s) with delegate ({kernel}) node, yielding "
                f"{app.subsets} partitions for subgraph 0 ({model.subgraph_name}).",
            )
        else:
            self.runtime_log(
                "INFO",
                f"Replacing {app.replaced} node(s) with delegate ({kernel}) node, yielding {app.subsets} partitions.",
            )

    def _allocate_tensors(self) -> None:
        plan, model = self.plan, self.model
        assert plan is not None and model is not None
        # Interpreter::AllocateTensors applies the default (lazy) XNNPACK delegate first, unless
        # --use_xnnpack was given at all (then the resolver has no default delegates).
        if "use_xnnpack" not in self.params.given and not plan.fully_delegated:
            self._announce_creation(XNNPACK)
            self._modify_graph(XNNPACK, explicit=False)
        start = self.clock.us
        for node in plan.nodes:
            op = node.ops[0]
            if node.delegate is None and op.custom:
                self.runtime_log(
                    "ERROR",
                    f"Encountered unresolved custom op: {op.name}.\nSee instructions: "
                    "https://www.tensorflow.org/lite/guide/ops_custom ",
                )
                self.runtime_log("ERROR", f"Node number {node.index} ({op.name}) failed to prepare.")
                self.error("Failed to allocate tensors!")
                raise _Failed
        arena = model.activation_bytes * 0.6
        self.clock.spend((150 + 8 * len(model.ops) + arena / 4e3) / 1e6)
        self.init_events.append(
            Event("AllocateTensors", "AllocateTensors/0", self.clock.us - start, 0, int(arena / 1024 + 100) * 1000)
        )
        self.kernels = kernels(plan, xnnpack_per_op=self.litert, xnnpack_fp16=self.params.as_bool("xnnpack_force_fp16"))

    # -- runs ------------------------------------------------------------------------------------------

    def _cores(self) -> list[int]:
        """The cores the threads run on: the fastest the affinity allows, one thread each."""
        threads = max(1, self.params.as_int("num_threads"))
        allowed = sorted(self.proc.affinity or self.phone.all_cores, key=lambda c: -self.phone.core_speed(c))
        return allowed[: min(threads, len(allowed))]

    def _hardware(self) -> tuple[Hardware, np.ndarray]:
        """The hardware now and the kernels' base times on it (refreshed every 20 ms of phone time)."""
        if self._hw is None or self._base is None or self.clock.sim - self._hw_at >= 0.02:
            cores = self._cores()
            p = self.params
            self._hw = Hardware(
                [self.phone.core_speed(c) for c in cores],
                max(1, p.as_int("num_threads")),
                gpu_fp16=p.as_bool("gpu_precision_loss_allowed"),
                npu_fp16=p.as_bool("nnapi_allow_fp16") or p.as_bool("allow_fp16"),
            )
            self._base = np.array([kernel_us(k, self._hw) for k in self.kernels], dtype=np.float64)
            self._hw_at = self.clock.sim
        return self._hw, self._base

    def _rng(self, salt: str) -> np.random.Generator:
        return np.random.default_rng(int.from_bytes(hashlib.sha256(self.seed_base + salt.encode()).digest()[:8], "big"))

    def _loop(self, min_runs: int, min_secs: float, max_secs: float, regular: bool) -> Stat:
        """``BenchmarkModel::Run``: at least ``min_runs`` and ``min_secs``, at most ``max_secs``.

        Runs are simulated in batches of about 20 ms of phone time (the same loop condition,
        evaluated run by run on the batch), so a small model's thousands of runs stay cheap; the
        hardware (throttling, heat) is re-read between batches.
        """
        self.info(
            f"Running benchmark for at least {min_runs} iterations and at least {g(min_secs)} seconds but terminate "
            f"if exceeding {g(max_secs)} seconds."
        )
        rng = self._rng("regular" if regular else "warmup")
        now = self.clock.us
        min_finish, max_finish = now + int(min_secs * 1e6), now + int(max_secs * 1e6)
        delay = self.params.as_float("run_delay")
        frequency = self.params.as_float("run_frequency")
        next_finish = self.clock.sim + (1.0 / frequency if frequency > 0 else 0.0)
        totals: list[np.ndarray] = []
        done = 0
        while (done < min_runs or now < min_finish) and now <= max_finish:
            self._maybe_crash()
            _, base = self._hardware()
            per_run = float(base.sum()) + 8 + max(delay, 0.0) * 1e6
            batch = 1 if frequency > 0 else int(min(4096, max(1, 20000 // max(per_run, 1.0))))
            times, run_us = self._run_times(rng, base, batch)
            gaps = np.full(batch, max(delay, 0.0) * 1e6)
            if frequency > 0:
                gaps[0] = max(0.0, (next_finish - self.clock.sim) * 1e6 - float(run_us[0]))
                next_finish += 1.0 / frequency
            ends = now + np.cumsum(run_us + np.rint(gaps).astype(np.int64))
            starts = np.concatenate(([now], ends[:-1]))
            index = done + np.arange(batch)
            go = ((index < min_runs) | (starts < min_finish)) & (starts <= max_finish)
            take = batch if go.all() else int(np.argmin(go))
            times, run_us = times[:take], run_us[:take]
            if take:
                self.clock.spend(float(run_us.sum()) / 1e6, self._watts(times.sum(axis=0)))
                pause = float(gaps[:take].sum())
                if pause > 0:
                    self.clock.spend(pause / 1e6)
            totals.append(run_us)
            if regular and self.params.as_bool("enable_op_profiling"):
                self.run_times.append(times)
            done += take
            now = self.clock.us
        stat = Stat(np.concatenate(totals) if totals else [])
        self.info(stat.output(percentiles=self.litert) + "\n")
        return stat

    def _maybe_crash(self) -> None:
        if self.first_run and self.fault in ("abort", "segfault", "hang"):
            self.clock.spend(0.004)
            if self.fault == "hang":
                while True:
                    self.proc.sleep(3600)
            self.clock.flush()
            raise Killed(SIGABRT if self.fault == "abort" else SIGSEGV)

    def _run_times(self, rng: np.random.Generator, base: np.ndarray, runs: int) -> tuple[np.ndarray, np.ndarray]:
        """Each kernel's time in ``runs`` runs as the profiler reports it (whole µs, base ×
        per-run and per-kernel noise), and each run's duration as the tool times it: the
        unrounded sum plus Invoke's own bookkeeping and the timer's jitter."""
        factors = np.exp(rng.normal(0.0, 0.04, (runs, base.size))) * np.exp(rng.normal(0.0, 0.02, (runs, 1)))
        if self.first_run:
            factors[0] *= np.array([1.3 if k.executor in ("gpu", "nnapi") else 1.6 for k in self.kernels])
            self.first_run = False
        exact = base * factors
        times = np.maximum(1, np.rint(exact)).astype(np.int64)
        spent = exact.sum(axis=1)
        if self.litert and self.gpu_rows == "kernels" and self.params.as_bool("enable_op_profiling"):
            # with op profiling on, the OpenCL delegate runs a profiled pass of its kernels in
            # every invocation before the regular one (delegates/gpu/cl/api.cc): Invoke pays both
            hw, _ = self._hardware()
            gpu_us = np.array(
                [sum(gpu_op_us(op, hw) for op in k.ops) if k.executor == "gpu" else 0.0 for k in self.kernels]
            )
            spent = spent + (factors * gpu_us).sum(axis=1)
        run_us = np.rint(spent + 8 + np.abs(rng.normal(0.0, 1.5, runs))).astype(np.int64)
        return times, run_us

    def _watts(self, times: np.ndarray) -> dict[str, float]:
        total = float(times.sum()) or 1.0
        share = {"cpu": 0.0, "gpu": 0.0, "npu": 0.0}
        for k, t in zip(self.kernels, times.tolist(), strict=True):
            share["gpu" if k.executor == "gpu" else "npu" if k.executor == "nnapi" else "cpu"] += t / total
        watts: dict[str, float] = {"gpu": GPU_WATTS * share["gpu"], "npu": NPU_WATTS * share["npu"]}
        cpu_share = max(share["cpu"], 0.05)
        for c in self._cores():
            key = f"cpu:{self.phone.core_kinds[c]}"
            watts[key] = watts.get(key, 0.0) + self.phone.core_watts(c) * cpu_share
        return watts

    # -- the end -----------------------------------------------------------------------------------------

    def _log_results(self, init_us: int, warmup: Stat, regular: Stat) -> None:
        """``BenchmarkLoggingListener::OnBenchmarkEnd``."""
        self.info(
            f"Inference timings in us: Init: {init_us}, First inference: {warmup.first}, "
            f"Warmup (avg): {g(warmup.avg())}, Inference (avg): {g(regular.avg())}"
        )
        model = self.model
        assert model is not None
        self.info(
            "Note: as the benchmark tool itself affects memory footprint, the following is only APPROXIMATE to "
            "the actual memory footprint of the model at runtime. Take the information at your discretion."
        )
        init_kb = 1200 + model.size * 0.15 / 1024 + sum(e.mem_bytes for e in self.init_events) / 1000
        overall_kb = init_kb + 300 + model.activation_bytes * 0.1 / 1024
        self.info(
            f"Memory footprint delta from the start of the tool (MB): init={g(int(init_kb) / 1024.0)} "
            f"overall={g(int(overall_kb) / 1024.0)}"
        )
        if self.params.as_bool("report_peak_memory_footprint"):
            peak_mb = float(np.float32((overall_kb + 2048 + model.size * 0.85 / 1024) / 1024))
            self.info(f"Overall peak memory footprint (MB) via periodic monitoring: {g(peak_mb)}")
            rss = int(peak_mb) + 4
            shared = int(model.size * 0.85 / 2**20) + 3
            self.info("Memory status at the end of exeution:")
            self.info(f"- VmRSS              : {rss} MB")
            self.info(f"+ RssAnnon           : {rss - shared} MB")
            self.info(f"+ RssFile + RssShmem : {shared} MB")

    def _profile_output(self) -> None:
        """``ProfilingListener::OnBenchmarkEnd``: both sections to the output file, or logged."""
        p = self.params
        mode = p.as_str("op_profiling_output_mode") if self.litert else "stdout"
        target = p.as_str("op_profiling_output_file") if self.litert else ""
        if not self.litert and p.as_str("profiling_output_csv_file"):
            mode, target = "csv", p.as_str("profiling_output_csv_file")
        csv = mode == "csv"
        with_start = not self.litert
        init = StatsCalculator.from_runs([self.init_events], csv, with_start)
        times = np.concatenate(self.run_times) if self.run_times else np.zeros((0, len(self.kernels)), np.int64)
        types, names = [k.type for k in self.kernels], [k.name for k in self.kernels]
        if self.litert and self.gpu_rows == "kernels" and times.size:
            hw, _ = self._hardware()
            gpu = {
                i: op_profiling.gpu_dispatches(k.ops, [gpu_op_us(op, hw) for op in k.ops])
                for i, k in enumerate(self.kernels)
                if k.executor == "gpu"
            }
            types, names, times = op_profiling.gpu_dispatch_columns(types, names, times, gpu, GPU_PARTITION_US)
        run = StatsCalculator.from_matrix(types, names, times, csv, with_start)
        path = self.proc.resolve(target) if target else ""
        writable = bool(path) and self.phone.fs.is_dir(path.rsplit("/", 1)[0] or "/") and not self.phone.fs.is_dir(path)
        model = self.model
        assert model is not None
        if mode == "proto":
            data = op_profiling.proto(init, run, model.subgraph_name)
            if writable:
                self.phone.fs.write(path, data)
            else:
                self.info(f"runtime_profile {{ <{len(data)} bytes of tflite.profiling.BenchmarkProfilingData> }}")
            return
        if writable:
            self.phone.fs.write(path, op_profiling.sections(init, run).encode())
            return
        for header, calc in ((op_profiling.INIT_HEADER, init), (op_profiling.RUN_HEADER, run)):
            report = calc.report()
            if report:
                self.info(f"{header}\n{report}\n")
