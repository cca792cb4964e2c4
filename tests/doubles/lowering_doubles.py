"""Recording doubles of everything a QNN lowering calls, and a double of ExecuTorch 1.5.1's wrapper.

Used by the rewrite's differential checker (tests/codemods/test_scenario_differential.py),
which runs a script as written (its ``to_edge_transform_and_lower_to_qnn`` is
:func:`wrapper_double`) and as rewritten (its calls go to the doubles of ``torch.export``,
ExecuTorch's QNN pass manager, partitioner and context, ``to_edge_transform_and_lower`` and
the ``qnn_passes`` API), and compares what each run *did*, as a list of events:

* ``("user", label)``: the script's own side effects (an argument evaluated);
* ``("setup_sdk",)``, ``("amd_guard",)``: the wrapper's SDK setup and AMD MKLDNN guard;
* ``("export", module, inputs, dynamic_shapes, strict)``: one ``torch.export.export``;
* ``("context_enter", {method: specs})`` / ``("context_exit",)``: the QNN manager context;
* ``("lower", methods, constant_methods, compile_config, generate_etrecord)``: one
  ``to_edge_transform_and_lower``, where ``methods`` holds, per method in order, the program
  (what was exported), the backend whose export-stage passes ran on it, the to-edge pass
  configuration (pass table, dependency table, specs, skip sets, linear-to-conv2d) and the
  partitioners' configuration (specs, skip sets, skip_mutable_buffer).

Values are described structurally (:func:`describe`), so a copy of a dict of specs reads the
same as the dict. Nothing here imports torch or ExecuTorch: a script reaches these doubles
through :meth:`LoweringDoubles.importer`, an ``__import__`` that serves the modules the
original and the rewritten code import, and refuses any other ``executorch``/``torch``/
``qnn_passes`` module (so a rewrite that starts importing something new is noticed).

Deliberate differences of ``qnn_passes`` from the wrapper (qnn_passes/api.py) are kept in its
doubles, so the checker sees them: pass tables are copied, not mutated; the AMD guard runs
when the context is entered; a dict of specs keyed by other names is an error.
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable, Mapping
from typing import Any

from qnn_passes.errors import QnnConfigError
from qnn_passes.methods import as_methods, method_names, per_method, per_method_specs
from qnn_passes.methods import per_method_table as _per_method_table

Event = tuple[Any, ...]


# -- values a script passes ---------------------------------------------------------------------
class ModuleDouble:
    """Stands in for ``torch.nn.Module`` (a script's ``class Net(torch.nn.Module)``)."""

    def __init__(self, name: str = "module") -> None:
        self.name = name


class TensorDouble:
    """Stands in for an example input tensor."""

    def __init__(self, name: str) -> None:
        self.name = name


class CompileSpecDouble:
    """Stands in for one ``CompileSpec``; its backend and dump flag are what the options read."""

    def __init__(self, name: str, backend: str = "htp", dump: bool = False) -> None:
        self.name, self.backend, self.dump = name, backend, dump


def specs_double(name: str, backend: str = "htp", dump: bool = False) -> list[CompileSpecDouble]:
    """A list of compile specs, as ``generate_qnn_executorch_compiler_spec`` returns."""
    return [CompileSpecDouble(name, backend, dump)]


class PassDouble:
    """Stands in for a pass class, a key of ExecuTorch's pass tables."""

    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __repr__(self) -> str:
        return self.__name__


CONVERT_LINEAR = PassDouble("ConvertLinearToConv2d")


class TableDouble(dict[Any, Any]):
    """Stands in for a pass table (``passes_job`` or ``dep_table``): keyed by pass classes.

    ``mutations`` records what ExecuTorch's pass manager wrote into it (the wrapper's
    ``get_to_edge_transform_passes`` switches ConvertLinearToConv2d on in the caller's table).
    """

    def __init__(self, name: str) -> None:
        super().__init__({PassDouble(f"{name}.pass"): {"activate": True}, CONVERT_LINEAR: {}})
        self.name = name
        self.mutations: list[str] = []


class ProgramDouble:
    """What the ``torch.export.export`` double returns; ``export_backend``: the backend whose
    export-stage passes ran on it (None: none ran yet)."""

    def __init__(self, module: Any, inputs: Any, shapes: Any) -> None:
        self.module, self.inputs, self.shapes = module, inputs, shapes
        self.export_backend: str | None = None


class PassesDouble:
    """The to-edge passes of one method, as their configuration."""

    def __init__(self, config: tuple[Any, ...], export_stage: str | None) -> None:
        self.config = config
        self.export_stage = export_stage  # the export-stage passes, run at to-edge (canonical flow)


class PartitionerDouble:
    """``QnnPartitioner`` (or ``qnn_passes``' partitioner), as its configuration."""

    def __init__(
        self,
        specs: Any,
        skip_node_id_set: Any = None,
        skip_node_op_set: Any = None,
        skip_mutable_buffer: Any = False,
    ) -> None:
        # As the real one: the backend type read from the specs when it is made.
        self.backend = _options(_option_bytes(specs)).backend_options.backend_type
        self.config = (
            describe(specs),
            describe(set() if skip_node_id_set is None else skip_node_id_set),
            describe(set() if skip_node_op_set is None else skip_node_op_set),
            describe(skip_mutable_buffer),
        )


class EdgeDouble:
    """What the ``to_edge_transform_and_lower`` double returns."""

    def __init__(self, methods: list[str]) -> None:
        self.methods = methods


class ConfigDouble:
    """``qnn_edge_config()`` / ``qnn_compile_config()``: EdgeCompileConfig(_check_ir_validity=False)."""


def describe(value: Any) -> Any:
    """A hashable, structural description of a value a script passes."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, ModuleDouble):
        return ("module", value.name)
    if isinstance(value, TensorDouble):
        return ("tensor", value.name)
    if isinstance(value, CompileSpecDouble):
        return ("spec", value.name)
    if isinstance(value, TableDouble):
        return ("table", value.name)
    if isinstance(value, ProgramDouble):
        return ("program", describe(value.module), describe(value.inputs), describe(value.shapes))
    if isinstance(value, ConfigDouble):
        return ("config", "edge")
    if isinstance(value, dict):
        return ("dict", tuple((k, describe(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(describe(v) for v in value))
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted(repr(v) for v in value)))
    return ("object", type(value).__name__)


def _backend(specs: Any) -> str:
    return _options(_option_bytes(specs)).backend_options.backend_type


def _option_bytes(specs: Any) -> tuple[CompileSpecDouble, ...]:
    """``generate_qnn_executorch_option``: fails as ExecuTorch does on a non-list."""
    if not isinstance(specs, list) or not all(isinstance(s, CompileSpecDouble) for s in specs):
        raise TypeError(f"compile specs must be a list of CompileSpec, got {describe(specs)!r}")
    return tuple(specs)


def _options(option: tuple[CompileSpecDouble, ...]) -> types.SimpleNamespace:
    """``flatbuffer_to_option``: the backend type and the dump flag."""
    return types.SimpleNamespace(
        backend_options=types.SimpleNamespace(backend_type=option[0].backend),
        dump_intermediate_outputs=any(s.dump for s in option),
    )


# -- the doubles of one run -----------------------------------------------------------------
class LoweringDoubles:
    """One run's doubles, recording into ``events``."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.tables: list[TableDouble] = []  # every table a pass manager double was given
        self.modules = self._modules()

    def user(self, label: str, value: Any = None) -> Any:
        """A script's side effect: ``effect("specs", value)`` records and returns ``value``."""
        self.events.append(("user", label))
        return value

    # primitives: torch.export and ExecuTorch's QNN API -----------------------------------------
    def setup_qnn_sdk(self) -> None:
        self.events.append(("setup_sdk",))

    def disable_mkldnn_on_amd(self) -> None:
        self.events.append(("amd_guard",))

    def export(
        self,
        mod: Any,
        args: Any,
        kwargs: Any = None,
        *,
        dynamic_shapes: Any = None,
        strict: bool = False,
    ) -> ProgramDouble:
        self.events.append(
            ("export", describe(mod), describe(args), describe(dynamic_shapes), strict)
        )
        if not isinstance(mod, ModuleDouble):
            raise TypeError(f"torch.export.export: expected a module, got {describe(mod)!r}")
        if not isinstance(args, tuple):
            raise TypeError(f"torch.export.export: args must be a tuple, got {describe(args)!r}")
        return ProgramDouble(mod, args, dynamic_shapes)

    def pass_manager_cls(self, backend_type: str = "htp") -> type:
        doubles = self

        class PassManagerDouble:
            def transform_for_export_pipeline(self, ep: ProgramDouble) -> ProgramDouble:
                ep.export_backend = backend_type  # in place, returns the same program
                return ep

            def get_to_edge_transform_passes(
                self,
                exported_program: ProgramDouble,
                passes_job: Any = None,
                dep_table: Any = None,
                compiler_specs: Any = None,
                skip_node_id_set: Any = None,
                skip_node_op_set: Any = None,
                convert_linear_to_conv2d: bool = False,
            ) -> list[PassesDouble]:
                for table in (passes_job, dep_table):
                    if table is not None and not isinstance(table, TableDouble):
                        raise TypeError(
                            f"a pass table must be keyed by passes: {describe(table)!r}"
                        )
                    if table is not None:
                        doubles.tables.append(table)
                if (
                    passes_job is not None
                    and CONVERT_LINEAR in passes_job
                    and convert_linear_to_conv2d
                ):
                    passes_job.mutations.append("ConvertLinearToConv2d activated")
                config = _transform_config(
                    passes_job,
                    dep_table,
                    compiler_specs,
                    skip_node_id_set,
                    skip_node_op_set,
                    convert_linear_to_conv2d,
                )
                return [PassesDouble(config, None)]

        return PassManagerDouble

    def manager_context(self, specs: Mapping[str, Any]) -> Any:
        doubles = self

        class QnnManagerContextDouble:
            def __enter__(self) -> None:
                doubles.events.append(("context_enter", describe(dict(specs))))

            def __exit__(self, *exc: object) -> None:
                doubles.events.append(("context_exit",))

        return QnnManagerContextDouble()

    def to_edge_transform_and_lower(
        self,
        programs: Any,
        transform_passes: Any = None,
        partitioner: Any = None,
        constant_methods: Any = None,
        compile_config: Any = None,
        generate_etrecord: bool = False,
    ) -> EdgeDouble:
        """Records each method as ExecuTorch normalises them (a non-dict is "forward")."""
        if not isinstance(programs, dict):
            programs = {"forward": programs}
        if not isinstance(transform_passes, dict):
            transform_passes = dict.fromkeys(programs, transform_passes)
        if not isinstance(partitioner, dict):
            partitioner = dict.fromkeys(programs, partitioner)
        methods = []
        for name, program in programs.items():
            passes = transform_passes.get(name) or []
            stage = program.export_backend
            for p in passes:
                stage = stage or p.export_stage
            methods.append(
                (
                    name,
                    describe(program),
                    stage,
                    tuple(p.config for p in passes),
                    tuple(p.config for p in partitioner.get(name) or []),
                )
            )
        self.events.append(
            (
                "lower",
                tuple(methods),
                describe(constant_methods),
                describe(compile_config),
                generate_etrecord,
            )
        )
        return EdgeDouble(list(programs))

    # the qnn_passes API (qnn_passes/api.py), over the same primitives --------------------------
    def qnn_export(
        self,
        model: Any,
        example_inputs: Any,
        dynamic_shapes: Any = None,
        *,
        compiler_specs: Any = None,
    ) -> Any:
        self.setup_qnn_sdk()
        models = as_methods(model)
        names = list(models)
        inputs = per_method(example_inputs, names)
        shapes = per_method(dynamic_shapes, names)
        specs = per_method_specs(compiler_specs, names) if compiler_specs is not None else None
        if specs is not None:
            _check_debugger(specs, isinstance(model, dict))
        programs = {}
        for name, module in models.items():
            if inputs[name] is None:
                raise QnnConfigError(f"qnn_export: no example inputs for method '{name}'")
            program = self.export(module, inputs[name], dynamic_shapes=shapes[name], strict=True)
            program.export_backend = _backend(specs[name]) if specs is not None else "htp"
            programs[name] = program
        return programs if isinstance(model, dict) else programs[names[0]]

    def qnn_transform_passes(
        self,
        programs: Any,
        compiler_specs: Any,
        passes_job: Any = None,
        dep_table: Any = None,
        skip_node_id_set: Any = None,
        skip_node_op_set: Any = None,
        convert_linear_to_conv2d: bool = False,
    ) -> Any:
        progs = as_methods(programs)
        names = list(progs)
        specs = per_method_specs(compiler_specs, names)
        _check_debugger(specs, isinstance(programs, dict))
        jobs = _per_method_table(passes_job, names, what="passes_job")
        tables = _per_method_table(dep_table, names, what="dep_table")
        result = {}
        for name in names:
            backend = _backend(specs[name])
            exported = progs[name].export_backend
            if exported is not None and exported != backend:
                raise QnnConfigError(f"method '{name}' was exported for another QNN backend")
            for table in (jobs[name], tables[name]):
                if table is not None and not isinstance(table, TableDouble):
                    raise QnnConfigError(
                        f"a pass table must be keyed by passes: {describe(table)!r}"
                    )
            config = _transform_config(
                jobs[name],
                tables[name],
                specs[name],
                skip_node_id_set,
                skip_node_op_set,
                convert_linear_to_conv2d,
            )
            # The export-stage passes run at to-edge for a program qnn_export did not make.
            result[name] = [PassesDouble(config, None if exported else backend)]
        return result if isinstance(programs, dict) else result[names[0]]

    def qnn_partitioners(
        self,
        programs: Any,
        compiler_specs: Any,
        skip_node_id_set: Any = None,
        skip_node_op_set: Any = None,
        skip_mutable_buffer: bool = False,
    ) -> Any:
        names = method_names(programs)
        specs = per_method_specs(compiler_specs, names)
        result = {
            name: [
                PartitionerDouble(
                    specs[name], skip_node_id_set, skip_node_op_set, skip_mutable_buffer
                )
            ]
            for name in names
        }
        return result if isinstance(programs, dict) else result[names[0]]

    def qnn_manager_context(self, compiler_specs: Any, programs: Any) -> Any:
        names = method_names(programs)
        specs = per_method_specs(compiler_specs, names)
        _check_debugger(specs, isinstance(programs, dict))
        doubles = self

        class QnnManagerSessionDouble:
            def __enter__(self) -> QnnManagerSessionDouble:
                doubles.disable_mkldnn_on_amd()  # qnn_passes applies the guard here
                doubles.events.append(("context_enter", describe(specs)))
                return self

            def __exit__(self, *exc: object) -> None:
                doubles.events.append(("context_exit",))

            def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
                with self:
                    return fn(*args, **kwargs)

        return QnnManagerSessionDouble()

    # the wrapper ------------------------------------------------------------------------------
    def wrapper(
        self,
        module: Any,
        inputs: Any,
        compiler_specs: Any,
        constant_methods: Any = None,
        dynamic_shapes: Any = None,
        dep_table: Any = None,
        passes_job: Any = None,
        skip_node_id_set: Any = None,
        skip_node_op_set: Any = None,
        skip_mutable_buffer: Any = False,
        generate_etrecord: Any = False,
        convert_linear_to_conv2d: Any = False,
    ) -> Any:
        """ExecuTorch 1.5.1's ``to_edge_transform_and_lower_to_qnn``, statement for statement
        (backends/qualcomm/utils/utils.py), over this run's primitives."""
        self.setup_qnn_sdk()
        self.disable_mkldnn_on_amd()
        ensure_graph_specific_dict = self.ensure_graph_specific_dict

        for compiler_spec in (
            compiler_specs.values() if isinstance(compiler_specs, dict) else [compiler_specs]
        ):
            obj_options = _options(_option_bytes(compiler_spec))
            if obj_options.dump_intermediate_outputs and isinstance(module, dict):
                assert len(module) == 1, "Intermediate Tensor Dump does not support multi-methods."

        if not isinstance(module, dict):
            module = {"forward": module}
        graph_names = module.keys()
        inputs = ensure_graph_specific_dict(inputs, graph_names)
        compiler_specs = ensure_graph_specific_dict(compiler_specs, graph_names)
        dynamic_shapes = ensure_graph_specific_dict(dynamic_shapes, graph_names)
        dep_table = ensure_graph_specific_dict(dep_table, graph_names)
        passes_job = ensure_graph_specific_dict(passes_job, graph_names)

        aten_programs = {}
        transform_passes = {}
        qnn_partitioners = {
            graph_name: [
                PartitionerDouble(
                    compiler_specs[graph_name],
                    skip_node_id_set=skip_node_id_set,
                    skip_node_op_set=skip_node_op_set,
                    skip_mutable_buffer=skip_mutable_buffer,
                )
            ]
            for graph_name in graph_names
        }
        for graph_name, m in module.items():
            ep = self.export(
                m, inputs[graph_name], dynamic_shapes=dynamic_shapes[graph_name], strict=True
            )
            backend_type = _options(
                _option_bytes(compiler_specs[graph_name])
            ).backend_options.backend_type
            pass_manager = self.pass_manager_cls(backend_type)()
            aten_programs[graph_name] = pass_manager.transform_for_export_pipeline(ep)
            transform_passes[graph_name] = pass_manager.get_to_edge_transform_passes(
                ep,
                passes_job=passes_job[graph_name],
                dep_table=dep_table[graph_name],
                compiler_specs=compiler_specs[graph_name],
                skip_node_id_set=skip_node_id_set,
                skip_node_op_set=skip_node_op_set,
                convert_linear_to_conv2d=convert_linear_to_conv2d,
            )
        with self.manager_context(compiler_specs):
            return self.to_edge_transform_and_lower(
                aten_programs,
                transform_passes=transform_passes,
                partitioner=qnn_partitioners,
                constant_methods=constant_methods,
                compile_config=ConfigDouble(),
                generate_etrecord=generate_etrecord,
            )

    @staticmethod
    def ensure_graph_specific_dict(value: Any, graph_names: Any) -> Any:
        """The wrapper's per-method normalisation (a nested function there)."""
        if value is None:
            return {graph_name: None for graph_name in graph_names}
        if isinstance(value, dict) and graph_names == value.keys():
            return value
        return {graph_name: value for graph_name in graph_names}

    def compiler_spec(
        self, soc_model: str = "SM8650", backend: str = "htp", dump: bool = False
    ) -> list[CompileSpecDouble]:
        """``generate_qnn_executorch_compiler_spec`` (never a dict)."""
        return specs_double(soc_model, backend, dump)

    # imports --------------------------------------------------------------------------------
    def _modules(self) -> dict[str, types.ModuleType]:
        def module(name: str, **attrs: Any) -> types.ModuleType:
            made = types.ModuleType(name)
            made.__dict__.update(attrs)
            return made

        qnn = "executorch.backends.qualcomm"
        wrapper_module = {
            "to_edge_transform_and_lower_to_qnn": self.wrapper,
            "generate_qnn_executorch_compiler_spec": self.compiler_spec,
            "qnn_edge_config": ConfigDouble,
        }
        option = {"generate_qnn_executorch_option": _option_bytes}
        modules = {
            "torch": module(
                "torch",
                nn=module("torch.nn", Module=ModuleDouble),
                export=module("torch.export", export=self.export),
            ),
            "executorch.exir": module(
                "executorch.exir", to_edge_transform_and_lower=self.to_edge_transform_and_lower
            ),
            f"{qnn}.utils.utils": module(f"{qnn}.utils.utils", **wrapper_module),
            f"{qnn}.export_utils": module(f"{qnn}.export_utils", **wrapper_module),
            f"{qnn}._passes.qnn_pass_manager": module(
                "qnn_pass_manager", get_qnn_pass_manager_cls=self.pass_manager_cls
            ),
            f"{qnn}.partition.qnn_partitioner": module(
                "qnn_partitioner", QnnPartitioner=PartitionerDouble, **option
            ),
            f"{qnn}.partition.utils": module("partition.utils", **option),
            f"{qnn}.serialization.qc_schema_serialize": module(
                "qc_schema_serialize", flatbuffer_to_option=_options
            ),
            f"{qnn}.utils.qnn_manager_lifecycle": module(
                "qnn_manager_lifecycle", QnnManagerContext=self.manager_context
            ),
            f"{qnn}.utils.qnn_sdk_setup": module(
                "qnn_sdk_setup",
                setup_qnn_sdk=self.setup_qnn_sdk,
                disable_mkldnn_on_amd=self.disable_mkldnn_on_amd,
            ),
            "qnn_passes": module(
                "qnn_passes",
                qnn_export=self.qnn_export,
                qnn_transform_passes=self.qnn_transform_passes,
                qnn_partitioners=self.qnn_partitioners,
                qnn_manager_context=self.qnn_manager_context,
                qnn_compile_config=ConfigDouble,
            ),
        }
        return modules

    def importer(self) -> Callable[..., Any]:
        """An ``__import__`` that serves the doubles (and the standard library)."""
        modules = self.modules
        real = builtins.__import__

        def double_import(
            name: str,
            globals: Any = None,
            locals: Any = None,
            fromlist: Any = (),
            level: int = 0,
        ) -> Any:
            if name in modules:
                return modules[name] if fromlist else modules[name.split(".")[0]]
            if name.split(".")[0] in ("torch", "executorch", "qnn_passes", "torchao"):
                raise ImportError(f"lowering_doubles has no double of module {name!r}")
            return real(name, globals, locals, fromlist, level)

        return double_import

    def namespace(self, **extra: Any) -> dict[str, Any]:
        """Globals for ``exec`` of a script: the doubled imports and ``effect``."""
        return {
            "__builtins__": {**builtins.__dict__, "__import__": self.importer()},
            "__name__": "scenario",
            "effect": self.user,
            **extra,
        }


def _transform_config(
    passes_job: Any,
    dep_table: Any,
    specs: Any,
    skip_node_id_set: Any,
    skip_node_op_set: Any,
    convert: Any,
) -> tuple[Any, ...]:
    return (
        describe(passes_job) if passes_job is not None else ("table", "default"),
        describe(dep_table) if dep_table is not None else ("table", "default"),
        describe(specs),
        describe(skip_node_id_set),
        describe(skip_node_op_set),
        describe(convert),
    )


def _check_debugger(specs: Mapping[str, Any], is_dict: bool) -> None:
    if not is_dict or len(specs) == 1:
        return
    if any(_options(_option_bytes(s)).dump_intermediate_outputs for s in specs.values()):
        raise QnnConfigError("dump_intermediate_outputs supports one method only")
