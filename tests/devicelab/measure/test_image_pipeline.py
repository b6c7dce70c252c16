"""The client's stages of an image model's inference (decode, resize + crop, normalize,
post-process) and the time breakdown they make with a profile's load and inference; a model that
takes no image gets a breakdown that says why."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from devicelab.graph import GraphBuilder
from devicelab.graph.ir import Graph, Tensor
from devicelab.measure import image_pipeline
from devicelab.measure.breakdown import STAGES, NotAnImageModel, image_input
from devicelab.measure.image_pipeline import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    bounded_runs,
    decode,
    measure_breakdown,
    normalize,
    postprocess,
    resize_crop,
)
from devicelab.measure.photos import Photo, phone_photos, scene
from devicelab.measure.stats import from_aggregate, summarize


def cnn(shape: tuple[int, int, int, int] = (1, 3, 40, 48), classes: int = 10) -> Graph:
    b = GraphBuilder("cnn", shape)
    x = b.relu(b.conv(b.input, 8, 3, stride=2))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), classes))


@pytest.fixture(scope="module")
def small_photos(tmp_path_factory: pytest.TempPathFactory) -> list[Photo]:
    return phone_photos(tmp_path_factory.mktemp("photos"), width=400, height=300)


def test_decode_gives_every_pixel_in_rgb(small_photos: list[Photo]) -> None:
    jpeg, png = small_photos
    assert np.array_equal(np.asarray(decode(png.data)), scene(400, 300))
    image = decode(jpeg.data)
    assert (image.mode, image.size) == ("RGB", (400, 300))


def test_resize_crop_covers_then_cuts_the_centre() -> None:
    # a 400 x 300 photo with a marked centre, to a 28 x 42 (H x W) input
    pixels = np.zeros((300, 400, 3), np.uint8)
    pixels[140:160, 190:210] = 255
    out = resize_crop(Image.fromarray(pixels), 28, 42)
    assert out.size == (42, 28)
    a = np.asarray(out)
    assert a[14, 21].min() > 200 and a[0, 0].max() == 0  # the centre stayed in the centre
    # the scale is the ImageNet convention: 42 / 0.875 = 48 columns before the crop
    scale = 42 / 0.875 / 400
    assert round(300 * scale) >= 28


def test_normalize_makes_the_nchw_batch_with_imagenet_statistics() -> None:
    a = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 4
    b = 255 - a
    batch = normalize([Image.fromarray(a), Image.fromarray(b)])
    assert batch.shape == (2, 3, 4, 5) and batch.dtype == np.float32 and batch.flags.c_contiguous
    for n, img in enumerate((a, b)):
        for c in range(3):
            want = (img[..., c] / 255.0 - IMAGENET_MEAN[c]) / IMAGENET_STD[c]
            assert np.allclose(batch[n, c], want, atol=1e-5)
    assert normalize([Image.fromarray(a)], "float16").dtype == np.float16


def test_postprocess_is_a_softmax_and_its_top_5() -> None:
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 1000)).astype(np.float32)
    probs, idx = postprocess(logits)
    assert probs.shape == idx.shape == (2, 5)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    full = e / e.sum(axis=1, keepdims=True)
    for n in range(2):
        want = np.argsort(-full[n])[:5]
        assert list(idx[n]) == list(want)
        assert np.allclose(probs[n], full[n, want])
    # a segmentation-like output: classes on axis 1, per position; fewer classes than 5
    p, i = postprocess(rng.standard_normal((1, 3, 4, 4)).astype(np.float32))
    assert p.shape == i.shape == (1, 3, 16) and np.allclose(p.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(np.diff(p, axis=1) <= 0)  # most probable first


def test_which_graphs_are_image_models() -> None:
    spec = image_input(cnn((2, 3, 40, 48), classes=7))
    assert (spec.batch, spec.height, spec.width, spec.output_shape) == (2, 40, 48, (2, 7))
    b = GraphBuilder("mlp", (1, 64))
    with pytest.raises(NotAnImageModel, match=r"\[1, 64\], not an N x 3 x H x W image batch"):
        image_input(b.build(b.fc(b.input, 10)))
    gray = GraphBuilder("gray", (1, 1, 28, 28))
    with pytest.raises(NotAnImageModel, match=r"\[1, 1, 28, 28\]"):
        image_input(gray.build(gray.relu(gray.input)))
    two = cnn()
    two.tensors["extra"] = Tensor("extra", (1, 3, 8, 8))
    two.inputs.append("extra")
    with pytest.raises(NotAnImageModel, match="2 inputs"):
        image_input(two)
    ids = cnn()
    ids.tensors[ids.inputs[0]] = replace(ids.tensors[ids.inputs[0]], dtype="int64")
    with pytest.raises(NotAnImageModel, match="int64, not a floating-point image"):
        image_input(ids)


def test_a_breakdown_has_every_stage_measured_per_image_format(small_photos: list[Photo]) -> None:
    inference = [1.2, 1.1, 1.3, 1.25]
    bd = measure_breakdown(
        cnn((2, 3, 40, 48)),
        load_samples_ms=[30.0, 34.0],
        load_source="two fresh processes",
        inference=summarize(inference),
        inference_samples_ms=inference,
        runs=4,
        warmup_runs=3,
        photos=small_photos,
    )
    assert bd.applicable and not bd.host_side and (bd.runs, bd.warmup_runs) == (4, 1)  # warm-up bounded to 1
    d = bd.as_dict()
    assert [p["image"]["format"] for p in d["pipelines"]] == ["jpeg", "png"]
    assert d["input"]["shape"] == [2, 3, 40, 48] and d["output"]["shape"] == [2, 10]
    for p in d["pipelines"]:
        stages = {s["name"]: s for s in p["stages"]}
        assert [s["name"] for s in p["stages"]] == [n for n in STAGES if n != "preprocess"]  # measured apart
        for name in ("decode", "resize_crop", "normalize", "postprocess"):
            assert stages[name]["where"] == "host" and stages[name]["n"] == 4 == len(stages[name]["samples_ms"])
            assert all(t > 0 for t in stages[name]["samples_ms"])
        assert stages["model_load"]["where"] == stages["inference"]["where"] == "device"
        assert stages["model_load"]["samples_ms"] == [30.0, 34.0] and stages["model_load"]["median_ms"] == 32.0
        assert stages["inference"]["central_ms"] == pytest.approx(np.median(inference))
        assert p["total_ms"] == pytest.approx(sum(s["central_ms"] for s in p["stages"]))
        assert "2 images per run" in stages["decode"]["source"]
    # the PNG of the same scene is much larger than the JPEG, and takes longer to decode
    jpeg, png = d["pipelines"]
    assert png["image"]["bytes"] > jpeg["image"]["bytes"]


def test_aggregate_only_inference_and_a_phone_are_said_so(small_photos: list[Photo]) -> None:
    bd = measure_breakdown(
        cnn(),
        load_samples_ms=[80.0],
        load_source="the phone's init",
        inference=from_aggregate(50, 12.0, 0.5, 11.0, 13.5),
        inference_samples_ms=[],
        runs=1,
        warmup_runs=0,
        host_side=True,
        photos=small_photos,
    )
    d = bd.as_dict()
    assert d["host_side"] and "not on the phone" in d["note"]
    stages = {s["name"]: s for s in d["pipelines"][0]["stages"]}
    inference = stages["inference"]
    assert (inference["median_ms"], inference["mean_ms"], inference["central_ms"]) == (None, 12.0, 12.0)
    assert "aggregates only" in inference["source"]
    load = stages["model_load"]
    assert load["std_ms"] is None  # one load: no spread


def test_a_model_without_an_image_input_gets_a_reason_not_numbers() -> None:
    b = GraphBuilder("mlp", (1, 64))
    bd = measure_breakdown(
        b.build(b.fc(b.input, 10)),
        load_samples_ms=[1.0],
        load_source="x",
        inference=summarize([0.1]),
        inference_samples_ms=[0.1],
        runs=5,
        warmup_runs=1,
    )
    assert bd.as_dict() == {"applicable": False, "reason": bd.reason}
    assert "not an N x 3 x H x W image batch" in bd.reason


def test_runs_are_bounded_and_shrink_to_the_budget(small_photos: list[Photo], monkeypatch: pytest.MonkeyPatch) -> None:
    assert bounded_runs(30, 5) == (image_pipeline.MAX_RUNS, image_pipeline.MAX_WARMUP_RUNS)
    assert bounded_runs(2, 0) == (2, 0)
    monkeypatch.setattr(image_pipeline, "BUDGET_S", 1e-6)  # every run is over the budget
    steps: list[str] = []
    bd = measure_breakdown(
        cnn(),
        load_samples_ms=[1.0],
        load_source="x",
        inference=summarize([0.1]),
        inference_samples_ms=[0.1],
        runs=10,
        warmup_runs=1,
        photos=small_photos,
        step=steps.append,
    )
    assert bd.runs == image_pipeline.MIN_RUNS
    assert steps == ["image pipeline warm-up 1/1"] + [f"image pipeline timed run {i}/3" for i in (1, 2, 3)]
    assert all(s.stats.n == 3 for p in bd.pipelines for s in p.stages if s.where == "host")


def test_the_client_stages_can_be_pinned(small_photos: list[Photo]) -> None:
    core = sorted(os.sched_getaffinity(0))[-1]
    before = os.sched_getaffinity(0)
    bd = measure_breakdown(
        cnn(),
        load_samples_ms=[1.0],
        load_source="x",
        inference=summarize([0.1]),
        inference_samples_ms=[0.1],
        runs=1,
        warmup_runs=0,
        cores=(core,),
        photos=small_photos,
    )
    assert bd.environment["affinity"] == [core]
    assert os.sched_getaffinity(0) == before  # restored
