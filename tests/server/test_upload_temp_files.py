"""Upload temporary files older than any request (left by a web worker killed mid-upload) are
removed when a web worker starts; young ones and other files stay. (A real gunicorn worker
killed mid-upload: tests/e2e/test_web_worker_killed_mid_upload.py.)"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from server.networks.tempfiles import STALE_AFTER_SECONDS, remove_stale_upload_files


def _file(folder: Path, name: str, age: float) -> Path:
    path = folder / name
    path.write_bytes(b"x" * 1000)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_stale_upload_files_go_and_the_rest_stay(settings: Any, tmp_path: Path) -> None:
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    stale = _file(tmp_path, "tmpa1b2c3.upload.json", STALE_AFTER_SECONDS + 60)
    stale_no_ext = _file(tmp_path, "tmpd4e5f6.upload", 2 * STALE_AFTER_SECONDS)
    young = _file(tmp_path, "tmpg7h8i9.upload.onnx", 60)  # a request in another worker may still write it
    other = _file(tmp_path, "notes.txt", 10 * STALE_AFTER_SECONDS)
    (tmp_path / "old.upload.dir").mkdir()
    assert sorted(remove_stale_upload_files()) == sorted([stale, stale_no_ext])
    assert young.exists() and other.exists() and (tmp_path / "old.upload.dir").is_dir()
    assert remove_stale_upload_files() == []


def test_a_missing_folder_is_nothing_to_remove(settings: Any, tmp_path: Path) -> None:
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "absent")
    assert remove_stale_upload_files() == []
