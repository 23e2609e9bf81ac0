"""A TRL training script read as Python source with :mod:`ast`, never run (the shape of TRL's quickstart): the
keyword arguments of its one ``GRPOConfig(...)``, the model of ``GRPOTrainer(model=...)`` and the rank and target
modules of a ``LoraConfig(...)``, as the fields ``trl grpo --config`` takes.

A value is a literal, or a module-level name bound to one (``model_id = "Qwen/..."``; a model loaded with
``AutoModelForCausalLM.from_pretrained("Qwen/...")`` stands for its id). A value computed when the script runs is
an error only for a field the advisor reads. A ``LoraConfig`` means LoRA, with peft's default rank 8 when it
gives none (peft ``LoraConfig.r``).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from typing import Any

from ....errors import InputError

#: peft's ``LoraConfig`` default rank.
PEFT_DEFAULT_RANK = 8
_LORA = {"r": "lora_r", "target_modules": "lora_target_modules"}


class _RunTime:
    """A value the script computes when it runs (its source line)."""

    def __init__(self, line: int) -> None:
        self.line = line


def script_fields(text: str, name: str, read: Collection[str]) -> dict[str, Any]:
    """The GRPOConfig fields of a TRL script; ``read``: the fields the advisor reads (which must be values)."""
    try:
        tree = ast.parse(text, filename=name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"{name}: not a Python script" + (f" (line {line})" if line else "")) from None
    bound = _module_names(tree)
    calls = _calls(tree, ("GRPOConfig", "GRPOTrainer", "LoraConfig"))
    if len(calls["GRPOConfig"]) != 1:
        found = len(calls["GRPOConfig"])
        raise InputError(f"{name}: {found or 'no'} GRPOConfig(...) calls; the advisor reads a script with one")
    fields = _keywords(calls["GRPOConfig"][0], bound)
    for trainer in calls["GRPOTrainer"][:1]:
        model = _keywords(trainer, bound).get("model")
        if model is not None:
            fields.setdefault("model_name_or_path", model)
    for lora in calls["LoraConfig"][:1]:
        given = _keywords(lora, bound)
        fields.update({"use_peft": True, "lora_r": PEFT_DEFAULT_RANK})
        fields.update({_LORA[k]: v for k, v in given.items() if k in _LORA})
    for key, value in fields.items():
        if isinstance(value, _RunTime) and key in read:
            raise InputError(f"{name} line {value.line}: {key} is computed when the script runs; write its value")
    return {k: v for k, v in fields.items() if not isinstance(v, _RunTime)}


def _module_names(tree: ast.Module) -> dict[str, object]:
    """Module-level names bound once to a literal, or to ``X.from_pretrained("id", ...)`` (the id)."""
    bound: dict[str, object] = {}
    twice: set[str] = set()
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        target = node.targets[0].id
        twice |= {target} if target in bound else set()
        value = node.value
        if isinstance(value, ast.Call) and _callee(value) == "from_pretrained" and value.args:
            value = value.args[0]
        bound[target] = _literal(value, bound)
    return {k: v for k, v in bound.items() if k not in twice}


def _calls(tree: ast.Module, names: tuple[str, ...]) -> dict[str, list[ast.Call]]:
    found: dict[str, list[ast.Call]] = {n: [] for n in names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node) in found:
            found[_callee(node) or ""].append(node)
    return found


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _keywords(call: ast.Call, bound: Mapping[str, object]) -> dict[str, object]:
    return {k.arg: _literal(k.value, bound) for k in call.keywords if k.arg is not None}


def _literal(node: ast.expr, bound: Mapping[str, object]) -> object:
    if isinstance(node, ast.Name) and node.id in bound:
        return bound[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _RunTime(getattr(node, "lineno", 0))
