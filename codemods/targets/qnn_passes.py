"""The default target: ExecuTorch's generic call, with the QNN specifics from ``qnn_passes``.

Before (any mix of positional and keyword arguments)::

    edge = to_edge_transform_and_lower_to_qnn(model, inputs, specs, skip_node_op_set=ops)

After, where the call may have statements of its own::

    programs = qnn_export(model, inputs)
    with qnn_manager_context(specs, programs):
        edge = to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(programs, specs, skip_node_op_set=ops),
            partitioner=qnn_partitioners(programs, specs, skip_node_op_set=ops),
            compile_config=qnn_compile_config(),
        )

After, where it must stay one expression (comprehensions, lambdas, conditional branches)::

    qnn_manager_context(specs, (programs := qnn_export(model, inputs))).run(
        to_edge_transform_and_lower,
        programs,
        transform_passes=qnn_transform_passes(programs, specs, skip_node_op_set=ops),
        partitioner=qnn_partitioners(programs, specs, skip_node_op_set=ops),
        compile_config=qnn_compile_config(),
    )

``qnn_passes`` decides at run time whether ``model`` is one module or a dict of methods and
broadcasts the per-method arguments exactly as the wrapper did, so nothing is guessed here.
"""

from __future__ import annotations

from codemods.layout import ArgSpec, CallSpec, Seq, Text
from codemods.targets.argument_plan import bind_arguments, plan_arguments
from codemods.targets.site import References, Site, StatementRewrite

QNN_PASSES = "qnn_passes"
EXIR = "executorch.exir"

# Where each argument first appears in the new code (statement form).
STATEMENT_ORDER = (
    "module",
    "inputs",
    "dynamic_shapes",
    "compiler_specs",
    "passes_job",
    "dep_table",
    "skip_node_id_set",
    "skip_node_op_set",
    "convert_linear_to_conv2d",
    "skip_mutable_buffer",
    "constant_methods",
    "generate_etrecord",
)
# In the expression form the context's first argument, the specs, comes first.
EXPRESSION_ORDER = ("compiler_specs", *(p for p in STATEMENT_ORDER if p != "compiler_specs"))
USES = {"compiler_specs": 3, "skip_node_id_set": 2, "skip_node_op_set": 2}

TRANSFORM_KEYWORDS = (
    "passes_job",
    "dep_table",
    "skip_node_id_set",
    "skip_node_op_set",
    "convert_linear_to_conv2d",
)
PARTITIONER_KEYWORDS = ("skip_node_id_set", "skip_node_op_set", "skip_mutable_buffer")


class QnnPassesTarget:
    """Writes ``to_edge_transform_and_lower`` with the ``qnn_passes`` helpers."""

    name = "qnn-passes"

    def statement(self, site: Site) -> StatementRewrite:
        """``programs = qnn_export(...)``, then the call inside ``with qnn_manager_context``."""
        plan = plan_arguments(site.bound, order=STATEMENT_ORDER, uses=USES, statements=True)
        refs, prelude = bind_arguments(site, plan)
        programs = site.names.fresh("programs")
        export = self._export(site, refs)
        head = f"{programs} = "
        prelude.append(head + site.printer.render(export, "", site.block_column + len(head)))
        context = CallSpec(
            site.import_name(QNN_PASSES, "qnn_manager_context"),
            (refs.arg("compiler_specs", keyword=False, comments=True), ArgSpec(Text(programs))),
        )
        context_text = site.printer.render(context, "", site.block_column + len("with "))
        call = self._lower(site, refs, Text(programs), first_arg=Text(programs))
        column = site.block_column + len(site.printer.unit) + site.call_column
        return StatementRewrite(
            prelude=tuple(prelude),
            context=context_text,
            call=site.printer.render(call, site.indent, column),
        )

    def expression(self, site: Site) -> str:
        """``qnn_manager_context(specs, (programs := qnn_export(...))).run(...)``."""
        plan = plan_arguments(site.bound, order=EXPRESSION_ORDER, uses=USES, statements=False)
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
        return site.printer.render(run, site.indent, column)

    def _export(self, site: Site, refs: References) -> CallSpec:
        return CallSpec(
            site.import_name(QNN_PASSES, "qnn_export"),
            (
                refs.arg("module", keyword=False, comments=True),
                refs.arg("inputs", keyword=False, comments=True),
                *refs.keywords(["dynamic_shapes"], comments=True),
            ),
        )

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
