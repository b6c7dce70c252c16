"""``sla_table``: the developer's question over a range of SLAs, per model (remote and on device)
and per policy, all measured on one stream of requests."""

from __future__ import annotations

import pytest

from devicelab.selection import ModelProfile, sla_table

BIG = ModelProfile("big", 76.0, 120.0, 12.0)
SMALL = ModelProfile("small", 60.0, 10.0, 1.0)
PHONE_COLD = ModelProfile.from_samples("small", 60.0, [180.0, 190.0, 200.0, 260.0])  # load + first run


def test_rows_per_model_and_policy_agree_with_each_other() -> None:
    t = sla_table([BIG, SMALL], sla_targets_ms=[150, 250, 400], profile="prototype_wifi", requests=3000, seed=2)
    assert t.sla_targets_ms == (150.0, 250.0, 400.0)
    for sla in t.sla_targets_ms:
        big, small = t.at("big", sla), t.at("small", sla)
        assert big.kind == small.kind == "remote"
        # The smaller model meets any SLA at least as often on the same requests; its accuracy is fixed.
        assert small.p_meet >= big.p_meet
        assert big.accuracy_within_sla == pytest.approx(76.0 * big.p_meet)
        greedy = t.at("greedy", sla)
        # Greedy ignores the network: it runs big at every one of these SLAs, so its row is big's row.
        assert (greedy.p_meet, greedy.expected_accuracy) == (big.p_meet, 76.0)
        lab = t.at("cnnselect_lab", sla)
        assert lab.kind == "policy"
        assert lab.p_meet >= greedy.p_meet
    assert t.at("big", 150).p_meet < 0.05 < 0.95 < t.at("big", 400).p_meet


def test_an_on_device_option_pays_no_network() -> None:
    t = sla_table(
        [BIG, SMALL], sla_targets_ms=[150, 300], profile="cellular_hotspot", on_device=[PHONE_COLD], requests=2000
    )
    phone = [r for r in t.rows if r.kind == "on_device"]
    assert [r.sla_ms for r in phone] == [150.0, 300.0]
    assert phone[0].p_meet == 0.0 and phone[1].p_meet == 1.0
    # Over a 400 ms hotspot (lognormal spread 0.4) few requests meet 300 ms remotely; the phone always does.
    assert t.at("small", 300).p_meet < 0.5
    assert t.as_dict()["rows"][0]["option"] == "big"


def test_paper_reading_and_bad_inputs() -> None:
    t = sla_table([BIG, SMALL], sla_targets_ms=[300], profile="lte", policy="paper", requests=500)
    assert {r.option for r in t.rows if r.kind == "policy"} == {"cnnselect", "greedy"}
    with pytest.raises(ValueError, match="policy"):
        sla_table([BIG], sla_targets_ms=[300], profile="lte", policy="greedy")
    with pytest.raises(ValueError, match="SLA"):
        sla_table([BIG], sla_targets_ms=[-1], profile="lte")
