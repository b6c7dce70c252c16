"""Phone photos the lab makes itself: one scene, drawn from a seed, saved as a JPEG and a PNG.

A client's first stage decodes a photo, and how long that takes depends on the photo's size and
format, not on what it shows, as long as it shows something: a constant image compresses to
nothing and decodes in no time. So the scene has what photos have (a sky gradient, a sun, hills,
buildings with rows of windows, textured ground, blotches of light, sensor noise), is the same on
every machine (``PHOTO_SEED``), and has a 12-megapixel phone camera's 4:3 frame (4032 x 3024).
The JPEG is saved at quality 90 with 4:2:0 chroma (a few MB, like a phone's), the PNG with Pillow's
default compression (lossless: about 20 MB).

Drawing and encoding take a few seconds, so the files are made once and kept under the lab's var
directory (``LATENCYLAB_VAR_DIR``, else ``var/`` beside the code), named by their version, seed
and size; a directory that cannot be written only costs making them again.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

import devicelab

PHOTO_WIDTH = 4032
PHOTO_HEIGHT = 3024
PHOTO_SEED = 0
JPEG_QUALITY = 90
SCENE_VERSION = 1  # in the file names: a change to the scene must not reuse old files
FORMATS = ("jpeg", "png")
_SUFFIX = {"jpeg": "jpg", "png": "png"}


@dataclass(frozen=True)
class Photo:
    """An encoded photo: its bytes and what they hold."""

    format: str  # "jpeg" or "png"
    data: bytes
    width: int
    height: int

    @property
    def sha256(self) -> str:
        """The hex digest of the bytes."""
        return hashlib.sha256(self.data).hexdigest()


def scene(width: int = PHOTO_WIDTH, height: int = PHOTO_HEIGHT, seed: int = PHOTO_SEED) -> np.ndarray:
    """An outdoor scene as an ``height x width x 3`` uint8 RGB array, the same for the same arguments."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :]
    img = np.empty((height, width, 3), np.float32)

    # sky: darker blue at the top, paler towards the horizon
    for c, (top, bottom) in enumerate(((60.0, 190.0), (110.0, 215.0), (200.0, 240.0))):
        img[..., c] = top + (bottom - top) * y

    # the sun: a bright disc with a soft edge
    aspect = width / height
    r = np.sqrt(((x - 0.78) * aspect) ** 2 + (y - 0.18) ** 2)
    sun = np.clip((0.075 - r) / 0.01, 0.0, 1.0)
    for c, v in enumerate((255.0, 244.0, 200.0)):
        img[..., c] += sun * (v - img[..., c])

    # hills: a horizon made of a few sines; the ground below it is textured grass in perspective
    horizon = 0.58 + 0.035 * np.sin(7.0 * x + 0.4) + 0.015 * np.sin(23.0 * x + 1.3)
    depth = np.clip((y - horizon) / (1.0 - horizon), 0.0, 1.0)  # 0 at the horizon, 1 at the bottom
    ground = y >= horizon
    stripes = 0.5 + 0.5 * np.sin(x * (40.0 + 400.0 * depth) + 30.0 * depth)
    for c, (base, amp) in enumerate(((60.0, 35.0), (120.0, 50.0), (40.0, 25.0))):
        img[..., c] = np.where(ground, base + amp * stripes * (0.4 + 0.6 * depth), img[..., c])

    # buildings on the horizon, with rows of lit and unlit windows
    for _ in range(9):
        w = int(width * rng.uniform(0.04, 0.09))
        h = int(height * rng.uniform(0.12, 0.3))
        left = int(rng.uniform(0.0, 0.92) * width)
        base = int(height * 0.6)
        top = max(0, base - h)
        grey = rng.uniform(90, 170)
        block = img[top:base, left : left + w]
        block[...] = (grey, grey * 0.97, grey * 0.93)
        rows = np.arange(block.shape[0])[:, None]
        cols = np.arange(block.shape[1])[None, :]
        windows = ((rows % 48) > 14) & ((cols % 40) > 12) & ((rows // 48 + cols // 40) % 3 != 0)
        block[windows] = (235.0, 220.0, 150.0)

    # light and shade in blotches (low-frequency noise), then the sensor's noise
    small = rng.uniform(0.8, 1.15, size=(height // 128 + 2, width // 128 + 2)).astype(np.float32)
    light = np.asarray(Image.fromarray(small, mode="F").resize((width, height), Image.Resampling.BICUBIC))
    img *= light[..., None]
    img += rng.integers(-7, 8, size=img.shape, dtype=np.int8)
    return np.clip(img, 0.0, 255.0).astype(np.uint8)


def encode(pixels: np.ndarray, fmt: str) -> bytes:
    """``pixels`` (H x W x 3 uint8) as JPEG (quality ``JPEG_QUALITY``, 4:2:0) or PNG (Pillow's default level)."""
    buf = io.BytesIO()
    image = Image.fromarray(pixels, mode="RGB")
    if fmt == "jpeg":
        image.save(buf, format="JPEG", quality=JPEG_QUALITY, subsampling="4:2:0")
    elif fmt == "png":
        image.save(buf, format="PNG")
    else:
        raise ValueError(f"photos are {' or '.join(FORMATS)}, not {fmt!r}")
    return buf.getvalue()


def photo_dir() -> Path:
    """Where the photos are kept: ``$LATENCYLAB_VAR_DIR/photos`` (else ``var/photos`` beside the code)."""
    var = os.environ.get("LATENCYLAB_VAR_DIR") or str(Path(devicelab.__file__).resolve().parent.parent / "var")
    return Path(var) / "photos"


def photo_name(fmt: str, width: int, height: int, seed: int) -> str:
    """The file name of a photo: its scene version, seed, size and format."""
    return f"scene-v{SCENE_VERSION}-seed{seed}-{width}x{height}.{_SUFFIX[fmt]}"


def _write_atomically(path: Path, data: bytes) -> None:
    """Two workers making the same file at once each write their own and rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the photos from a worker run by another user
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def phone_photos(
    directory: Path | None = None,
    width: int = PHOTO_WIDTH,
    height: int = PHOTO_HEIGHT,
    seed: int = PHOTO_SEED,
) -> list[Photo]:
    """The scene as a JPEG and a PNG, read from ``directory`` (default ``photo_dir()``), made
    and saved there first when missing."""
    folder = photo_dir() if directory is None else directory
    photos: list[Photo] = []
    pixels: np.ndarray | None = None
    for fmt in FORMATS:
        path = folder / photo_name(fmt, width, height, seed)
        try:
            data = path.read_bytes()
        except OSError:
            if pixels is None:
                pixels = scene(width, height, seed)
            data = encode(pixels, fmt)
            try:
                _write_atomically(path, data)
            except OSError:
                pass  # a read-only var directory: the photos are made again next time
        photos.append(Photo(fmt, data, width, height))
    return photos


__all__ = [
    "FORMATS",
    "PHOTO_HEIGHT",
    "PHOTO_SEED",
    "PHOTO_WIDTH",
    "Photo",
    "encode",
    "phone_photos",
    "photo_dir",
    "scene",
]
