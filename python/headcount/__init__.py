"""headcount: audit the attention blocks and parameter counts of ONNX transformer models.

The same audit as the ``headcount`` command line, in process::

    import headcount
    report = headcount.audit("model.onnx")          # a path, bytes, or an onnx.ModelProto
    report.parameters.framework                      # what torch's sum(p.numel()) counts
    report.attention_blocks[0].heads
    report.check(max_params="110M", expect_heads=12) # the gates that fail, [] when none

A ``Report`` holds the fields of the JSON report (``headcount audit -f json``, one model) as
attributes, field for field; ``to_dict()`` gives that JSON object itself. A model that cannot be
read raises ``InputError`` (a ``ValueError``) with the command line's message.
"""

import json as _json
import os as _os
from typing import Any, Iterable, List, NamedTuple, Optional, Union

from . import _headcount
from ._headcount import InputError

__version__ = _headcount.__version__
__all__ = ["audit", "audit_many", "explain", "explain_config", "Report", "Record", "GateFailure", "InputError",
           "__version__"]


class Record:
    """A JSON object of the report, with its fields as attributes (``rec.heads``) and as items
    (``rec["heads"]``). Lists of objects come back as lists of ``Record``."""

    __slots__ = ("_data",)

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", data)

    @staticmethod
    def _wrap(value: Any) -> Any:
        if isinstance(value, dict):
            return Record(value)
        if isinstance(value, list):
            return [Record._wrap(v) for v in value]
        return value

    def __getattr__(self, name: str) -> Any:
        try:
            return Record._wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"no field '{name}' (fields: {', '.join(self._data)})") from None

    def __getitem__(self, name: str) -> Any:
        return Record._wrap(self._data[name])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a report is read-only")

    def __contains__(self, name: str) -> bool:
        return name in self._data

    def __dir__(self) -> List[str]:
        return list(self._data) + ["to_dict"]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other._data == self._data

    def __repr__(self) -> str:
        return f"Record({_json.dumps(self._data)[:200]})"

    def to_dict(self) -> dict:
        """This object as plain JSON data (a deep copy)."""
        return _json.loads(_json.dumps(self._data))


class GateFailure(NamedTuple):
    """A gate that failed: its id (``max-params``) and what failed, by how much."""
    gate: str
    message: str


class Report(Record):
    """One audited model: the fields of its JSON report as attributes."""

    __slots__ = ("_audit",)

    def __init__(self, handle: "_headcount.Audit"):
        document = _json.loads(handle.json())
        super().__init__(document["models"][0])
        object.__setattr__(self, "_audit", handle)

    def check(self, *, fail_on: Optional[str] = None, **budgets: Union[int, str, None]) -> List[GateFailure]:
        """The gates this model fails, as ``headcount audit`` checks them. Each budget gate is a
        keyword named as its option with ``_`` (``max_params``, ``expect_heads``: the list is
        ``_headcount.budget_keywords()``); budgets take counts (``110_000_000``) or the command
        line's forms (``"110M"``, ``"2GiB"``); ``fail_on`` is ``"error"``, ``"warning"`` or
        ``"info"``. An empty list means every gate passed."""
        failures = self._audit.check(budgets, fail_on)
        return [GateFailure(g, m) for g, m in failures]

    def _repr_html_(self) -> str:
        """The HTML report (``headcount audit -f html``), which notebooks show."""
        return self._audit.html()

    def explain_block(self, index: int) -> str:
        """How block ``index``'s count is derived from the model's tensors (``headcount explain MODEL --block N``)."""
        return self._audit.explain_block(index)

    def __repr__(self) -> str:
        p = self._data["parameters"]
        blocks, findings = len(self._data["attention_blocks"]), len(self._data["findings"])
        return (f"<headcount.Report {self._data['file']}: {p['framework']:,} parameters, "
                f"{blocks} attention block{'' if blocks == 1 else 's'}, {findings} finding{'' if findings == 1 else 's'}>")


def audit(model: Union[str, "_os.PathLike[str]", bytes, bytearray, memoryview, Any], *, content: bool = True,
          base_dir: Optional[str] = None, model_config: Optional[str] = None, name: Optional[str] = None,
          checkpoint: Union[str, "_os.PathLike[str]", None] = None,
          base: Union[str, "_os.PathLike[str]", None] = None) -> Report:
    """Audits one model, as ``headcount audit`` does, and returns its ``Report``.

    ``model`` is a file path, the serialized bytes of a model, or an ``onnx.ModelProto`` (serialized
    once). A model given in memory is read without a copy; its external data is resolved against
    ``base_dir`` (default: the current directory; no location may leave that folder, as on the
    command line) and it is named ``name`` in the report
    (default ``"<memory>"``). ``content=False`` skips the duplicate and buffer checks, which read
    weight bytes. ``model_config`` compares the model with a config.json; for a path, the one
    beside the model is read by default. ``checkpoint`` (a path; the model a path too) is
    ``--checkpoint``: the report's ``checkpoint`` says whether the export holds every weight of
    it, and ``check()`` fails the ``checkpoint`` gate on a lost or changed one. ``base`` (a path or
    an ``hf://`` id; the model a LoRA adapter's path) is ``--base``: the report's ``adapter`` gains
    ``base_check``, and ``check()`` fails the ``adapter-base`` gate on a module that does not fit.
    """
    if isinstance(model, (str, _os.PathLike)):
        return Report(_headcount.audit_path(_os.fspath(model), content, model_config, base_dir,
                                            None if checkpoint is None else _os.fspath(checkpoint),
                                            None if base is None else _os.fspath(base)))
    if checkpoint is not None or base is not None:
        raise TypeError("checkpoint= and base= read a model from its path: give the model's path")
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif hasattr(model, "SerializeToString"):
        data = model.SerializeToString()
    else:
        raise TypeError(f"audit() takes a path, bytes or an onnx.ModelProto, not {type(model).__name__}")
    return Report(_headcount.audit_bytes(data, name or "<memory>", content, model_config, base_dir))


def audit_many(paths: Iterable[Union[str, "_os.PathLike[str]"]], *, jobs: int = 1, content: bool = True) -> List[Report]:
    """Audits many files (folders are searched for .onnx files) on ``jobs`` threads, with the GIL
    released; the reports come back in input order. When files cannot be read, ``InputError``
    names every one of them."""
    results = _headcount.audit_many([_os.fspath(p) for p in paths], jobs, content)
    errors = [error for handle, error in results if handle is None]
    if errors:
        raise InputError("\n".join(errors))
    return [Report(handle) for handle, _ in results]


def explain(width: int, heads: int, *, head_dim: Optional[int] = None, key_channels: Optional[int] = None,
            v_head_dim: Optional[int] = None, kv_heads: Optional[int] = None, bias: bool = True,
            convention: str = "pytorch") -> Record:
    """The calculator (``headcount explain --width W --heads H``): each projection's size and
    count, the block's total and the standard 4·d² (+4·d), and ``explanation``, the calculator's
    text of how heads move the count under ``convention`` (``pytorch``, ``keras``, ``matlab``...).
    ``head_dim`` is per head (Keras' ``key_dim``); ``key_channels`` is the total over heads
    (MATLAB's ``NumKeyChannels``)."""
    return Record(_headcount.calculate(width, heads, head_dim, key_channels, v_head_dim, kv_heads, bias, convention))


def explain_config(path: Union[str, "_os.PathLike[str]"]) -> Record:
    """A whole model from its Hugging Face config.json (``headcount explain --config``): the
    parameters by part, the total, the active ones per token and the K/V cache per token."""
    return Record(_json.loads(_headcount.explain_config_json(_os.fspath(path))))
