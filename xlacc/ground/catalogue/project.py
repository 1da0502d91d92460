"""Finding codes about a generated project and its spec."""

from xlacc.ground.catalogue.entry import RULES, CatalogueEntry

ENTRIES: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(
        "spec-changed",
        "project",
        "error",
        "xlacc.toml changed since the code was generated",
        "The op's signature in xlacc.toml (its inputs, outputs, attributes, platform, api or frameworks) is not "
        "the one the entry points and bindings were generated from, so a build would compile the old signature "
        "and run-smoke would test it.",
        "Run `xlacc update`: it regenerates xlacc's files from the spec, merges your edits, and names each launch "
        "function of your kernel whose parameters changed (`NAME_launch<T>() in kernel.cu is called with (...) now`).",
        "an `[[inputs]]` table added to xlacc.toml, then `xlacc build`",
        home=RULES + "project",
    ),
    CatalogueEntry(
        "update-conflict",
        "project",
        "error",
        "xlacc update could not merge your edits with its changes",
        "A file you edited was also changed by xlacc (a new xlacc version or a new signature) in the same lines. "
        "Both versions are left in the file between `<<<<<<< yours` and `>>>>>>> xlacc` markers; nothing was lost.",
        "Edit each marked region to what it should be and delete the markers, then `xlacc build`.",
        "`<<<<<<< yours` in kernel.cu after `xlacc update`",
        home="xlacc.commands.new.record",
    ),
    CatalogueEntry(
        "example-inputs-ignore-size",
        "project",
        "warning",
        "example_inputs ignores the size it is asked for",
        "run-smoke checks the op at several problem sizes (1, an odd size no block divides, a large one) by calling "
        "the reference's `example_inputs(size, rng)` with each. When the operands do not depend on `size`, every "
        "check runs the same small problem while its label names the size asked for: tails, grids and large "
        "offsets go untested.",
        "Build the operands from `size` (about `size` elements: `random_array(rng, (size,), dtype)`, or rows of a "
        "fixed width with `size // width` rows), so each numerics check runs the problem it names.",
        "`def example_inputs(size, rng): return [np.ones(2, np.float32)], {}`",
        home=RULES + "project",
    ),
    CatalogueEntry(
        "template-stub-link",
        "project",
        "error",
        "a __global__ function template is instantiated in another file",
        "CUDA 13's nvcc compiles with `-static-global-template-stub=true` by default: the host stub of a "
        "`__global__` template instantiation is local to the file that instantiates it, so a launch of the "
        "template from another .cu file cannot link (`undefined reference to` the instantiation, `hidden symbol "
        "... isn't defined`).",
        "Instantiate the template in the file that launches it (one translation unit), or add "
        "`-static-global-template-stub=false` to the compiler flags (`[build] flags` in xlacc.toml, `--flag` for "
        "kernel files).",
        "`warning #20280-D: when \"-static-global-template-stub=true\" ... must have a definition in the current translation unit`",
        home=RULES + "compiler",
    ),
    CatalogueEntry(
        "include-missing",
        "project",
        "error",
        "a header the source includes is on no include path",
        "The compiler found no file of that name next to the file that includes it (for `#include \"...\"`) or in "
        "any folder of the include path: xlacc's headers, the project, and [build] include_dirs. A kernel from a larger "
        "tree (vLLM's csrc, a kernels-hub repository) usually needs its source root there. PyTorch's headers "
        "(torch/all.h, ATen/..., c10/...) come from xlacc's stand-ins in a project made with `xlacc new --from`.",
        "Add the folder that holds the header to [build] include_dirs in xlacc.toml (`xlacc new NAME --from FILE "
        "--include DIR` records it); for PyTorch's headers, wrap the launcher with `xlacc new --from`, whose build "
        "puts xlacc's PyTorch stand-ins (xlacc_torch_compat.h) on the include path.",
        "`kernel.cu:5:10: fatal error: cuda_utils.h: No such file or directory`",
        home=RULES + "compiler",
    ),
    CatalogueEntry(
        "rule-crashed",
        "project",
        "error",
        "one of doctor's rules failed on this input",
        "A rule raised an exception instead of giving findings: a bug in xlacc, not in your code. The other "
        "rules ran and their findings are shown; what this rule checks is unchecked.",
        "Report it with the command you ran and, if you can share them, the files doctor read (the evidence "
        "names the rule and the error); the other findings stand.",
        "a rule meets input it was never written for and raises `IndexError: list index out of range`",
        home="xlacc.commands.doctor.guard",
    ),
)
