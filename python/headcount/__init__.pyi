# Type hints for the headcount package. The report's classes mirror the JSON report
# (docs/json.md, docs/headcount.schema.json); fields not named here are still attributes.
from os import PathLike
from typing import Any, Iterable, List, NamedTuple, Optional, Union

__version__: str

class InputError(ValueError): ...

class Record:
    def __getattr__(self, name: str) -> Any: ...
    def __getitem__(self, name: str) -> Any: ...
    def __contains__(self, name: str) -> bool: ...
    def to_dict(self) -> dict: ...

class GateFailure(NamedTuple):
    gate: str
    message: str

class Composition(Record):
    attention: int
    embeddings: int
    feed_forward: int
    routed_experts: int
    routers: int
    norms: int
    buffers: int
    other: int

class Parameters(Record):
    stored: int
    bytes: int
    tensors: int
    unique: int
    buffers: int
    merged: int
    framework: int
    content_compared: bool
    attention: int
    composition: Composition

class TensorShare(Record):
    name: str
    role: str
    shape: List[int]
    elements: int
    slice: Optional[str]

class Projection(Record):
    found: bool
    weight: int
    bias: int
    total: int
    from_input: Optional[str]
    tensors: List[TensorShare]

class Projections(Record):
    q: Projection
    k: Projection
    v: Projection
    o: Projection

class Extra(Record):
    name: str
    role: str
    elements: int
    shape: List[int]

class Latent(Record):
    q_rank: int
    kv_rank: int
    rope_dim: int
    qk_nope_dim: int
    v_head_dim: int

class AttentionBlock(Record):
    index: int
    name: str
    form: str
    kind: str
    heads: Optional[int]
    kv_heads: Optional[int]
    heads_from: str
    width: Optional[int]
    head_dim: Optional[int]
    v_head_dim: Optional[int]
    latent: Optional[Latent]
    total: int
    standard: int
    projections: Projections
    score_path: List[str]
    extras: List[Extra]
    notes: List[str]

class ExpertLayer(Record):
    index: int
    name: str
    form: str
    experts: Optional[int]
    top_k: Optional[int]
    found: int
    expert_parameters: Optional[int]
    routed_parameters: int
    router_parameters: int
    shared_parameters: int
    shared_experts: int
    notes: List[str]

class Experts(Record):
    active_parameters: Optional[int]
    idle_parameters: Optional[int]
    unexamined: int
    layers: List[ExpertLayer]

class Finding(Record):
    rule: str
    severity: str
    block: Optional[int]
    message: str

class Unmatched(Record):
    node: str
    op_type: str
    reason: str

class Tensor(Record):
    name: str
    graph: str
    dtype: str
    shape: List[int]
    elements: int
    bytes: int
    storage: str
    consumers: List[str]

class Report(Record):
    file: str
    model: Record
    parameters: Parameters
    buffers: List[Record]
    merged: List[Record]
    duplicates: List[Record]
    by_dtype: List[Record]
    by_storage: List[Record]
    tensors: List[Tensor]
    attention_blocks: List[AttentionBlock]
    declared: Optional[Record]
    experts: Experts
    cost: Record
    checkpoint: Optional[Record]
    findings: List[Finding]
    unmatched: List[Unmatched]
    gates: List[Record]
    def check(self, *, max_params: Union[int, str, None] = ..., max_attention_params: Union[int, str, None] = ...,
              max_bytes: Union[int, str, None] = ..., expect_heads: Optional[int] = ...,
              max_kv_bytes_per_token: Union[int, str, None] = ..., max_macs_per_token: Union[int, str, None] = ...,
              max_active_params: Union[int, str, None] = ..., fail_on: Optional[str] = ...) -> List[GateFailure]: ...
    def explain_block(self, index: int) -> str: ...
    def _repr_html_(self) -> str: ...

class ProjectionCount(Record):
    role: str
    weight: int
    bias: int
    formula: str

class Calculation(Record):
    width: int
    heads: int
    head_dim: int
    v_head_dim: int
    kv_heads: int
    bias: bool
    projections: List[ProjectionCount]
    total: int
    standard: int
    convention: str
    explanation: str

def audit(model: Union[str, PathLike[str], bytes, bytearray, memoryview, Any], *, content: bool = ...,
          base_dir: Optional[str] = ..., model_config: Optional[str] = ..., name: Optional[str] = ...,
          checkpoint: Union[str, PathLike[str], None] = ...) -> Report: ...
def audit_many(paths: Iterable[Union[str, PathLike[str]]], *, jobs: int = ..., content: bool = ...) -> List[Report]: ...
def explain(width: int, heads: int, *, head_dim: Optional[int] = ..., key_channels: Optional[int] = ...,
            v_head_dim: Optional[int] = ..., kv_heads: Optional[int] = ..., bias: bool = ...,
            convention: str = ...) -> Calculation: ...
def explain_config(path: Union[str, PathLike[str]]) -> Record: ...
