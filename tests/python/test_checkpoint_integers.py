"""A torch state_dict with integer tensors (issue 37, item 2), written as safetensors here and
audited: every stored element is in the stored total, against torch's own numel() of every tensor
of the state_dict; the integer ones (BatchNorm's 0-d num_batches_tracked, an int64 index buffer)
are named as buffers and left out of the framework count, which equals torch's numel() of the
floating-point tensors.

The writer below follows the format's specification (an 8-byte little-endian header length, a JSON
header of {name: {dtype, shape, data_offsets}}, the tensors' bytes one after another); it is this
test's own, independent of headcount's reader.
"""
import json
import math
import struct

import torch
import torch.nn as nn

import headcount

CODES = {torch.float32: "F32", torch.int64: "I64", torch.int32: "I32"}


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        b = tensors[name].detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": CODES[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return sum(math.prod(t.shape) for t in tensors.values())  # the header's shape products (1 for [])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn1 = nn.BatchNorm2d(8)
        self.bn2 = nn.BatchNorm1d(16)
        self.fc = nn.Linear(8, 16)
        self.register_buffer("position_ids", torch.arange(12, dtype=torch.int64).unsqueeze(0))
        self.register_buffer("bucket", torch.zeros(5, dtype=torch.int32))


def test_integer_and_0d_tensors_are_counted_and_named(tmp_path):
    state = Net().state_dict()
    stored = sum(t.numel() for t in state.values())
    floats = sum(t.numel() for t in state.values() if t.is_floating_point())
    integers = {n: t.numel() for n, t in state.items() if not t.is_floating_point()}
    # conv 8·3·3·3 + 8 = 224; bn1 4 · 8 = 32 and its counter 1; bn2 4 · 16 = 64 and its counter 1;
    # fc 16·8 + 16 = 144; position_ids 12; bucket 5: 224 + 32 + 64 + 144 = 464 floats, 19 integers.
    assert (stored, floats) == (483, 464)
    assert integers == {"bn1.num_batches_tracked": 1, "bn2.num_batches_tracked": 1, "position_ids": 12, "bucket": 5}
    path = tmp_path / "model.safetensors"
    assert write_safetensors(path, state) == stored
    r = headcount.audit(path)
    assert r.parameters.stored == stored
    assert r.parameters.buffers == 19
    assert r.parameters.framework == floats
    reasons = {b.name: b.reason for b in r.buffers}
    assert reasons == {
        "bn1.num_batches_tracked": "a BatchNorm's batch counter (int64), not learned",
        "bn2.num_batches_tracked": "a BatchNorm's batch counter (int64), not learned",
        "position_ids": "an integer tensor (int64): indices or a buffer, not a learned parameter",
        "bucket": "an integer tensor (int32): indices or a buffer, not a learned parameter",
    }
    # Every stored element has a part: the composition adds up to the stored total.
    c = r.parameters.composition
    assert c.buffers == 19
    assert sum(c.to_dict().values()) == stored
