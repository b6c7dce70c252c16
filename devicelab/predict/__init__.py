"""Latency predictors (paper 001): kernel deduction per backend, one model per kernel type,
end-to-end latency as the sum of kernel predictions plus an overhead, and artifacts that
outlive library upgrades.

Typical use::

    deducer = learn_cpu_deducer(records)                # or TfliteGpuDeducer("mali"), OpenclDeducer()
    samples = deducer.samples(records)
    predictor = train_predictor(samples, deducer, scenario, "gbdt", seed=0)
    save_predictor(predictor, "pred.json")
    load_predictor("pred.json").predict(graphs)          # -> [Prediction(latency_ms=...), ...]

Heavy imports stay inside: scikit-learn only when training, the OpenCL backend's plan only
when that deducer runs.
"""

from devicelab.predict.artifacts import (
    load_predictor,
    predictor_from_dict,
    predictor_from_json,
    predictor_to_dict,
    predictor_to_json,
    save_predictor,
)
from devicelab.predict.cpu_learning import learn_cpu_deducer
from devicelab.predict.cpu_probes import probe_graphs
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.deduce_tflite_cpu import TfliteCpuDeducer, learn_tflite_cpu_deducer
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer, gpu_family
from devicelab.predict.errors import PredictorError
from devicelab.predict.evaluate import Report, evaluate, grouped_cv, mape
from devicelab.predict.features import FEATURES, raw_features
from devicelab.predict.kernels import Kernel
from devicelab.predict.models import METHODS
from devicelab.predict.predictor import Prediction, Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.records import ProfileRecord, record_from_result
from devicelab.predict.samples import Sample
from devicelab.predict.tflite_gpu_records import TfliteGpuRecordDeducer, learn_tflite_gpu_deducer

__all__ = [
    "FEATURES",
    "METHODS",
    "CpuDeducer",
    "Kernel",
    "OpenclDeducer",
    "Prediction",
    "PredictorError",
    "ProfileRecord",
    "Report",
    "Sample",
    "Scenario",
    "ScenarioPredictor",
    "TfliteCpuDeducer",
    "TfliteGpuDeducer",
    "TfliteGpuRecordDeducer",
    "evaluate",
    "gpu_family",
    "grouped_cv",
    "learn_cpu_deducer",
    "learn_tflite_cpu_deducer",
    "learn_tflite_gpu_deducer",
    "load_predictor",
    "mape",
    "predictor_from_dict",
    "predictor_from_json",
    "predictor_to_dict",
    "predictor_to_json",
    "probe_graphs",
    "raw_features",
    "record_from_result",
    "save_predictor",
    "train_predictor",
]
