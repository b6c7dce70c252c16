"""The batched SGEMM kernels compute A x B within the fp32 accumulation bound of numpy's float64
product, for odd sizes, one column, broadcast weights, fused bias and activations and
variable-sized batches; a tenant's problem gives the same bits alone and in any batch."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.tenancy.gemm import (
    GemmShape,
    GemmTile,
    Strided,
    VariableBatch,
    VariableProblem,
    check_against_numpy,
    choose_tile,
    strided_launch,
)

SHAPES = [(1, 1, 1), (7, 5, 3), (33, 17, 65), (64, 1, 130), (9, 40, 16), (512, 1, 512)]


@pytest.fixture(scope="module")
def queue(found: FoundDevice) -> cl.CommandQueue:
    return cl.CommandQueue(context_for(found), found.device)


def _upload(queue: cl.CommandQueue, array: np.ndarray) -> cl.Buffer:
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(queue.context, flags, hostbuf=np.ascontiguousarray(array, np.float32))


def _read(queue: cl.CommandQueue, buf: cl.Buffer, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, np.float32)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out


def _operands(r: int, m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((r, m, k), dtype=np.float32), rng.standard_normal((r, k, n), dtype=np.float32)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_strided_batch_matches_numpy_and_single_launches(found: FoundDevice, queue: cl.CommandQueue, m, n, k) -> None:
    r = 3
    a, b = _operands(r, m, n, k)
    s = GemmShape(m, n, k)
    ab, bb = _upload(queue, a), _upload(queue, b)
    c = _upload(queue, np.full((r, m, n), np.nan, np.float32))
    ctx = context_for(found)
    strided_launch(found, ctx, s, r, ab, bb, c, Strided(0, m * k), Strided(0, k * n), Strided(0, m * n)).enqueue(queue)
    batched = _read(queue, c, (r, m, n))
    for i in range(r):
        check = check_against_numpy(a[i], b[i], batched[i])
        assert check.correct, f"{s.name} problem {i}: {check}"
    c2 = _upload(queue, np.full((r, m, n), np.nan, np.float32))
    for i in reversed(range(r)):
        strided_launch(
            found, ctx, s, 1, ab, bb, c2, Strided(i * m * k), Strided(i * k * n), Strided(i * m * n)
        ).enqueue(queue)
    single = _read(queue, c2, (r, m, n))
    assert np.array_equal(single.view(np.uint32), batched.view(np.uint32)), "a problem's bits depend on its batch"


@pytest.mark.parametrize("tile", [GemmTile(1, 8), GemmTile(4, 3), GemmTile(16, 8)])
def test_any_tile_gives_the_same_bits(found: FoundDevice, queue: cl.CommandQueue, tile: GemmTile) -> None:
    m, n, k = 21, 37, 29
    a, b = _operands(1, m, n, k, seed=1)
    s = GemmShape(m, n, k)
    ab, bb, c = _upload(queue, a), _upload(queue, b), _upload(queue, np.zeros((m, n)))
    ctx = context_for(found)
    strided_launch(found, ctx, s, 1, ab, bb, c, Strided(), Strided(), Strided(), tile=tile).enqueue(queue)
    got = _read(queue, c, (m, n))
    assert check_against_numpy(a[0], b[0], got).correct
    strided_launch(found, ctx, s, 1, ab, bb, c, Strided(), Strided(), Strided(), tile=GemmTile(2, 1)).enqueue(queue)
    assert np.array_equal(_read(queue, c, (m, n)).view(np.uint32), got.view(np.uint32))


@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_broadcast_weights_with_bias_and_activation(found: FoundDevice, queue: cl.CommandQueue, activation) -> None:
    r, m, n, k = 4, 13, 10, 23
    a, b = _operands(r, m, n, k, seed=2)
    bias = np.random.default_rng(3).standard_normal((r, m), dtype=np.float32) * 4
    ab, bb, biasb = _upload(queue, a), _upload(queue, b), _upload(queue, bias)
    c = _upload(queue, np.zeros((r, m, n)))
    strided_launch(
        found,
        context_for(found),
        GemmShape(m, n, k),
        r,
        ab,
        bb,
        c,
        Strided(m * k, 0),  # tenant 1's weights for every input
        Strided(0, k * n),
        Strided(0, m * n),
        bias=biasb,
        bias_at=Strided(0, m),
        activation=activation,
    ).enqueue(queue)
    got = _read(queue, c, (r, m, n))
    for i in range(r):
        want = a[1].astype(np.float64) @ b[i].astype(np.float64) + bias[i][:, None]
        if activation == "relu":
            want = np.maximum(want, 0)
        elif activation == "relu6":
            want = np.clip(want, 0, 6)
        assert np.abs(got[i] - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    if activation == "relu6":
        assert got.max() <= 6.0 and got.min() >= 0.0 and (got == 6.0).any()


def test_variable_sized_batch(found: FoundDevice, queue: cl.CommandQueue) -> None:
    shapes = [GemmShape(5, 3, 7), GemmShape(64, 1, 33), GemmShape(17, 40, 2), GemmShape(1, 1, 1), GemmShape(30, 9, 50)]
    rng = np.random.default_rng(4)
    a_parts = [rng.standard_normal((s.m, s.k), dtype=np.float32) for s in shapes]
    b_parts = [rng.standard_normal((s.k, s.n), dtype=np.float32) for s in shapes]
    a_off = np.cumsum([0] + [x.size for x in a_parts])
    b_off = np.cumsum([0] + [x.size for x in b_parts])
    c_off = np.cumsum([0] + [s.m * s.n for s in shapes])
    ab = _upload(queue, np.concatenate([x.ravel() for x in a_parts]))
    bb = _upload(queue, np.concatenate([x.ravel() for x in b_parts]))
    c = _upload(queue, np.full(int(c_off[-1]) + 8, -7.0, np.float32))  # 8 guard elements
    problems = [VariableProblem(s, int(a_off[i]), int(b_off[i]), int(c_off[i])) for i, s in enumerate(shapes)]
    batch = VariableBatch(found, context_for(found), queue, problems, ab, bb, c)
    try:
        batch.launch.enqueue(queue)
        out = _read(queue, c, (int(c_off[-1]) + 8,))
    finally:
        batch.release()
    for i, s in enumerate(shapes):
        got = out[c_off[i] : c_off[i + 1]].reshape(s.m, s.n)
        assert check_against_numpy(a_parts[i], b_parts[i], got).correct, s.name
    assert (out[-8:] == -7.0).all(), "the batch wrote past its last problem"


def test_numpy_check_catches_a_wrong_result() -> None:
    a, b = _operands(1, 16, 8, 300, seed=5)
    right = (a[0].astype(np.float64) @ b[0].astype(np.float64)).astype(np.float32)
    assert check_against_numpy(a[0], b[0], right).correct
    wrong = right.copy()
    wrong[3, 4] += a[0][3, 7] * b[0][7, 4]  # one term counted twice
    assert not check_against_numpy(a[0], b[0], wrong).correct


def test_tile_follows_the_device_and_the_columns(found: FoundDevice) -> None:
    assert choose_tile(found.limits, 1).vector == 1
    wide = choose_tile(found.limits, 256)
    assert wide.vector <= 16 and wide.vector & (wide.vector - 1) == 0
    assert GemmShape.parse("256x128x1152") == GemmShape(256, 128, 1152)
    with pytest.raises(ValueError):
        GemmShape.parse("256x128")
