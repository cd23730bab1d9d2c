"""strict_args_model: a plugin's args model made to refuse undeclared fields at every level, the
author's classes untouched (the plugin still gets instances of them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

import kubeberth.config.args as args_module
from kubeberth.config.args import strict_args_model


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    meow: int = 0


class Dog(BaseModel):
    kind: Literal["dog"]
    woof: int = 0


class Tree(BaseModel):
    name: str = "t"
    children: list[Tree] = []


class Leaf(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    x: int = Field(default=1, ge=0)


class Args(BaseModel):
    label: str = "tier"
    pet: Annotated[Cat | Dog, Field(discriminator="kind")] = Cat()
    tree: Tree = Tree()
    leaves: tuple[Leaf, ...] = ()
    weight: int = Field(default=7, ge=0, le=100, alias="w")

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        if v == "bad":
            raise ValueError("bad label")
        return v


def errors(raw: dict[str, Any]) -> list[tuple[tuple[int | str, ...], str]]:
    with pytest.raises(ValidationError) as err:
        strict_args_model(Args).model_validate(raw)
    return [(e["loc"], e["msg"]) for e in err.value.errors()]


@pytest.mark.parametrize(("raw", "loc"), [
    ({"colour": 1}, ("colour",)),
    ({"pet": {"kind": "dog", "purr": 1}}, ("pet", "dog", "purr")),  # the union's tag, as pydantic names it
    ({"tree": {"children": [{"children": [{"leaves": 1}]}]}}, ("tree", "children", 0, "children", 0, "leaves")),
    ({"leaves": [{"x": 2}, {"y": 2}]}, ("leaves", 1, "y")),
    ({"weight": 5}, ("weight",)),  # the field's alias is its name in the args; the model would drop this
], ids=["top", "discriminated-union", "recursive", "tuple", "name-of-an-aliased-field"])
def test_undeclared_fields_are_refused(raw: dict[str, Any], loc: tuple[int | str, ...]) -> None:
    assert errors(raw) == [(loc, "Extra inputs are not permitted")]


def test_the_models_own_rules_still_apply() -> None:
    assert errors({"w": 101, "label": "bad"}) == [(("label",), "Value error, bad label"),
                                                  (("w",), "Input should be less than or equal to 100")]
    ok = strict_args_model(Args).model_validate({"w": 5, "pet": {"kind": "dog"}, "leaves": [{"x": 3}]})
    assert (ok.weight, ok.pet.kind, ok.leaves[0].x) == (5, "dog", 3)  # type: ignore[attr-defined]


def test_the_authors_classes_are_untouched() -> None:
    strict = strict_args_model(Args)
    assert strict is not Args and issubclass(strict, Args) and strict.__name__ == "Args"
    assert strict_args_model(Args) is strict  # built once
    assert Args.model_config.get("extra") is None and Leaf.model_config.get("extra") == "allow"
    assert Args.model_validate({"colour": 1, "leaves": [{"y": 2}]}).leaves[0].model_extra == {"y": 2}


def test_a_model_strict_at_every_level_is_its_own_strict_model() -> None:
    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int = 0

    class Outer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        inner: Inner = Inner()

    class Loose(BaseModel):
        inner: Inner = Inner()

    class OuterOfLoose(BaseModel):
        model_config = ConfigDict(extra="forbid")
        loose: list[Loose] = []

    assert strict_args_model(Outer) is Outer
    assert strict_args_model(OuterOfLoose) is not OuterOfLoose  # a loose model further down
    with pytest.raises(ValidationError, match=r"loose\.0\.b"):
        strict_args_model(OuterOfLoose).model_validate({"loose": [{"b": 1}]})


def test_a_model_that_cannot_be_subclassed_is_left_to_itself_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    class Odd(BaseModel):
        a: int = 0

    def fail(models: list[type[BaseModel]]) -> type[BaseModel]:
        raise TypeError("no")

    monkeypatch.setattr(args_module, "_strict_subclasses", fail)
    assert strict_args_model(Odd) is Odd
    assert f"args model {__name__}." in caplog.text and "cannot refuse undeclared fields (TypeError: no)" in caplog.text
