"""A TRL training script read as Python source with :mod:`ast`, never run: the fields of the ``GRPOConfig`` its
``GRPOTrainer`` trains with, the model and the LoRA adapter, as ``trl grpo --config`` takes them.

The source is parsed as Python runs it (its bytes, so that an encoding cookie is honoured). Statements are followed
in order (module level, ``if __name__ == "__main__":``, function bodies): a name bound to a literal, a model loaded
with ``X.from_pretrained("id")`` (its id; ``get_peft_model(model, config)`` keeps it and adds the LoRA config), a
``LoraConfig(...)`` (peft's default rank 8 when it gives none), a ``GRPOConfig(...)`` (keywords, ``**{...}``),
assignments to its fields after it is built (``args.beta = 0.0``) and the first ``load_dataset("id")`` (as the
``dataset_name`` that ``trl grpo`` takes, which names the workload). A value computed when the script runs is an error
only for a field the advisor reads, with its line; so is a field set inside a branch or loop, or ``**`` of a value
the script computes. A script that takes its GRPOConfig from the command line (``TrlParser((..., GRPOConfig,
...))``) is read with the arguments it is given (``--config recipe.yaml --field value``, :func:`argument_fields`).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....errors import InputError, quote

#: peft's ``LoraConfig`` default rank.
PEFT_DEFAULT_RANK = 8
_LORA = {"r": "lora_r", "target_modules": "lora_target_modules"}
_PARSERS = ("TrlParser", "HfArgumentParser")


class _RunTime:
    """A value the script computes when it runs (its source line)."""

    def __init__(self, line: int) -> None:
        self.line = line


@dataclass
class _Model:
    id: object
    lora: _Lora | None = None


@dataclass
class _Lora:
    fields: dict[str, object]


@dataclass
class _Config:
    fields: dict[str, object]
    line: int
    parsed: bool = False  # from the command line (TrlParser)


@dataclass
class _Parser:
    classes: list[str]


@dataclass
class _Flow:
    names: dict[str, object] = field(default_factory=dict)
    configs: list[_Config] = field(default_factory=list)
    loras: list[_Lora] = field(default_factory=list)
    trainers: list[dict[str, object]] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)  # the Hub ids of load_dataset("...") calls, in order


def script_fields(
    text: str, name: str, read: Collection[str], arguments: Sequence[str] | None = None, folder: Path | None = None
) -> dict[str, Any]:
    """The GRPOConfig fields of a TRL script; ``read``: the fields the advisor reads (which must be values)."""
    tree = _parsed(text, name)
    flow = _Flow()
    _walk(tree.body, flow, conditional=False, arguments=arguments, name=name, folder=folder)
    config = _the_config(flow, name)
    fields = dict(config.fields)
    trainer = next((t for t in flow.trainers if t.get("args") is config), flow.trainers[0] if flow.trainers else {})
    model = trainer.get("model")
    model = model.id if isinstance(model, _Model) else model
    if model is not None and not isinstance(model, _Config):
        fields.setdefault("model_name_or_path", model)
    if flow.datasets:
        fields.setdefault("dataset_name", flow.datasets[0])
    lora = trainer.get("peft_config")
    trained = trainer.get("model")
    lora = lora if isinstance(lora, _Lora) else trained.lora if isinstance(trained, _Model) else None
    lora = lora or (flow.loras[0] if flow.loras else None)
    if isinstance(lora, _Lora):
        fields.update({"use_peft": True, "lora_r": PEFT_DEFAULT_RANK})
        fields.update({_LORA[k]: v for k, v in lora.fields.items() if k in _LORA})
    for key, value in fields.items():
        if isinstance(value, _RunTime) and key in read:
            raise InputError(f"{name} line {value.line}: {key} is computed when the script runs; write its value")
    return {k: v for k, v in fields.items() if not isinstance(v, (_RunTime, _Model, _Lora, _Config))}


def _parsed(text: str, name: str) -> ast.Module:
    """The module Python would run: parsed from its bytes, so that its encoding cookie decodes it as Python does."""
    try:
        return ast.parse(text.encode("utf-8"), filename=name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{name} line {line}" if line else name
        message = str(getattr(exc, "msg", "") or exc)
        if "Exceeds the limit" in message:
            raise InputError(f"{where}: an integer of more than 4,300 digits (no setting holds one)") from None
        if "encoding" in message:
            raise InputError(f"{name}: its encoding declaration names an encoding Python cannot read it in") from None
        raise InputError(f"{name}: not a Python script" + (f" (line {line})" if line else "")) from None


def _the_config(flow: _Flow, name: str) -> _Config:
    """The GRPOConfig the trainer trains with (the script's only one when no trainer names it)."""
    for trainer in flow.trainers:
        if isinstance(trainer.get("args"), _Config):
            return trainer["args"]  # type: ignore[return-value]
    if len(flow.configs) != 1:
        found = len(flow.configs)
        raise InputError(f"{name}: {found or 'no'} GRPOConfig(...) calls; the advisor reads a script with one")
    return flow.configs[0]


def _walk(body: list[ast.stmt], flow: _Flow, *, conditional: bool, **context: Any) -> None:
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            _assign(node, flow, conditional, context)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            _value(node.value, flow, context)
        elif isinstance(node, ast.If) and _is_main(node.test):
            _walk(node.body, flow, conditional=conditional, **context)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _walk(node.body, flow, conditional=conditional, **context)
        elif isinstance(node, ast.With):
            _walk(node.body, flow, conditional=conditional, **context)
        elif isinstance(node, (ast.If, ast.For, ast.While, ast.Try, ast.AsyncFor, ast.AsyncWith)):
            for part in ("body", "orelse", "finalbody"):
                _walk(getattr(node, part, []), flow, conditional=True, **context)
            for handler in getattr(node, "handlers", []):
                _walk(handler.body, flow, conditional=True, **context)


def _assign(node: ast.Assign | ast.AnnAssign, flow: _Flow, conditional: bool, context: dict[str, Any]) -> None:
    if node.value is None:
        return
    value = _value(node.value, flow, context)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if isinstance(target, ast.Name):
            flow.names[target.id] = _RunTime(node.lineno) if conditional else value
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            owner = flow.names.get(target.value.id)
            if isinstance(owner, _Config):
                owner.fields[target.attr] = _RunTime(node.lineno) if conditional else value
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, tuple):
            for element, item in zip(target.elts, value):
                if isinstance(element, ast.Name):
                    flow.names[element.id] = _RunTime(node.lineno) if conditional else item


def _is_main(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _value(node: ast.expr, flow: _Flow, context: dict[str, Any]) -> object:
    """What ``node`` evaluates to, as far as the source says."""
    if isinstance(node, ast.Name):
        return flow.names.get(node.id, _RunTime(node.lineno))
    if isinstance(node, ast.Call):
        return _call(node, flow, context)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e, flow, context) for e in node.elts]
        return _RunTime(node.lineno) if any(isinstance(i, _RunTime) for i in items) else (
            list(items) if isinstance(node, ast.List) else tuple(items))  # fmt: skip
    if isinstance(node, ast.Dict):
        keys = [_value(k, flow, context) if k is not None else None for k in node.keys]
        values = [_value(v, flow, context) for v in node.values]
        if any(not isinstance(k, str) for k in keys) or any(isinstance(v, _RunTime) for v in values):
            return _RunTime(node.lineno)
        return dict(zip(keys, values))
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _RunTime(getattr(node, "lineno", 0))


def _call(node: ast.Call, flow: _Flow, context: dict[str, Any]) -> object:
    callee = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(
        node.func, ast.Attribute) else None  # fmt: skip
    if callee == "from_pretrained" and node.args:
        return _Model(_value(node.args[0], flow, context))
    if callee == "get_peft_model" and node.args:
        base = _value(node.args[0], flow, context)
        lora = _value(node.args[1], flow, context) if len(node.args) > 1 else _keywords(node, flow, context).get(
            "peft_config")  # fmt: skip
        model = base if isinstance(base, _Model) else _Model(base)
        return _Model(model.id, lora if isinstance(lora, _Lora) else model.lora)
    if callee == "LoraConfig":
        lora = _Lora(_keywords(node, flow, context))
        flow.loras.append(lora)
        return lora
    if callee == "GRPOConfig":
        config = _Config(_keywords(node, flow, context), node.lineno)
        flow.configs.append(config)
        return config
    if callee in ("GRPOTrainer", "load_dataset"):  # values only the running script has, noted
        _noted(callee, node, flow, context)
        return _RunTime(node.lineno)
    if callee in _PARSERS and node.args:
        classes = node.args[0].elts if isinstance(node.args[0], (ast.Tuple, ast.List)) else [node.args[0]]
        return _Parser([c.id if isinstance(c, ast.Name) else "" for c in classes])
    if callee in ("parse_args_and_config", "parse_args_into_dataclasses") and isinstance(node.func, ast.Attribute):
        parser = _value(node.func.value, flow, context)
        if isinstance(parser, _Parser) and "GRPOConfig" in parser.classes:
            return _parsed_dataclasses(parser, node.lineno, flow, context)
    return _RunTime(node.lineno)


def _noted(callee: str, node: ast.Call, flow: _Flow, context: dict[str, Any]) -> None:
    """A trainer's keywords; the Hub id a ``load_dataset`` call names (the data names the workload: ..workloads)."""
    if callee == "GRPOTrainer":
        flow.trainers.append(_keywords(node, flow, context))
        return
    name = _value(node.args[0], flow, context) if node.args else None
    if isinstance(name, str):
        flow.datasets.append(name)


def _keywords(node: ast.Call, flow: _Flow, context: dict[str, Any]) -> dict[str, object]:
    out: dict[str, object] = {}
    for keyword in node.keywords:
        value = _value(keyword.value, flow, context)
        if keyword.arg is not None:
            out[keyword.arg] = value
        elif isinstance(value, dict):
            out.update(value)
        else:  # ** of a value the script computes: any field may come from it
            raise InputError(
                f"{context['name']} line {keyword.value.lineno}: {_callee_name(node)}(**...) takes its fields from a "
                "value computed when the script runs; write them as keywords or a dict literal"
            )
    return out


def _callee_name(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "a call")


def _parsed_dataclasses(parser: _Parser, line: int, flow: _Flow, context: dict[str, Any]) -> tuple[object, ...]:
    """What ``TrlParser((...)).parse_args_and_config()`` returns: one object per dataclass, the GRPOConfig's (and
    ModelConfig's) fields from the script's arguments."""
    arguments, name = context.get("arguments"), context["name"]
    if not arguments:
        raise InputError(
            f"{name} line {line}: the GRPOConfig comes from the command line (TrlParser): give its arguments after "
            f"-- (advise --trl {name} -- --config recipe.yaml)"
        )
    fields = argument_fields(arguments, name, context.get("folder") or Path.cwd())
    config = _Config(fields, line, parsed=True)
    flow.configs.append(config)
    return tuple(config if c in ("GRPOConfig", "ModelConfig") else _RunTime(line) for c in parser.classes)


def argument_fields(arguments: Sequence[str], name: str, folder: Path) -> dict[str, Any]:
    """Fields from a TRL command line as ``TrlParser`` takes it: ``--config FILE`` (a YAML of fields, found from
    ``folder`` and the folders above it), then ``--field value`` / ``--field=value`` / ``--flag`` over it."""
    from ....userfile import parse_structured, read_text
    from ..verl.hydra import hydra_value
    from ..verl.values import check_digits

    given: dict[str, Any] = {}
    config_file: str | None = None
    items = list(arguments)
    i = 0
    while i < len(items):
        word = items[i]
        i += 1
        if not word.startswith("--"):
            continue
        key, equals, value = word[2:].partition("=")
        if not equals:
            if i < len(items) and not items[i].startswith("--"):
                value, i = items[i], i + 1
            else:
                value = "true"
        check_digits(value, f"{name}: --{key}")
        if key == "config":
            config_file = value
        else:
            given[key.replace("-", "_")] = hydra_value(value)
    fields: dict[str, Any] = {}
    if config_file is not None:
        path = Path(config_file)
        places = [path] if path.is_absolute() else [f / path for f in (folder, *folder.parents)][:6] + [path]
        found = next((p for p in places if p.is_file()), None)
        if found is None:
            raise InputError(f"{name}: --config {quote(config_file)}: no such file (looked from {folder} up)")
        data = parse_structured(read_text(found, "TRL config"), str(found), found.suffix.lower() or ".yaml")
        if not isinstance(data, dict):
            raise InputError(f"{found}: a TRL config is a mapping of GRPOConfig fields (num_generations: 8, ...)")
        fields.update(data)
    fields.update(given)
    return fields
