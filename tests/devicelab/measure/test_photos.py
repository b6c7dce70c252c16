"""The lab's phone photos: one seeded scene with structure, a JPEG and a PNG of it, made once and
kept under the var directory."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from devicelab.measure import photos


def test_the_scene_is_the_same_for_a_seed_and_has_structure() -> None:
    a = photos.scene(320, 240, seed=0)
    assert a.shape == (240, 320, 3) and a.dtype == np.uint8
    assert np.array_equal(a, photos.scene(320, 240, seed=0))
    assert not np.array_equal(a, photos.scene(320, 240, seed=1))
    # not a constant, nor noise: the sky (top) is bluer than the ground (bottom), rows differ
    top, bottom = a[:40].astype(float).mean(axis=(0, 1)), a[-40:].astype(float).mean(axis=(0, 1))
    assert top[2] > top[1] and bottom[1] > bottom[2]
    assert a.std() > 20
    # neighbouring pixels resemble each other far more than distant ones (an image, not noise)
    near = np.abs(np.diff(a.astype(int), axis=1)).mean()
    far = np.abs(a[:, :160].astype(int) - a[:, 160:].astype(int)).mean()
    assert near < far / 3


def test_jpeg_and_png_decode_to_the_scene(tmp_path: Path) -> None:
    jpeg, png = photos.phone_photos(tmp_path, width=320, height=240, seed=3)
    assert (jpeg.format, png.format) == ("jpeg", "png")
    pixels = photos.scene(320, 240, seed=3)
    from_png = np.asarray(Image.open(io.BytesIO(png.data)).convert("RGB"))
    assert np.array_equal(from_png, pixels)  # lossless
    from_jpeg = np.asarray(Image.open(io.BytesIO(jpeg.data)).convert("RGB"))
    assert from_jpeg.shape == pixels.shape
    assert np.abs(from_jpeg.astype(int) - pixels.astype(int)).mean() < 8  # lossy, but the same picture
    assert Image.open(io.BytesIO(jpeg.data)).format == "JPEG" and Image.open(io.BytesIO(png.data)).format == "PNG"


def test_photos_are_made_once_then_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = photos.phone_photos(tmp_path, width=64, height=48)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["scene-v1-seed0-64x48.jpg", "scene-v1-seed0-64x48.png"]
    assert all((tmp_path / f).stat().st_mode & 0o044 == 0o044 for f in files)  # other users' workers read them

    def must_not_draw(*args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("the scene was drawn again although its files exist")

    monkeypatch.setattr(photos, "scene", must_not_draw)
    again = photos.phone_photos(tmp_path, width=64, height=48)
    assert [p.sha256 for p in again] == [p.sha256 for p in first]


def test_an_unwritable_directory_still_gives_photos(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    made = photos.phone_photos(blocked / "photos", width=32, height=24)
    assert [p.format for p in made] == ["jpeg", "png"] and all(p.data for p in made)


def test_photo_dir_follows_the_var_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LATENCYLAB_VAR_DIR", str(tmp_path))
    assert photos.photo_dir() == tmp_path / "photos"


def test_the_default_photos_are_phone_sized() -> None:
    jpeg, png = photos.phone_photos()  # made once under the test run's var directory, then read
    for p in (jpeg, png):
        image = Image.open(io.BytesIO(p.data))
        assert image.size == (photos.PHOTO_WIDTH, photos.PHOTO_HEIGHT) == (4032, 3024)
    assert 1_000_000 < len(jpeg.data) < 8_000_000  # a few MB, like a phone's JPEG
    assert len(png.data) > 3 * len(jpeg.data)  # lossless
