"""layout.py: the printer of new code (flat, hugged, exploded; re-indented user code)."""

from __future__ import annotations

import libcst as cst

from qnn_migrate.codemods.layout import ArgSpec, CallSpec, Conditional, Printer, Source, Text


def test_printer_flat_hugged_and_exploded() -> None:
    printer = Printer(cst.parse_module(""))
    short = CallSpec("f", (ArgSpec(Text("a")), ArgSpec(Text("b"), "k")))
    assert printer.render(short, "", 0) == "f(a, k=b)"
    long = CallSpec("f", tuple(ArgSpec(Text(f"argument_{i}")) for i in range(6)))
    assert printer.render(long, "", 30) == (
        "f(\n    argument_0, argument_1, argument_2, argument_3, argument_4, argument_5\n)"
    )
    longer = CallSpec("f", tuple(ArgSpec(Text(f"argument_number_{i}")) for i in range(6)))
    assert printer.render(longer, "", 0).endswith("    argument_number_5,\n)")
    single = CallSpec("g", (ArgSpec(CallSpec("h", (ArgSpec(Text("x" * 90)),))),))
    assert printer.render(single, "", 0) == f"g(\n    h(\n        {'x' * 90}\n    )\n)"
    commented = CallSpec("f", (ArgSpec(Text("a"), trailing_comment="# why"),))
    assert printer.render(commented, "", 0) == "f(\n    a,  # why\n)"
    choice = Conditional(Text("a" * 40), Text("b" * 40), Text("c" * 40))
    assert printer.render(choice, "", 10).count("\n") == 4


def test_printer_reindents_a_multiline_user_expression() -> None:
    module = cst.parse_module("x = {\n    'a': 1,  # one\n}\n")
    statement = module.body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    printer = Printer(module)
    moved = printer.source(Source(assign.value, ""), "        ")
    assert moved == "{\n            'a': 1,  # one\n        }"
