"""The architecture of a model file, as lruc checks it.

`lruc model.lru --emit=ast` prints the checked model with every constant
resolved, one node per line, children indented:

    model listops @11:1
      input tokens vocab=18 length=6 @12:9
      block repeat=1 norm=batch @14:3
        lru state=3 r_min=0 ... @16:5

`load_spec` runs lruc and turns that into nested dictionaries, so that the
reference implementations build exactly the model lruc compiles (with the
same -D overrides) without parsing the language themselves.
"""

import re
import subprocess
from dataclasses import dataclass, field


@dataclass
class Node:
    kind: str
    args: dict
    children: list = field(default_factory=list)


@dataclass
class Spec:
    name: str
    input: Node
    encoder: Node
    blocks: list  # [(Node block, [Node layer])], one entry per repetition
    pool: str
    head: Node
    loss: str
    # Cross entropy against (1 - s) onehot + s / K (`loss cross_entropy(
    # label_smoothing: s)`).
    label_smoothing: float = 0.0
    # A weight a class (`class_weights: [...]`), or None: the loss is
    # sum w[label] loss / sum w[label].
    class_weights: list = None
    # Huber's threshold (`loss huber(delta: d)`): squared below, linear above.
    huber_delta: float = 1.0

    def param_layers(self):
        """(block index, layer node, parameter prefix) for every layer; the
        prefix is None for a layer without parameters."""
        for index, (block, layers) in enumerate(self.blocks):
            counts = {}
            for layer in layers:
                if layer.kind in _PARAM_KINDS:
                    counts[layer.kind] = counts.get(layer.kind, 0) + 1
            seen = {}
            for layer in layers:
                prefix = None
                if layer.kind in _PARAM_KINDS:
                    prefix = f"blocks.{index}.{layer.kind}"
                    if counts[layer.kind] > 1:
                        prefix += f".{seen.get(layer.kind, 0)}"
                        seen[layer.kind] = seen.get(layer.kind, 0) + 1
                yield index, layer, prefix


# Layer kinds with parameters, named `blocks.I.KIND[.ORDINAL]` (MLIRGen).
_PARAM_KINDS = ("lru", "glru", "linear", "glu", "mlp")

_LOCATION = re.compile(r"\s@\d+:\d+$")


def _value(text):
    if text in ("true", "false"):
        return text == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _parse_line(line):
    words = _LOCATION.sub("", line.strip()).split()
    kind, positional, args = words[0], [], {}
    for word in words[1:]:
        if "=" in word:
            key, value = word.split("=", 1)
            args[key] = _value(value)
        else:
            positional.append(word)
    if positional:
        args["kind"] = positional[0]
    return Node(kind, args)


def parse_ast(text):
    """A Spec from `lruc --emit=ast` output."""
    root, stack = None, []
    for line in text.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        node = _parse_line(line)
        del stack[depth:]
        if stack:
            stack[-1].children.append(node)
        else:
            root = node
        stack.append(node)
    if root is None or root.kind != "model":
        raise ValueError("not an lruc model AST")
    parts = {}
    blocks = []
    for child in root.children:
        if child.kind == "block":
            for _ in range(child.args.get("repeat", 1)):
                blocks.append((child, child.children))
        else:
            parts[child.kind] = child
    return Spec(name=root.args["kind"], input=parts["input"],
                encoder=parts["encoder"], blocks=blocks,
                pool=parts["pool"].args["kind"] if "pool" in parts else "none",
                head=parts["head"], loss=parts["loss"].args["kind"],
                label_smoothing=float(
                    parts["loss"].args.get("label_smoothing", 0.0)),
                class_weights=_floats(parts["loss"].args.get("class_weights")),
                huber_delta=float(parts["loss"].args.get("delta", 1.0)))


def _floats(value):
    """`1,3` (a list printed by --emit=ast) as [1.0, 3.0]; None stays."""
    if value is None:
        return None
    return [float(v) for v in str(value).split(",")]


def load_spec(lruc, model_file, defines=None):
    """Runs `lruc --emit=ast` on model_file with -D NAME=VALUE overrides."""
    command = [str(lruc), str(model_file), "--no-train", "--emit=ast"]
    for name, value in (defines or {}).items():
        command += ["-D", f"{name}={value}"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
    return parse_ast(result.stdout)
