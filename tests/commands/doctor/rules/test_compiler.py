"""The compiler's output read as diagnostics: errors and warnings with their context lines."""

from __future__ import annotations

import textwrap

from xlacc.commands.doctor.rules import compiler as compiler_output


def test_compiler_messages_sort_errors_and_hide_xla_header_warnings():
    output = textwrap.dedent(
        """\
        In file included from k.cc:1:
        /site-packages/jaxlib/include/xla/ffi/api/api.h:193:1: warning: control reaches end of non-void function [-Wreturn-type]
          193 | }
              | ^
        /site-packages/jaxlib/include/xla/ffi/api/ffi.h(189): warning #940-D: missing return statement
          }
          ^
        k.cu(3): error: identifier "undefined_fn" is undefined
          extern "C" void f() { undefined_fn(); }
                                ^
        k.cc:5:3: warning: unused variable 'x' [-Wunused-variable]
        nvcc fatal   : Unsupported gpu architecture 'compute_70'
        /usr/bin/ld: /tmp/ccX.o: in function `g':
        k.cc:(.text+0x5): undefined reference to `h'
        collect2: error: ld returned 1 exit status
        2 errors detected in the compilation of "k.cu".
        """
    )
    messages = compiler_output.compiler_messages(output)
    assert messages.errors == [
        'k.cu(3): error: identifier "undefined_fn" is undefined\n'
        '  extern "C" void f() { undefined_fn(); }\n'
        "                        ^",
        "nvcc fatal   : Unsupported gpu architecture 'compute_70'",
        "/usr/bin/ld: /tmp/ccX.o: in function `g':",
        "k.cc:(.text+0x5): undefined reference to `h'",
        "collect2: error: ld returned 1 exit status",
    ]
    assert messages.warnings == ["k.cc:5:3: warning: unused variable 'x' [-Wunused-variable]"]
