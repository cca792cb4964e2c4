"""The default target: ExecuTorch's generic call, with the QNN specifics from ``qnn_passes``.

Before (any mix of positional and keyword arguments)::

    edge = to_edge_transform_and_lower_to_qnn(model, inputs, specs, skip_node_op_set=ops)

After, where the call may have statements of its own::

    programs = qnn_export(model, inputs, compiler_specs=specs)
    with qnn_manager_context(specs, programs):
        edge = to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(programs, specs, skip_node_op_set=ops),
            partitioner=qnn_partitioners(programs, specs, skip_node_op_set=ops),
            compile_config=qnn_compile_config(),
        )

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

``qnn_passes`` decides at run time whether ``model`` is one module or a dict of methods and
broadcasts the per-method arguments exactly as the wrapper did, so nothing is guessed here.
"""

from __future__ import annotations

from qnn_migrate.codemods.deprecations import Deprecation, TargetSpec
from qnn_migrate.codemods.layout import ArgSpec, CallSpec, Seq, Text
from qnn_migrate.codemods.targets.argument_plan import bind_arguments, plan_arguments
from qnn_migrate.codemods.targets.site import References, Site, StatementRewrite

QNN_PASSES = "qnn_passes"
EXIR = "executorch.exir"

USES = {"compiler_specs": 4, "skip_node_id_set": 2, "skip_node_op_set": 2}

TRANSFORM_KEYWORDS = (
    "passes_job",
    "dep_table",
    "skip_node_id_set",
    "skip_node_op_set",
    "convert_linear_to_conv2d",
)
PARTITIONER_KEYWORDS = ("skip_node_id_set", "skip_node_op_set", "skip_mutable_buffer")


class QnnPassesTarget:
    """Writes ``to_edge_transform_and_lower`` with the ``qnn_passes`` helpers.

    ``spec.first_use``: where each argument first appears in the new code (statement form);
    the first four are evaluated before the export, the first work the new code does. In the
    expression form the context's first argument, the specs, comes first.
    """

    def __init__(self, spec: TargetSpec, deprecation: Deprecation) -> None:
        self.name = spec.name
        self.statement_order = spec.first_use
        self.expression_order = (
            "compiler_specs",
            *(p for p in spec.first_use if p != "compiler_specs"),
        )

    def statement(self, site: Site) -> StatementRewrite:
        """``programs = qnn_export(...)``, then the call inside ``with qnn_manager_context``."""
        plan = plan_arguments(
            site.bound, order=self.statement_order, uses=USES, statements=True, work_starts=4
        )
        refs, prelude = bind_arguments(site, plan)
        programs = site.names.fresh("programs")
        export = self._export(site, refs)
        head = f"{programs} = "
        base = site.block_column
        prelude.append(head + site.printer.render(export, "", base + len(head), base))
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
