"""``--target executorch``: the wrapper's body spelled out with ExecuTorch's own QNN API.

For users who want no run-time dependency on qnn-migrate. The code is ExecuTorch 1.5.1's
``to_edge_transform_and_lower_to_qnn`` body (backends/qualcomm/utils/utils.py), with only the
branches that the call site can take. One module (known not to be a dict)::

    setup_qnn_sdk()
    disable_mkldnn_on_amd()
    exported_program = torch.export.export(model, inputs, strict=True)
    pass_manager = get_qnn_pass_manager_cls(
        flatbuffer_to_option(generate_qnn_executorch_option(specs)).backend_options.backend_type
    )()
    exported_program = pass_manager.transform_for_export_pipeline(exported_program)
    transform_passes = pass_manager.get_to_edge_transform_passes(
        exported_program, compiler_specs=specs
    )
    with QnnManagerContext({"forward": specs}):
        edge = to_edge_transform_and_lower(
            exported_program,
            transform_passes=transform_passes,
            partitioner=[QnnPartitioner(specs)],
            compile_config=qnn_edge_config(),
        )

A dict of methods, or a value whose type only the run shows, gets the wrapper's per-method
loop with its run-time checks (``isinstance(..., dict)``, the per-method broadcasting of
``ensure_graph_specific_dict`` and the intermediate-dump guard): decided when the code runs,
never guessed here. The call must be a statement of its own; inside an expression it is
reported.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.deprecations import Deprecation, TargetSpec
from qnn_migrate.codemods.knowledge import literal_keys
from qnn_migrate.codemods.layout import (
    ArgSpec,
    CallSpec,
    Conditional,
    Display,
    Expr,
    Join,
    Seq,
    Text,
)
from qnn_migrate.codemods.targets.argument_plan import bind_arguments, plan_arguments
from qnn_migrate.codemods.targets.site import (
    CannotRewrite,
    References,
    Site,
    StatementRewrite,
    one_method,
)

QNN = "executorch.backends.qualcomm"
IMPORTS = {
    "to_edge_transform_and_lower": "executorch.exir",
    "get_qnn_pass_manager_cls": f"{QNN}._passes.qnn_pass_manager",
    "QnnPartitioner": f"{QNN}.partition.qnn_partitioner",
    "generate_qnn_executorch_option": f"{QNN}.partition.utils",
    "flatbuffer_to_option": f"{QNN}.serialization.qc_schema_serialize",
    "QnnManagerContext": f"{QNN}.utils.qnn_manager_lifecycle",
    "qnn_edge_config": f"{QNN}.utils.utils",
    "setup_qnn_sdk": f"{QNN}.utils.qnn_sdk_setup",
    "disable_mkldnn_on_amd": f"{QNN}.utils.qnn_sdk_setup",
}
PASSES_KEYWORDS = ("passes_job", "dep_table")
SKIP_SETS = ("skip_node_id_set", "skip_node_op_set")
DUMP_GUARD_MESSAGE = '"Intermediate Tensor Dump does not support multi-methods."'

Ref = Callable[[str], Expr]


class ExecutorchTarget:
    """Writes the wrapper's body with ExecuTorch's public QNN pass manager, partitioner, context.

    ``spec.first_use``: the wrapper evaluates every argument, then sets up the SDK, then
    exports; the order in which the new code first uses each argument after the setup.
    """

    def __init__(self, spec: TargetSpec, deprecation: Deprecation) -> None:
        self.name = spec.name
        self.order = spec.first_use
        # in the wrapper's order of its parameters
        self.per_method = tuple(p for p in deprecation.parameters if p in deprecation.per_method)

    def expression(self, site: Site) -> str:
        """Not possible: the body needs statements."""
        raise CannotRewrite(findings.EXECUTORCH_EXPRESSION.format(where=site.context))

    def statement(self, site: Site) -> StatementRewrite:
        """The single-method body when ``module`` is known to be one method, else the loop."""
        single = one_method(site)
        if single is not None:
            return _Writer(single, self).single()
        return _Writer(site, self).methods()


class _Writer:
    """Builds the statements for one site."""

    def __init__(self, site: Site, target: ExecutorchTarget) -> None:
        self.site = site
        self.order = target.order
        self.per_method_params = target.per_method
        self.printer = site.printer
        self.lines: list[str] = []

    # -- small helpers ------------------------------------------------------------------
    def name(self, obj: str) -> str:
        return self.site.import_name(IMPORTS[obj], obj)

    def torch_export(self) -> str:
        return self.site.import_name("torch", "") + ".export.export"

    def emit(self, head: str, expr: Expr, indent: str = "", tail: str = "") -> None:
        """``{indent}{head}{expr}{tail}`` within the line length, as ruff would break it: the
        expression in parentheses of its own when its first line would not fit, a trailing
        ``, "message"`` in parentheses of its own when the last line would not."""
        base = self.site.block_column
        printer = self.printer
        column = base + len(indent) + len(head)
        text = printer.render(expr, indent, column, base, len(tail))
        first = text.split(printer.newline, 1)[0]
        if column + len(first) > printer.width and isinstance(expr, CallSpec):
            text = printer.render(Display("(", ")", (expr,)), indent, column, base, len(tail))
        last = text.rsplit(printer.newline, 1)[-1]
        end = (column if printer.newline not in text else base) + len(last) + len(tail)
        if tail.startswith(", ") and end > printer.width:
            inner = indent + printer.unit
            nl = printer.newline
            tail = f", ({nl}{inner}{tail[2:]}{nl}{indent})"
        self.lines.append(f"{indent}{head}{text}{tail}")

    def not_dict(self, param: str) -> bool:
        passed = self.site.bound.args.get(param)
        return passed is None or self.site.knowledge.is_not_dict(passed.value)

    def is_dict(self, param: str) -> bool:
        """True if the source shows that the value passed as ``param`` is a dict."""
        passed = self.site.bound.args.get(param)
        return passed is not None and self.site.knowledge.is_dict(passed.value)

    def method_keys(self) -> frozenset[str] | None:
        """The method names, when the source shows them: "forward" for one module."""
        module = self.site.bound.args["module"].value
        if self.site.one_method or self.site.knowledge.is_not_dict(module):
            return frozenset({"forward"})
        return literal_keys(module)

    def broadcast(self, param: str) -> str:
        """How the wrapper's ``ensure_graph_specific_dict`` treats ``param`` here.

        "shared": the value serves every method; "per_method": a dict keyed by the method
        names; "check": only the run can tell, so the code checks as the wrapper did.
        """
        passed = self.site.bound.args.get(param)
        if passed is None or self.site.knowledge.is_not_dict(passed.value):
            return "shared"
        keys, methods = literal_keys(passed.value), self.method_keys()
        if keys is None or methods is None:
            return "check"
        return "per_method" if keys == methods else "shared"

    def plan(self, loop: bool) -> References:
        """Bind the arguments: all effects before the SDK setup, repeated uses to names."""
        uses = {"compiler_specs": 4, **dict.fromkeys(SKIP_SETS, 2)}
        for param in self.per_method_params:
            how = self.broadcast(param)
            if how == "check":
                uses[param] = 3  # read three times by the per-method check
            elif how == "per_method":
                uses[param] = max(uses.get(param, 1), 2)  # indexed by method name
        if loop:
            # Arguments read inside the loop are evaluated once per method.
            uses.update({p: max(uses.get(p, 1), 2) for p in self.order if p not in ("module",)})
            uses["constant_methods"] = uses["generate_etrecord"] = 1
            uses["module"] = 3
        plan = plan_arguments(
            self.site.bound, order=self.order, uses=uses, statements=True, work_starts=0
        )
        refs, hoisted = bind_arguments(self.site, plan)
        self.lines += hoisted
        self.lines.append(f"{self.name('setup_qnn_sdk')}()")
        self.lines.append(f"{self.name('disable_mkldnn_on_amd')}()")
        return refs

    def backend_pass_manager(self, specs: Expr, indent: str, target: str) -> None:
        option = CallSpec(
            self.name("flatbuffer_to_option"),
            (ArgSpec(CallSpec(self.name("generate_qnn_executorch_option"), (ArgSpec(specs),))),),
            suffix=".backend_options.backend_type",
        )
        self.emit(
            f"{target} = ",
            CallSpec(self.name("get_qnn_pass_manager_cls"), (ArgSpec(option),), suffix="()"),
            indent,
        )

    def partitioner(self, refs: References, specs: Expr) -> CallSpec:
        return CallSpec(
            self.name("QnnPartitioner"),
            (
                ArgSpec(specs),
                *refs.keywords(SKIP_SETS),
                *refs.keywords(["skip_mutable_buffer"], comments=True),
            ),
        )

    def lower(self, refs: References, programs: str, passes: str, partitioner: Expr) -> str:
        call = CallSpec(
            self.name("to_edge_transform_and_lower"),
            (
                ArgSpec(Text(programs)),
                ArgSpec(Text(passes), "transform_passes"),
                ArgSpec(partitioner, "partitioner"),
                *refs.keywords(["constant_methods"], comments=True),
                ArgSpec(CallSpec(self.name("qnn_edge_config")), "compile_config"),
                *refs.keywords(["generate_etrecord"], comments=True),
            ),
            dangling=self.site.bound.dangling_comments,
        )
        inside = self.site.block_column + len(self.printer.unit)  # in the `with`
        return self.printer.render(call, self.site.indent, inside + self.site.call_column, inside)

    def per_method(self, refs: References, param: str, methods: str) -> Text | None:
        """A name holding ``{method: value}`` for ``param`` (the wrapper's normalisation).

        None when ``param`` is known not to be a dict: then the value itself serves every
        method. ``methods`` is the name of the ``{method: module}`` dict.
        """
        how = self.broadcast(param)
        if how == "shared":
            return None
        value = self.printer.flat(refs.expr(param))
        assert value is not None, "values read several times are simple names"
        if how == "per_method":
            return Text(value)  # already keyed by the method names
        name = self.site.names.fresh(f"method_{param}")
        same_keys = Text(f"{value}.keys() == {methods}.keys()")
        test: Expr = same_keys
        if not self.is_dict(param):
            test = Join(" and ", (Text(f"isinstance({value}, dict)"), same_keys))
        self.emit(
            f"{name} = ",
            Conditional(Text(value), test, Text(f"dict.fromkeys({methods}, {value})")),
        )
        return Text(name)

    # -- the two shapes -----------------------------------------------------------------
    def single(self) -> StatementRewrite:
        site = self.site
        refs = self.plan(loop=False)
        forward: dict[str, Expr] = {}
        for param in self.per_method_params:
            how = self.broadcast(param)
            if how == "shared":
                continue
            value = self.printer.flat(refs.expr(param))
            assert value is not None, "values read several times are simple names"
            if how == "per_method":
                forward[param] = Text(f'{value}["forward"]')
            else:
                name = site.names.fresh(f"forward_{param}")
                self.emit(
                    f"{name} = ",
                    Conditional(
                        Text(f'{value}["forward"]'),
                        Text(f'{value}.keys() == {{"forward"}}')
                        if self.is_dict(param)
                        else Join(
                            " and ",
                            (
                                Text(f"isinstance({value}, dict)"),
                                Text(f'{value}.keys() == {{"forward"}}'),
                            ),
                        ),
                        Text(value),
                    ),
                )
                forward[param] = Text(name)

        def ref(param: str) -> Expr:
            return forward.get(param) or refs.expr(param)

        program = site.names.fresh("exported_program")
        pass_manager = site.names.fresh("pass_manager")
        passes = site.names.fresh("transform_passes")
        export_args = [
            refs.arg("module", keyword=False, comments=True),
            _commented(refs, "inputs", ArgSpec(ref("inputs"))),
        ]
        if site.passed("dynamic_shapes"):
            shapes = ArgSpec(ref("dynamic_shapes"), "dynamic_shapes")
            export_args.append(_commented(refs, "dynamic_shapes", shapes))
        export_args.append(ArgSpec(Text("True"), "strict"))
        self.emit(f"{program} = ", CallSpec(self.torch_export(), tuple(export_args)))
        specs = ref("compiler_specs")
        self.backend_pass_manager(specs, "", pass_manager)
        self.emit(
            f"{program} = ",
            CallSpec(f"{pass_manager}.transform_for_export_pipeline", (ArgSpec(Text(program)),)),
        )
        self.emit(f"{passes} = ", self.passes_call(refs, pass_manager, program, specs, ref))
        context = CallSpec(
            self.name("QnnManagerContext"),
            (ArgSpec(Display("{", "}", (Seq((Text('"forward": '), specs)),))),),
        )
        return StatementRewrite(
            prelude=tuple(self.lines),
            context=self.printer.render(
                context, "", site.block_column + len("with "), site.block_column
            ),
            call=self.lower(
                refs, program, passes, Display("[", "]", (self.partitioner(refs, specs),))
            ),
        )

    def methods(self) -> StatementRewrite:
        site = self.site
        unit = self.printer.unit
        refs = self.plan(loop=True)
        module = self.printer.flat(refs.expr("module"))
        assert module is not None, "the module is bound to a name first"
        module_node = site.bound.args["module"].value
        known_dict = site.knowledge.is_dict(module_node)
        specs = self.printer.flat(refs.expr("compiler_specs"))
        assert specs is not None

        # The wrapper's intermediate-dump guard: one method only when dumping.
        entries = _display_size(module_node)
        if entries != 1:
            condition = None if entries is not None else f"len({module}) != 1"
            if condition is not None and not known_dict:
                condition = f"isinstance({module}, dict) and {condition}"
            indent = "" if condition is None else unit
            if condition is not None:
                self.lines.append(f"if {condition}:")
            spec = specs
            if self.is_dict("compiler_specs"):
                spec = site.names.fresh("compiler_spec")
                self.lines.append(f"{indent}for {spec} in {specs}.values():")
                indent += unit
            elif not self.not_dict("compiler_specs"):
                spec = site.names.fresh("compiler_spec")
                values = Conditional(
                    Text(f"{specs}.values()"),
                    Text(f"isinstance({specs}, dict)"),
                    Text(f"[{specs}]"),
                )
                self.emit(f"for {spec} in ", values, indent, tail=":")
                indent += unit
            dumping = CallSpec(
                self.name("flatbuffer_to_option"),
                (
                    ArgSpec(
                        CallSpec(
                            self.name("generate_qnn_executorch_option"), (ArgSpec(Text(spec)),)
                        )
                    ),
                ),
                suffix=".dump_intermediate_outputs",
            )
            self.emit("assert not ", dumping, indent, tail=f", {DUMP_GUARD_MESSAGE}")

        if known_dict:
            methods = module
        else:
            methods = site.names.fresh("methods")
            self.emit(
                f"{methods} = ",
                Conditional(
                    Text(module),
                    Text(f"isinstance({module}, dict)"),
                    Text(f'{{"forward": {module}}}'),
                ),
            )
        per_method = {
            p: self.per_method(refs, p, methods) for p in self.per_method_params if site.passed(p)
        }
        method_name = site.names.fresh("method_name")
        method = site.names.fresh("method")

        def ref(param: str) -> Expr:
            name = per_method.get(param)
            return refs.expr(param) if name is None else Text(f"{name.text}[{method_name}]")

        programs = site.names.fresh("exported_programs")
        passes = site.names.fresh("transform_passes")
        partitioners = site.names.fresh("partitioners")
        program = site.names.fresh("exported_program")
        pass_manager = site.names.fresh("pass_manager")
        self.lines.append(f"{programs}, {passes}, {partitioners} = {{}}, {{}}, {{}}")
        self.lines.append(f"for {method_name}, {method} in {methods}.items():")
        export_args = [
            _commented(refs, "module", ArgSpec(Text(method))),
            _commented(refs, "inputs", ArgSpec(ref("inputs"))),
        ]
        if site.passed("dynamic_shapes"):
            shapes = ArgSpec(ref("dynamic_shapes"), "dynamic_shapes")
            export_args.append(_commented(refs, "dynamic_shapes", shapes))
        export_args.append(ArgSpec(Text("True"), "strict"))
        self.emit(f"{program} = ", CallSpec(self.torch_export(), tuple(export_args)), unit)
        method_specs = ref("compiler_specs")
        self.backend_pass_manager(method_specs, unit, pass_manager)
        self.emit(
            f"{programs}[{method_name}] = ",
            CallSpec(f"{pass_manager}.transform_for_export_pipeline", (ArgSpec(Text(program)),)),
            unit,
        )
        self.emit(
            f"{passes}[{method_name}] = ",
            self.passes_call(refs, pass_manager, program, method_specs, ref),
            unit,
        )
        self.emit(
            f"{partitioners}[{method_name}] = ",
            Display("[", "]", (self.partitioner(refs, method_specs),)),
            unit,
        )
        every = per_method.get("compiler_specs")
        all_specs: Expr = every or Text(f"dict.fromkeys({methods}, {specs})")
        context = CallSpec(self.name("QnnManagerContext"), (ArgSpec(all_specs),))
        return StatementRewrite(
            prelude=tuple(self.lines),
            context=self.printer.render(
                context, "", site.block_column + len("with "), site.block_column
            ),
            call=self.lower(refs, programs, passes, Text(partitioners)),
        )

    def passes_call(
        self,
        refs: References,
        pass_manager: str,
        program: str,
        specs: Expr,
        ref: Ref,
    ) -> CallSpec:
        args = [ArgSpec(Text(program))]
        for param in PASSES_KEYWORDS:
            if self.site.passed(param):
                args.append(_commented(refs, param, ArgSpec(ref(param), param)))
        args.append(_commented(refs, "compiler_specs", ArgSpec(specs, "compiler_specs")))
        args += refs.keywords(SKIP_SETS, comments=True)
        args += refs.keywords(["convert_linear_to_conv2d"], comments=True)
        return CallSpec(f"{pass_manager}.get_to_edge_transform_passes", tuple(args))


def _commented(refs: References, param: str, arg: ArgSpec) -> ArgSpec:
    """``arg`` with the user's comments for ``param`` (the first time only)."""
    before, trailing = refs.take_comments(param)
    return ArgSpec(arg.value, arg.keyword, before, trailing)


def _display_size(node: cst.BaseExpression) -> int | None:
    """How many methods a dict display names, when it can be counted."""
    if isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
        return len(node.elements)
    return None
