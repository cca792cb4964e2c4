"""``--target executorch``: one helper per file, the wrapper's body in ExecuTorch's own QNN API.

For users who want no run-time dependency on qnn-migrate. Every call of the old function in
a file becomes a call of one generated module-level function, ``_lower_to_qnn``, with the
same arguments, wherever the call sits (a statement, a comprehension, a lambda, a
conditional expression, another call's argument). Python binds the arguments as it did for
the wrapper, so their order of evaluation, their side effects and any comments between them
stay exactly as written.

The helper is ExecuTorch 1.5.1's ``to_edge_transform_and_lower_to_qnn`` body
(backends/qualcomm/utils/utils.py) with only what the file's calls need: the parameters some
call passes, the one-module body when every call passes one module (the wrapper's per-method
loop otherwise), the per-method selection of an argument only when some call may pass a
dict keyed by method, and the intermediate-dump guard only when some call may lower several
methods with specs that may ask for dumps (specs from ``generate_qnn_executorch_compiler_spec``
without ``dump_intermediate_outputs`` cannot). One module, ``_lower_to_qnn(model, inputs, specs)``::

    def _lower_to_qnn(module, inputs, compiler_specs):
        \"\"\"Lower to QNN as ExecuTorch 1.5.1's wrapper did, for this file's calls.\"\"\"
        setup_qnn_sdk()
        disable_mkldnn_on_amd()
        partitioner = QnnPartitioner(compiler_specs)
        program = torch.export.export(module, inputs, strict=True)
        pass_manager = get_qnn_pass_manager_cls(partitioner.backend)()
        program = pass_manager.transform_for_export_pipeline(program)
        passes = pass_manager.get_to_edge_transform_passes(
            program, compiler_specs=compiler_specs
        )
        with QnnManagerContext({"forward": compiler_specs}):
            return to_edge_transform_and_lower(
                program,
                transform_passes=passes,
                partitioner=[partitioner],
                compile_config=qnn_edge_config(),
            )

``partitioner.backend`` is the backend type the wrapper reads from the specs through the
serialization module (``QnnPartitioner`` computes it the same way, from a copy of the specs
taken when it is made; the wrapper also makes its partitioners before exporting). Which of
the imported names are public, and why the others are not replaced: docs/rewrite.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from qnn_migrate.codemods.call_binding import BoundCall
from qnn_migrate.codemods.deprecations import Deprecation, TargetSpec
from qnn_migrate.codemods.knowledge import literal_keys
from qnn_migrate.codemods.layout import (
    ArgSpec,
    CallSpec,
    Conditional,
    Display,
    Expr,
    Join,
    Printer,
    Seq,
    Text,
    has_comment,
)
from qnn_migrate.codemods.targets.site import Knowledge

HELPER = "_lower_to_qnn"
QNN = "executorch.backends.qualcomm"
# name -> module it is imported from (docs/rewrite.md: which are public, and why)
IMPORTS = {
    "to_edge_transform_and_lower": "executorch.exir",
    "QnnPartitioner": f"{QNN}.partition.qnn_partitioner",
    "QnnManagerContext": f"{QNN}.utils.qnn_manager_lifecycle",
    "qnn_edge_config": f"{QNN}.utils.utils",
    "setup_qnn_sdk": f"{QNN}.utils.qnn_sdk_setup",
    "disable_mkldnn_on_amd": f"{QNN}.utils.qnn_sdk_setup",
    # No public name gives these (ExecuTorch's own examples import them from here too).
    "get_qnn_pass_manager_cls": f"{QNN}._passes.qnn_pass_manager",
    "generate_qnn_executorch_option": f"{QNN}.partition.utils",
    "flatbuffer_to_option": f"{QNN}.serialization.qc_schema_serialize",
}
SKIP_SETS = ("skip_node_id_set", "skip_node_op_set")
DUMP_GUARD_MESSAGE = '"Intermediate Tensor Dump does not support multi-methods."'

# How the wrapper's ``ensure_graph_specific_dict`` treats one argument of one call.
SHARED = "shared"  # the value serves every method (absent, None, or never a dict)
PER_METHOD = "per_method"  # a dict keyed by exactly the method names
CHECK = "check"  # only the run can tell

ImportName = Callable[[str, str], str]  # (module, object) -> local name; records the import


@dataclass(frozen=True)
class CallFacts:
    """What the source shows about one call's arguments, as far as the helper cares."""

    passed: frozenset[str]  # the parameters the call passes
    one_method: bool  # ``module`` is the single method "forward"
    module_is_dict: bool  # ``module`` is always a dict
    methods: int | None  # how many methods a dict display of ``module`` names
    shapes: Mapping[str, str]  # per-method parameter passed -> SHARED, PER_METHOD or CHECK
    specs_is_dict: bool | None  # ``compiler_specs`` always a dict (True), never (False)
    never_dumps: bool = False  # ``compiler_specs`` cannot turn intermediate dumps on


def forward_value(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``X`` of a ``{"forward": X}`` display: the wrapper treats it exactly as ``X`` alone
    (None when a comment is written in the display: the call keeps it, comment and all)."""
    if not (isinstance(node, cst.Dict) and len(node.elements) == 1) or has_comment(node):
        return None
    element = node.elements[0]
    if (
        isinstance(element, cst.DictElement)
        and isinstance(element.key, cst.SimpleString)
        and element.key.evaluated_value == "forward"
    ):
        return element.value
    return None


def call_facts(bound: BoundCall, knowledge: Knowledge, per_method: Sequence[str]) -> CallFacts:
    """The facts of one bound call (``per_method``: the wrapper's per-method parameters)."""
    module = bound.args["module"].value
    one = knowledge.is_not_dict(module) or forward_value(module) is not None
    methods = frozenset({"forward"}) if one else literal_keys(module)
    shapes = {}
    for param in per_method:
        passed = bound.args.get(param)
        if passed is None:
            continue
        if knowledge.is_not_dict(passed.value):
            shapes[param] = SHARED
            continue
        keys = literal_keys(passed.value)
        if keys is None or methods is None:
            shapes[param] = CHECK
        else:
            shapes[param] = PER_METHOD if keys == methods else SHARED
    size = None
    if isinstance(module, cst.Dict) and all(
        isinstance(e, cst.DictElement) for e in module.elements
    ):
        size = len(module.elements)
    specs = bound.args["compiler_specs"].value
    specs_is_dict = (
        True if knowledge.is_dict(specs) else False if knowledge.is_not_dict(specs) else None
    )
    return CallFacts(
        passed=frozenset(bound.args),
        one_method=one,
        module_is_dict=not one and knowledge.is_dict(module),
        methods=1 if one else size,
        shapes=shapes,
        specs_is_dict=specs_is_dict,
        never_dumps=knowledge.never_dumps(specs),
    )


class ExecutorchTarget:
    """Writes one helper per file: the wrapper's body with ExecuTorch's QNN pass manager,
    partitioner and context, and nothing the file's calls cannot reach."""

    def __init__(self, spec: TargetSpec, deprecation: Deprecation) -> None:
        self.name = spec.name
        self.parameters = deprecation.parameters
        self.required = frozenset(deprecation.required)
        # in the wrapper's order of its parameters
        self.per_method = tuple(p for p in deprecation.parameters if p in deprecation.per_method)
        self.since = deprecation.since
        self.old = deprecation.name

    def facts(self, bound: BoundCall, knowledge: Knowledge) -> CallFacts:
        """What the helper needs to know about one call."""
        return call_facts(bound, knowledge, self.per_method)

    def helper(
        self,
        name: str,
        calls: Sequence[CallFacts],
        import_name: ImportName,
        printer: Printer,
        local_imports: Callable[[], list[str]] | None = None,
    ) -> str:
        """The source text of the helper ``name`` for ``calls`` (module level, no indent).

        ``local_imports``: when given, called once the body is written; the lines it returns
        (the imports the body asked for) open the body.
        """
        return _Helper(self, name, calls, import_name, printer).text(local_imports)


class _Helper:
    """Builds the text of one helper."""

    def __init__(
        self,
        target: ExecutorchTarget,
        name: str,
        calls: Sequence[CallFacts],
        import_name: ImportName,
        printer: Printer,
    ) -> None:
        self.target = target
        self.name = name
        self.calls = calls
        self.import_name = import_name
        self.printer = printer
        self.unit = printer.unit
        passed = frozenset().union(*(c.passed for c in calls))
        self.params = [p for p in target.parameters if p in target.required or p in passed]
        self.lines: list[str] = []

    # -- small helpers ------------------------------------------------------------------
    def ref(self, obj: str) -> str:
        return self.import_name(IMPORTS[obj], obj)

    def emit(self, head: str, expr: Expr, depth: int = 1, tail: str = "") -> None:
        """``{indent}{head}{expr}{tail}`` within the line length, as ruff would break it."""
        printer = self.printer
        indent = self.unit * depth
        column = len(indent) + len(head)
        text = printer.render(expr, indent, column, 0, len(tail))
        first = text.split(printer.newline, 1)[0]
        if column + len(first) > printer.width and isinstance(expr, CallSpec):
            text = printer.render(Display("(", ")", (expr,)), indent, column, 0, len(tail))
        last = text.rsplit(printer.newline, 1)[-1]
        end = (column if printer.newline not in text else 0) + len(last) + len(tail)
        if tail.startswith(", ") and end > printer.width:
            nl, inner = printer.newline, indent + self.unit
            tail = f", ({nl}{inner}{tail[2:]}{nl}{indent})"
        self.lines.append(f"{indent}{head}{text}{tail}")

    def header(self, keyword: str, test: str, depth: int = 1, negate: bool = False) -> None:
        """``{keyword} {test}:`` (``not (test)`` when ``negate``), the test in parentheses
        of its own when it does not fit."""
        indent = self.unit * depth
        if negate:
            keyword += " not"
        flat = f"{indent}{keyword} {f'({test})' if negate else test}:"
        if len(flat) <= self.printer.width:
            self.lines.append(flat)
            return
        nl = self.printer.newline
        self.lines.append(f"{indent}{keyword} ({nl}{indent}{self.unit}{test}{nl}{indent}):")

    def line(self, text: str, depth: int = 1) -> None:
        self.lines.append(f"{self.unit * depth}{text}")

    def has(self, param: str) -> bool:
        return param in self.params

    def keywords(self, params: Sequence[str]) -> list[ArgSpec]:
        return [ArgSpec(Text(p), p) for p in params if self.has(p)]

    def shape(self, param: str) -> str:
        """How every call's ``param`` is broadcast: one of SHARED, PER_METHOD, CHECK.

        PER_METHOD only when every call passes a dict keyed by its methods; SHARED when none
        can (a call that does not pass it passes None, which serves every method).
        """
        shapes = {c.shapes.get(param, SHARED) for c in self.calls}
        if shapes == {SHARED}:
            return SHARED
        if shapes == {PER_METHOD}:
            return PER_METHOD
        return CHECK

    # -- the text -------------------------------------------------------------------------
    def text(self, local_imports: Callable[[], list[str]] | None) -> str:
        self.line(f"{self.ref('setup_qnn_sdk')}()")
        self.line(f"{self.ref('disable_mkldnn_on_amd')}()")
        if all(c.one_method for c in self.calls):
            self.one_module()
        else:
            self.methods()
        body = self.lines
        self.lines = []
        signature = CallSpec(
            f"def {self.name}",
            tuple(
                ArgSpec(Text(p))
                if p in self.target.required
                else ArgSpec(Text(_DEFAULTS.get(p, "None")), p)
                for p in self.params
            ),
            suffix=":",
        )
        header = self.printer.render(signature, "", 0)
        # The docstring never names the old function: a later run would report its own
        # output as a string to update by hand (QM208).
        doc = f'"""{helper_doc(self.target.since)}"""'
        if len(self.unit) + len(doc) > self.printer.width:
            doc = f'"""{helper_doc(self.target.since, short=True)}"""'
        imports = local_imports() if local_imports is not None else []
        nl = self.printer.newline
        lines = [header, f"{self.unit}{doc}", *(f"{self.unit}{i}" for i in imports)]
        if imports:
            lines.append("")  # the imports apart from the code, as isort leaves them
        lines += body
        return nl.join(lines)

    def passes_call(self, program: str, specs: str, ref: Callable[[str], str]) -> CallSpec:
        args = [ArgSpec(Text(program))]
        for param in ("passes_job", "dep_table"):
            if self.has(param):
                args.append(ArgSpec(Text(ref(param)), param))
        args.append(ArgSpec(Text(specs), "compiler_specs"))
        args += self.keywords([*SKIP_SETS, "convert_linear_to_conv2d"])
        return CallSpec("pass_manager.get_to_edge_transform_passes", tuple(args))

    def partitioner(self, specs: str) -> CallSpec:
        return CallSpec(
            self.ref("QnnPartitioner"),
            (ArgSpec(Text(specs)), *self.keywords([*SKIP_SETS, "skip_mutable_buffer"])),
        )

    def lower(self, programs: str, partitioner: Expr) -> CallSpec:
        return CallSpec(
            self.ref("to_edge_transform_and_lower"),
            (
                ArgSpec(Text(programs)),
                ArgSpec(Text("passes"), "transform_passes"),
                ArgSpec(partitioner, "partitioner"),
                *self.keywords(["constant_methods"]),
                ArgSpec(CallSpec(self.ref("qnn_edge_config")), "compile_config"),
                *self.keywords(["generate_etrecord"]),
            ),
        )

    def export(self, method: str, ref: Callable[[str], str], depth: int) -> None:
        args = [ArgSpec(Text(method)), ArgSpec(Text(ref("inputs")))]
        if self.has("dynamic_shapes"):
            args.append(ArgSpec(Text(ref("dynamic_shapes")), "dynamic_shapes"))
        args.append(ArgSpec(Text("True"), "strict"))
        torch = self.import_name("torch", "")
        self.emit("program = ", CallSpec(f"{torch}.export.export", tuple(args)), depth)

    def pass_manager(self, partitioner: str, depth: int) -> None:
        cls = self.ref("get_qnn_pass_manager_cls")
        self.line(f"pass_manager = {cls}({partitioner}.backend)()", depth)

    # -- the two bodies -------------------------------------------------------------------
    def one_module(self) -> None:
        """Every call lowers one module, the method "forward"."""
        for param in self.target.per_method:
            if not self.has(param):
                continue
            shape = self.shape(param)
            if shape == PER_METHOD:
                self.line(f'{param} = {param}["forward"]')
            elif shape == CHECK:
                self.header("if", f'isinstance({param}, dict) and {param}.keys() == {{"forward"}}')
                self.line(f'{param} = {param}["forward"]', 2)
        self.emit("partitioner = ", self.partitioner("compiler_specs"))
        self.export("module", lambda p: p, 1)
        self.pass_manager("partitioner", 1)
        self.line("program = pass_manager.transform_for_export_pipeline(program)")
        self.emit("passes = ", self.passes_call("program", "compiler_specs", lambda p: p))
        context = self.ref("QnnManagerContext")
        self.line(f'with {context}({{"forward": compiler_specs}}):')
        self.emit("return ", self.lower("program", Display("[", "]", (Text("partitioner"),))), 2)

    def methods(self) -> None:
        """Some call may lower a dict of methods: the wrapper's loop."""
        if any(self.guarded(c) for c in self.calls):
            self.dump_guard()
        if not all(c.module_is_dict for c in self.calls):
            self.line("if not isinstance(module, dict):")
            self.line('module = {"forward": module}', 2)
        shapes = {p: self.shape(p) for p in self.target.per_method if self.has(p)}
        for param, shape in shapes.items():
            if shape == CHECK:
                test = f"isinstance({param}, dict) and {param}.keys() == module.keys()"
                self.header("if", test, negate=True)
                self.line(f"{param} = dict.fromkeys(module, {param})", 2)

        def ref(param: str) -> str:
            return param if shapes.get(param, SHARED) == SHARED else f"{param}[name]"

        # As the wrapper: every method's partitioner made before the first export.
        made = Display("[", "]", (self.partitioner(ref("compiler_specs")),))
        each = Join(" for ", (Seq((Text("name: "), made)), Text("name in module")))
        self.emit("partitioners = ", Display("{", "}", (each,)))
        self.line("programs, passes = {}, {}")
        self.line("for name, method in module.items():")
        self.export("method", ref, 2)
        self.pass_manager("partitioners[name][0]", 2)
        self.line("programs[name] = pass_manager.transform_for_export_pipeline(program)", 2)
        self.emit("passes[name] = ", self.passes_call("program", ref("compiler_specs"), ref), 2)
        specs = "compiler_specs"
        if shapes["compiler_specs"] == SHARED:
            specs = "dict.fromkeys(module, compiler_specs)"
        self.line(f"with {self.ref('QnnManagerContext')}({specs}):")
        self.emit("return ", self.lower("programs", Text("partitioners")), 2)

    @staticmethod
    def guarded(call: CallFacts) -> bool:
        """The wrapper's dump guard can fail for this call: several methods, and specs that
        may ask for intermediate dumps."""
        return not call.one_method and call.methods != 1 and not call.never_dumps

    def dump_guard(self) -> None:
        """The wrapper's check that a spec asking for intermediate dumps lowers one method."""
        self.line("if isinstance(module, dict) and len(module) != 1:")
        # Every call that may reach the guard, not only those it was written for.
        kinds = {c.specs_is_dict for c in self.calls if not c.one_method and c.methods != 1}
        depth = 2
        if kinds == {False}:
            spec = "compiler_specs"
        else:
            spec = "spec"
            values: Expr = Text("compiler_specs.values()")
            if kinds != {True}:
                values = Conditional(
                    values, Text("isinstance(compiler_specs, dict)"), Text("[compiler_specs]")
                )
            self.emit("for spec in ", values, 2, tail=":")
            depth = 3
        option = CallSpec(
            self.ref("flatbuffer_to_option"),
            (
                ArgSpec(
                    CallSpec(self.ref("generate_qnn_executorch_option"), (ArgSpec(Text(spec)),))
                ),
            ),
        )
        self.emit("options = ", option, depth)
        self.emit(
            "assert not ",
            Text("options.dump_intermediate_outputs"),
            depth,
            f", {DUMP_GUARD_MESSAGE}",
        )


def helper_doc(since: str, *, short: bool = False) -> str:
    """The first line of the helper's docstring (without quotes)."""
    if short:
        return f"Lower to QNN as ExecuTorch {since}'s wrapper did."
    return f"Lower to QNN as ExecuTorch {since}'s wrapper did, for this file's calls."


_DEFAULTS = {"skip_mutable_buffer": "False", "generate_etrecord": "False"}
_DEFAULTS["convert_linear_to_conv2d"] = "False"
