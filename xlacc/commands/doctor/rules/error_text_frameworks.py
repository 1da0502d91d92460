"""The error texts of jax's sharding, vmap and grad, and of torchax, as data (see
:mod:`.error_text_table`)."""

from __future__ import annotations

from xlacc.commands.doctor.rules.error_text_table import Cause, TextRule, _rule

FRAMEWORK_RULES: tuple[TextRule, ...] = (
    # -- sharding, vmap and grad (jax 0.10 and 0.11 texts) ----------------------------------------
    _rule(
        "shardy-callbacks",
        ("Shardy", "GSPMD"),
        r"(?P<msg>Shardy\s+is\s+used,\s+but\s+sharding\s+propagation\s+callbacks\s+instead\s+of\s+sharding_rule\s+are\s+provided"
        r"|does\s+not\s+support\s+GSPMD\s+sharding\s+propagation\s+rules)",
        Cause("sharding-rule-missing", 0.9),
    ),
    _rule(
        "ffi-vmap",
        ("vmap_method",),
        r"vmap\s+is\s+only\s+supported\s+for\s+the\s+(?P<primitive>\w+)\s+primitive\s+when\s+vmap_method\s+is\s+one\s+of.{0,200}?Got\s+vmap_method=None",
        Cause("vmap-method-missing", 0.9),
    ),
    _rule(
        "ffi-grad",
        ("differentiated",),
        r"The\s+FFI\s+call\s+to\s+`?(?P<target>[\w.\-:]+?)`?\s+cannot\s+be\s+differentiated",
        Cause("grad-undefined", 0.9, title="jax.grad of `{target}`, which has no backward"),
    ),
    # -- torchax 0.0.13 (texts reproduced with torch 2.9.0 and jax 0.10.2) ---------------------
    _rule(
        "torchax-operator-not-found",
        ("has no lowering",),
        r"Operator\s+with\s+name\s+(?P<op>[\w:.]+)\s+has\s+no\s+lowering",
        Cause("torchax-no-lowering", 0.9, title="`{op}` has no torchax lowering"),
    ),
    _rule(
        "torchax-math-outside",
        ("can only do math",),
        # The frames of a torch.library op before the message tell a missing lowering from code
        # that ran outside the environment: both end in this one text.
        r"(?P<library>torch/_library/.{0,6000}?)?torchax\s+Tensors\s+can\s+only\s+do\s+math\s+within\s+the\s+torchax\s+environment",
        Cause(
            "torchax-no-lowering",
            0.85,
            "The traceback passes through torch/_library: a torch.library op ran its own implementation on torchax "
            "tensors, inside the environment, because torchax has no lowering for it.",
            title="a torch.library op has no torchax lowering",
            when=("library", "."),
        ),
        Cause(
            "torchax-mixed-tensors",
            0.3,
            "If this code ran outside `with torchax.default_env():`, the tensor was only used outside the environment.",
            title="a torchax tensor may have been used outside torchax's environment",
            when=("library", "."),
        ),
        Cause(
            "torchax-mixed-tensors",
            0.8,
            "No torch.library frame in the traceback: a torchax tensor was used outside `with torchax.default_env():`.",
            title="a torchax tensor was used outside torchax's environment",
            unless=("library", "."),
        ),
        Cause(
            "torchax-no-lowering",
            0.35,
            "If it did run inside the environment, on a torch.library op, that op has no torchax lowering.",
            title="a torch.library op may have no torchax lowering",
            unless=("library", "."),
        ),
    ),
    _rule(
        "torchax-plain-tensor",
        ("Expect a Tensor", "AssertionError"),
        r"(?P<msg>Expect\s+a\s+Tensor\s+or\s+a\s+View\s+but\s+got\s+<class\s+'torch\.Tensor'>"
        r"|_jax_view\s.{0,400}?AssertionError:\s*<class\s+'torch\.Tensor'>)",
        Cause("torchax-mixed-tensors", 0.9, title="a plain torch tensor met torchax tensors"),
    ),
    _rule(
        "torchax-jax-array",
        ("ArrayImpl",),
        r"(?P<msg>must\s+be\s+Tensor,\s+not\s+jaxlib\.[\w.]*ArrayImpl"
        r"|unsupported\s+operand\s+type\(s\)\s+for\s+\S+:\s+'Tensor'\s+and\s+'jaxlib\.[\w.]*ArrayImpl')",
        Cause("torchax-mixed-tensors", 0.8, title="a jax array was given to a torch op"),
    ),
    _rule(
        # torch_xla 2.9.0 installed after torchax 0.0.13: its torchax 0.0.6 imports flax at the top.
        "torchax-shadowed",
        ("flax",),
        r"torchax[/\\]checkpoint\.py.{0,400}?No\s+module\s+named\s+'flax'",
        Cause("torchax-shadowed", 0.9, title="`import torchax` ran torch_xla's old copy of torchax, which needs flax"),
    ),
    _rule(
        # torch 2.11 on an H100 after jax 0.11.2 started with its default preallocation.
        "torch-oom-beside-jax",
        ("out of memory",),
        r"CUDA\s+out\s+of\s+memory\.\s+Tried\s+to\s+allocate\s+(?P<want>[\d.]+\s*[KMGT]?i?B)\b.{0,300}?"
        r"this\s+process\s+has\s+(?P<used>[\d.]+\s*[KMGT]?i?B)\s+memory\s+in\s+use\.\s+"
        r"Of\s+the\s+allocated\s+memory\s+(?P<torch>[\d.]+\s*(?:bytes|[KM]iB))\s+is\s+allocated\s+by\s+PyTorch",
        Cause(
            "jax-preallocation",
            0.8,
            "This process holds {used} of GPU memory but PyTorch allocated only {torch} of it: another allocator in "
            "the process holds the rest, and with torchax that is jax's pool.",
            title="torch could not get {want}: the process holds {used}, PyTorch only {torch}",
        ),
    ),
)
