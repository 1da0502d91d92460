# Modelled on astro-informatics/s2fft s2fft/utils/jax_primitive.py (MIT); rewritten, not copied: see SOURCE.md.
from jax.extend import core
from jax.interpreters import mlir


def register_primitive(name, multiple_results, abstract_evaluation, lowering_per_platform):
    primitive = core.Primitive(name)
    primitive.multiple_results = multiple_results
    primitive.def_abstract_eval(abstract_evaluation)
    for platform, lowering in lowering_per_platform.items():
        mlir.register_lowering(primitive, lowering, platform=platform)
    return primitive
