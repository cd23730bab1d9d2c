"""Plugin args refuse fields their model does not declare, whatever the model's own `extra` says.

The in-tree plugins' args models forbid extra fields (`args.scoringStrategi: Extra inputs are not
permitted`), as upstream's strict decoding of KubeSchedulerConfiguration does. A plugin of one's
own brings its own pydantic model, often a plain `BaseModel`, which silently ignores a misspelt
field. `strict_args_model` gives the model to validate args with: the model itself when it and
every model reachable through its fields already forbid extra fields; otherwise subclasses of them
(same names, fields, defaults and validators) that forbid them at every level. The author's classes
are never changed: the args a plugin receives are still validated by its own model.

Only pydantic models are made strict: a field typed as a dataclass or a TypedDict keeps its own
handling of unknown keys.
"""

from __future__ import annotations

import logging
import types
import typing
from functools import lru_cache
from typing import Annotated, Any, ForwardRef, Literal, Union, get_args, get_origin

from pydantic import BaseModel, RootModel
from pydantic.fields import FieldInfo

logger = logging.getLogger(__name__)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation names (inside unions, containers, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is None or origin is Literal:
        return []
    found: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found += _models_in(arg)
    return found


def _reachable(model: type[BaseModel]) -> list[type[BaseModel]]:
    """`model` and every model reachable through the annotations of its fields, each once."""
    seen: list[type[BaseModel]] = []
    todo = [model]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.append(m)
        for field in m.model_fields.values():
            todo += _models_in(field.annotation)
    return seen


def _is_strict(model: type[BaseModel]) -> bool:
    return issubclass(model, RootModel) or model.model_config.get("extra") == "forbid"


def _rewrite(annotation: Any, refs: dict[type[BaseModel], ForwardRef]) -> Any:
    """`annotation` with each model replaced by the forward reference to its strict subclass."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return refs.get(annotation, annotation)
    origin = get_origin(annotation)
    if origin is None or origin is Literal:
        return annotation
    args = get_args(annotation)
    new = tuple(_rewrite(a, refs) for a in args)
    if all(a is b for a, b in zip(args, new, strict=True)):
        return annotation
    if origin is Annotated:
        return Annotated[(new[0], *annotation.__metadata__)]
    if origin is Union or origin is types.UnionType:
        return Union[new]  # noqa: UP007 (a runtime union of a tuple)
    if isinstance(annotation, types.GenericAlias):  # list[...], dict[...], tuple[...]
        return types.GenericAlias(origin, new)
    return annotation.copy_with(new)  # typing.List[...], collections.abc.Sequence[...], ...


def _field(info: FieldInfo, annotation: Any) -> tuple[Any, FieldInfo]:
    copied = FieldInfo.merge_field_infos(info)
    copied.annotation = annotation
    return annotation, copied


@lru_cache(maxsize=256)
def strict_args_model(model: type[BaseModel]) -> type[BaseModel]:
    """The model to validate a plugin's args with: one that refuses undeclared fields at every
    level (see the module's docstring)."""
    models = _reachable(model)
    if all(_is_strict(m) for m in models):
        return model
    try:
        return _strict_subclasses(models)
    except Exception as exc:  # a construct of the author's model this cannot subclass
        logger.warning("args model %s.%s: cannot refuse undeclared fields (%s: %s); they are left to the model",
                       model.__module__, model.__qualname__, type(exc).__name__, exc)
        return model


def _strict_subclasses(models: list[type[BaseModel]]) -> type[BaseModel]:
    """The strict subclass of `models[0]`, built with those of the models it reaches."""
    refs = {m: ForwardRef(f"_kubeberth_strict_{i}") for i, m in enumerate(models)}
    namespace: dict[str, Any] = {}
    built: dict[type[BaseModel], type[BaseModel]] = {}
    for m in models:
        body: dict[str, Any] = {"__module__": m.__module__, "__qualname__": m.__qualname__,
                                "__doc__": m.__doc__, "__annotations__": {}}
        if not issubclass(m, RootModel):
            body["model_config"] = {**m.model_config, "extra": "forbid", "defer_build": True}
        else:
            body["model_config"] = {**m.model_config, "defer_build": True}
        for name, info in m.model_fields.items():
            annotation = _rewrite(info.annotation, refs)
            if annotation is not info.annotation:
                body["__annotations__"][name], body[name] = _field(info, annotation)
        metaclass: Any = type(m)  # pydantic's ModelMetaclass
        built[m] = typing.cast(type[BaseModel], metaclass(m.__name__, (m,), body))
        namespace[refs[m].__forward_arg__] = built[m]
    for strict in built.values():
        strict.model_rebuild(force=True, _types_namespace=namespace)
    return built[models[0]]
