"""A LoRA adapter and its base through the module (issue 38, item 2), as `headcount audit ADAPTER
--base MODEL`: samples/lora_peft is samples/make_adapter.py's PEFT adapter for llama_tiny, q_proj
32 -> 32 and v_proj 32 -> 16 at rank 4 in 2 layers: 2 x (4·32 + 32·4 + 4·32 + 16·4) = 896."""
import os
import sys

import headcount

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLES = os.path.join(REPO, "samples")
sys.path.insert(0, SAMPLES)
from make_adapter import write_peft_adapter  # noqa: E402  (the sample adapter's writer)


def test_an_adapter_and_the_base_it_fits():
    r = headcount.audit(os.path.join(SAMPLES, "lora_peft"), base=os.path.join(SAMPLES, "llama_tiny.safetensors"))
    assert r.adapter["total"] == 896
    assert r.adapter["rank"] == 4
    assert r.adapter["base_check"]["fitted"] == 4
    assert r.adapter["base_check"]["parameters"] == 24_992  # llama_tiny.counts.tsv
    assert r.check() == []


def test_an_adapter_made_for_another_base_fails_its_gate(tmp_path):
    # v_proj 32 -> 32 (a model without grouped K/V) against llama_tiny's v_proj [16, 32].
    write_peft_adapter(str(tmp_path), [("v_proj", 32)])
    r = headcount.audit(str(tmp_path), base=os.path.join(SAMPLES, "llama_tiny.safetensors"))
    assert len(r.adapter["base_check"]["misfits"]) == 2
    assert [g.gate for g in r.check()] == ["adapter-base"]
