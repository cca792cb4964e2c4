"""The default target: ExecuTorch's generic call, with the QNN specifics from ``qnn_passes``.

Before (any mix of positional and keyword arguments)::

    edge = to_edge_transform_and_lower_to_qnn(model, inputs, specs, skip_node_op_set=ops)

After, where the call may have statements of its own and the source shows that ``model`` is
one module and that ``inputs`` (and ``dynamic_shapes``) are not per-method dicts (the
canonical flow, the default; keyed by "forward", they are indexed by it, as the wrapper did)::

    setup_qnn_sdk()
    programs = torch.export.export(model, inputs, strict=True)
    with qnn_manager_context(specs, programs):
        edge = to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(programs, specs, skip_node_op_set=ops),
            partitioner=qnn_partitioners(programs, specs, skip_node_op_set=ops),
            compile_config=qnn_compile_config(),
        )

For a dict of methods whose keys the source shows, one export per method in a loop. When only
the run can tell (and with ``flow="qnn-export"``), ``programs = qnn_export(model, inputs,
compiler_specs=specs)`` instead: ``qnn_passes`` decides at run time whether ``model`` is one
module or a dict of methods and broadcasts the per-method arguments exactly as the wrapper
did, so nothing is guessed here.

After, where it must stay one expression (comprehensions, lambdas, conditional branches)::

    qnn_manager_context(
        specs, (programs := qnn_export(model, inputs, compiler_specs=specs))
    ).run(
        to_edge_transform_and_lower,
        programs,
        transform_passes=qnn_transform_passes(programs, specs, skip_node_op_set=ops),
        partitioner=qnn_partitioners(programs, specs, skip_node_op_set=ops),
        compile_config=qnn_compile_config(),
    )
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from qnn_migrate.codemods.deprecations import Deprecation, TargetSpec
from qnn_migrate.codemods.layout import ArgSpec, CallSpec, Seq, Text
from qnn_migrate.codemods.targets.argument_plan import bind_arguments, plan_arguments
from qnn_migrate.codemods.targets.site import (
    References,
    Site,
    StatementRewrite,
    lift_parameter_comments,
    one_method,
)

QNN_PASSES = "qnn_passes"
SDK_SETUP = "executorch.backends.qualcomm.utils.qnn_sdk_setup"
EXIR = "executorch.exir"

USES = {"compiler_specs": 4, "skip_node_id_set": 2, "skip_node_op_set": 2}

TRANSFORM_KEYWORDS = (
    "passes_job",
    "dep_table",
    "skip_node_id_set",
    "skip_node_op_set",
    "convert_linear_to_conv2d",
)


class QnnPassesTarget:
    """Writes ``to_edge_transform_and_lower`` with the ``qnn_passes`` helpers.

    ``spec.first_use``: where each argument first appears in the new code (statement form);
    the first four are evaluated before the export, the first work the new code does. In the
    expression form the context's first argument, the specs, comes first.
    """

    def __init__(self, spec: TargetSpec, deprecation: Deprecation) -> None:
        self.name = spec.name
        self.parameters = deprecation.parameters
        self.statement_order = spec.first_use
        self.expression_order = (
            "compiler_specs",
            *(p for p in spec.first_use if p != "compiler_specs"),
        )

    def statement(self, site: Site) -> StatementRewrite:
        """``programs = ...export...``, then the call inside ``with qnn_manager_context``.

        A comment in the old call that names one of its parameters (a commented-out keyword
        argument) goes above the statement: the new calls do not all take that parameter."""
        site, lifted = lift_parameter_comments(site, self.parameters, _comment_stays)
        rewrite = self._statement(site)
        if not lifted:
            return rewrite
        return dataclasses.replace(rewrite, prelude=(*lifted, *rewrite.prelude))

    def _statement(self, site: Site) -> StatementRewrite:
        shape = None
        if site.flow == "canonical":
            single = one_method(site)
            shape = _canonical_shape(single) if single is not None else _canonical_shape(site)
            if shape is not None and single is not None:
                # qnn_export (below, when the shape is unknown) would take a dict X of
                # `{"forward": X}` for methods: the display stays there.
                site = single
        if shape is None:
            plan = plan_arguments(
                site.bound, order=self.statement_order, uses=USES, statements=True, work_starts=4
            )
            refs, prelude = bind_arguments(site, plan)
            programs = site.names.fresh("programs")
            export = self._export(site, refs)
            head = f"{programs} = "
            base = site.block_column
            prelude.append(head + site.printer.render(export, "", base + len(head), base))
        else:
            refs, prelude, programs = self._canonical_export(site, shape)
        base = site.block_column
        context = CallSpec(
            site.import_name(QNN_PASSES, "qnn_manager_context"),
            (refs.arg("compiler_specs", keyword=False, comments=True), ArgSpec(Text(programs))),
        )
        context_text = site.printer.render(context, "", base + len("with "), base)
        call = self._lower(site, refs, Text(programs), first_arg=Text(programs))
        inside = base + len(site.printer.unit)  # the statement moves into the `with`
        return StatementRewrite(
            prelude=tuple(prelude),
            context=context_text,
            call=site.printer.render(call, site.indent, inside + site.call_column, inside),
        )

    def expression(self, site: Site) -> str:
        """``qnn_manager_context(specs, (programs := qnn_export(...))).run(...)``."""
        plan = plan_arguments(
            site.bound, order=self.expression_order, uses=USES, statements=False, work_starts=4
        )
        refs, _ = bind_arguments(site, plan)
        programs = site.names.fresh("programs")
        specs = refs.arg("compiler_specs", keyword=False, comments=True)
        export = self._export(site, refs)
        context = CallSpec(
            site.import_name(QNN_PASSES, "qnn_manager_context"),
            (specs, ArgSpec(Seq((Text(f"({programs} := "), export, Text(")"))))),
        )
        run = self._lower(
            site,
            refs,
            Text(programs),
            func=Seq((context, Text(".run"))),
            first_arg=Text(site.import_name(EXIR, "to_edge_transform_and_lower")),
        )
        column = site.block_column + site.call_column
        return site.printer.render(run, site.indent, column, site.block_column)

    def _canonical_export(
        self, site: Site, shape: dict[str, str]
    ) -> tuple[References, list[str], str]:
        """``setup_qnn_sdk()`` then ``torch.export.export(..., strict=True)``, per method for a
        dict of methods; the references, the statements and the name of the programs.

        The wrapper set up the SDK before tracing (it may download one and re-execute the
        interpreter, which would lose a traced model), so the code does too, after the
        arguments, which the wrapper evaluated first: every argument with side effects is
        bound before it. The AMD MKLDNN guard runs when ``qnn_manager_context`` is entered.
        """
        methods = "module" in shape
        uses = dict(USES)
        if methods:  # read in the loop, once per method
            uses.update({p: 2 for p in ("module", "inputs", "dynamic_shapes")})
        else:  # indexed by "forward": a dict display gets a name first
            uses.update(
                {p: 2 for p in ("inputs", "dynamic_shapes") if shape.get(p) == "per_method"}
            )
        plan = plan_arguments(
            site.bound, order=self.statement_order, uses=uses, statements=True, work_starts=0
        )
        refs, prelude = bind_arguments(site, plan)
        prelude.append(f"{site.import_name(SDK_SETUP, 'setup_qnn_sdk')}()")
        export = site.import_name("torch", "") + ".export.export"
        programs = site.names.fresh("programs")
        base = site.block_column
        printer = site.printer
        if not methods:
            # One module is the wrapper's method "forward": an argument keyed by the method
            # names is that method's value, as the wrapper selected it.
            args = [
                refs.arg("module", keyword=False, comments=True),
                _forward(refs, "inputs", shape),
                *(
                    [_forward(refs, "dynamic_shapes", shape)]
                    if site.passed("dynamic_shapes")
                    else []
                ),
                ArgSpec(Text("True"), "strict"),
            ]
            head = f"{programs} = "
            call = CallSpec(export, tuple(args))
            prelude.append(head + printer.render(call, "", base + len(head), base))
            return refs, prelude, programs
        # A dict of methods: one export per method, the per-method arguments as the wrapper
        # broadcast them (a dict keyed by the method names, else one value for all).
        for param in ("module", "inputs", "dynamic_shapes"):
            before, trailing = refs.take_comments(param)
            prelude += [*before, *([trailing] if trailing else [])]
        method_name, method = site.names.fresh("method_name"), site.names.fresh("method")
        module = printer.flat(refs.expr("module"))
        assert module is not None, "a dict read in a loop is bound to a name first"
        args = [ArgSpec(Text(method))]
        for param in ("inputs", "dynamic_shapes"):
            if param in shape:
                value = printer.flat(refs.expr(param))
                assert value is not None
                if shape[param] == "per_method":
                    value = f"{value}[{method_name}]"
                args.append(ArgSpec(Text(value), None if param == "inputs" else param))
        args.append(ArgSpec(Text("True"), "strict"))
        unit = printer.unit
        head = f"{unit}{programs}[{method_name}] = "
        text = printer.render(CallSpec(export, tuple(args)), unit, base + len(head), base)
        prelude += [
            f"{programs} = {{}}",
            f"for {method_name}, {method} in {module}.items():{printer.newline}{head}{text}",
        ]
        return refs, prelude, programs

    def _export(self, site: Site, refs: References) -> CallSpec:
        args = [
            refs.arg("module", keyword=False, comments=True),
            refs.arg("inputs", keyword=False, comments=True),
            *refs.keywords(["dynamic_shapes"], comments=True),
            # The specs pick the backend whose export-stage passes run (LPAI's differ from HTP's).
            refs.arg("compiler_specs", keyword=True, comments=True),
        ]
        return CallSpec(site.import_name(QNN_PASSES, "qnn_export"), tuple(args))

    def _lower(
        self,
        site: Site,
        refs: References,
        programs: Text,
        *,
        first_arg: Text,
        func: Seq | None = None,
    ) -> CallSpec:
        specs = refs.arg("compiler_specs", keyword=False)
        transform = CallSpec(
            site.import_name(QNN_PASSES, "qnn_transform_passes"),
            (ArgSpec(programs), specs, *refs.keywords(TRANSFORM_KEYWORDS, comments=True)),
        )
        partitioners = CallSpec(
            site.import_name(QNN_PASSES, "qnn_partitioners"),
            (
                ArgSpec(programs),
                refs.arg("compiler_specs", keyword=False),
                *refs.keywords(["skip_node_id_set", "skip_node_op_set"]),
                *refs.keywords(["skip_mutable_buffer"], comments=True),
            ),
        )
        args = [ArgSpec(first_arg)]
        if func is not None:
            args.append(ArgSpec(programs))
        args += [
            ArgSpec(transform, keyword="transform_passes"),
            ArgSpec(partitioners, keyword="partitioner"),
            *refs.keywords(["constant_methods"], comments=True),
            ArgSpec(CallSpec(site.import_name(QNN_PASSES, "qnn_compile_config")), "compile_config"),
            *refs.keywords(["generate_etrecord"], comments=True),
        ]
        name = site.import_name(EXIR, "to_edge_transform_and_lower")
        return CallSpec(
            func if func is not None else name,
            tuple(args),
            dangling=site.bound.dangling_comments,
        )


# Where the comments of each argument land (its first use that carries comments), and the
# parameters of the old call that the call there takes by keyword. None: the comments after
# the last argument, which end the generic call.
_GENERIC = ("constant_methods", "generate_etrecord")
_COMMENTS_LAND_IN: dict[str | None, tuple[str, ...]] = {
    **{p: TRANSFORM_KEYWORDS for p in TRANSFORM_KEYWORDS},
    "skip_mutable_buffer": ("skip_node_id_set", "skip_node_op_set", "skip_mutable_buffer"),
    "constant_methods": _GENERIC,
    "generate_etrecord": _GENERIC,
    None: _GENERIC,
    "dynamic_shapes": ("dynamic_shapes",),
}


def _comment_stays(param: str | None, named: str) -> bool:
    """True if a comment naming the parameter ``named``, written with the argument
    ``param``, lands in a call that takes ``named``."""
    return named in _COMMENTS_LAND_IN.get(param, ())


def _forward(refs: References, param: str, shape: dict[str, str]) -> ArgSpec:
    """``param`` as an argument of the export of one module: its value for the method
    "forward" when it is keyed by the method names, else the value itself."""
    arg = refs.arg(param, keyword=param != "inputs", comments=True)
    if shape.get(param) != "per_method":
        return arg
    return ArgSpec(
        Seq((arg.value, Text('["forward"]'))),
        arg.keyword,
        arg.comments_before,
        arg.trailing_comment,
    )


def _canonical_shape(site: Site) -> dict[str, str] | None:
    """How the canonical flow exports this call's module, when the source shows it.

    ``module`` maps to "dict" for a dict of methods (absent for one module, the method
    "forward"); ``inputs``/``dynamic_shapes`` (when passed) to "per_method" (a dict keyed by
    the method names: each method's own value is selected) or "shared" (one value for every
    method), as the wrapper's ``ensure_graph_specific_dict`` decides. None: only the run can
    tell (then ``qnn_export`` decides there, as the wrapper did).
    """
    knowledge = site.knowledge
    module = site.bound.args["module"].value
    shape: dict[str, str] = {}
    if site.one_method or knowledge.is_not_dict(module):
        keys: frozenset[str] | None = frozenset({"forward"})  # the wrapper's {"forward": module}
    else:
        keys = knowledge.dict_keys(module)
        if keys is None:
            return None
        shape["module"] = "dict"
    for param in ("inputs", "dynamic_shapes"):
        passed = site.bound.args.get(param)
        if passed is None or (isinstance(passed.value, cst.Name) and passed.value.value == "None"):
            continue
        if knowledge.is_not_dict(passed.value):
            shape[param] = "shared"
            continue
        found = knowledge.dict_keys(passed.value)
        if found is None:
            return None  # a dict or not, keyed by the methods or not: only the run knows
        # A dict keyed by exactly the method names is per method; one keyed otherwise
        # serves every method whole.
        shape[param] = "per_method" if found == keys else "shared"
    return shape
