"""Which CEL library evaluates DRA selectors: the three candidates on the same expressions.

Run in an environment with all three installed (`pip install common-expression-language
cel-expr-python cel-python`): `python -m benchmarks.cel_libraries`. For each library it checks the
answers on the expressions DRA classes and claims use (driver, attribute, quantity comparison
through a member function, a missing key as an error) and times compile-once / evaluate-per-device.
Not part of `make bench`: it chose the library (README, "DynamicResources").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

GI = 2 ** 30
EXPRESSIONS: list[tuple[str, bool | None]] = [
    ('device.driver == "gpu.example.com"', True),
    ('device.attributes["gpu.example.com"].model == "a100"', True),
    ('device.attributes["gpu.example.com"].cores > 4', True),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("10Gi")) >= 0', True),
    ('device.attributes["gpu.example.com"].missing == "x"', None),  # None: must be an error
]


def _device(i: int) -> dict[str, Any]:
    return {"driver": "gpu.example.com", "allowMultipleAllocations": False,
            "attributes": {"gpu.example.com": {"model": "a100", "cores": 8 + i % 3}},
            "capacity": {"gpu.example.com": {"memory": {"milli": 40 * GI * 1000}}}}


def _quantity(text: str) -> dict[str, int]:
    return {"milli": int(text.removesuffix("Gi")) * GI * 1000}


def _compare(a: Any, b: Any) -> int:
    return (a["milli"] > b["milli"]) - (a["milli"] < b["milli"])


def rust_backed() -> Callable[[str], Callable[[dict[str, Any]], Any]]:
    import cel

    def compile_(expr: str) -> Callable[[dict[str, Any]], Any]:
        program = cel.compile(expr)
        ctx = cel.Context(functions={"quantity": _quantity, "compareTo": _compare})

        def run(device: dict[str, Any]) -> Any:
            ctx.add_variable("device", device)
            return program.execute(ctx)
        return run
    return compile_


def google_runtime() -> Callable[[str], Callable[[dict[str, Any]], Any]]:
    from cel_expr_python import cel

    dyn = cel.Type.DYN
    env = cel.NewEnv(variables={"device": dyn}, functions=[
        cel.FunctionDecl("quantity", [cel.Overload("quantity_string", dyn, [cel.Type.STRING],
                                                   impl=_quantity)]),
        cel.FunctionDecl("compareTo", [cel.Overload("compare_to", cel.Type.INT, [dyn, dyn], is_member=True,
                                                    impl=_compare)]),
    ])

    def compile_(expr: str) -> Callable[[dict[str, Any]], Any]:
        program = env.compile(expr)

        def run(device: dict[str, Any]) -> Any:
            value = program.eval(data={"device": device})
            if value.type() == cel.Type.ERROR:
                raise RuntimeError(str(value.value()))
            return value.plain_value()
        return run
    return compile_


def pure_python() -> Callable[[str], Callable[[dict[str, Any]], Any]]:
    import celpy

    env = celpy.Environment()

    def quantity(text: Any) -> Any:
        return celpy.json_to_cel(_quantity(str(text)))

    def compare(a: Any, b: Any) -> Any:
        return celpy.celtypes.IntType(_compare(a, b))

    def compile_(expr: str) -> Callable[[dict[str, Any]], Any]:
        program = env.program(env.compile(expr), functions={"quantity": quantity, "compareTo": compare})

        def run(device: dict[str, Any]) -> Any:
            out = program.evaluate({"device": celpy.json_to_cel(device)})
            if isinstance(out, celpy.CELEvalError):
                raise RuntimeError(str(out))
            return out
        return run
    return compile_


def measure(name: str, factory: Callable[[], Callable[[str], Callable[[dict[str, Any]], Any]]],
            devices: int = 2000) -> None:
    try:
        compile_ = factory()
    except Exception as exc:  # a library that is not installed or cannot start
        print(f"{name}: unavailable ({type(exc).__name__}: {exc})")
        return
    correct = 0
    for expr, want in EXPRESSIONS:
        try:
            got: Any = compile_(expr)(_device(0))
            ok = want is not None and bool(got) == want
        except Exception:
            ok = want is None
        correct += ok
    timings = []
    batch = [_device(i) for i in range(devices)]
    for expr in (EXPRESSIONS[1][0], EXPRESSIONS[3][0]):
        try:
            run = compile_(expr)
            start = time.perf_counter()
            for d in batch:
                run(d)
            per = (time.perf_counter() - start) / devices * 1e6
            start = time.perf_counter()
            for _ in range(200):
                compile_(expr)
            comp = (time.perf_counter() - start) / 200 * 1e6
            timings.append(f"evaluate {per:.1f} us/device, compile {comp:.0f} us")
        except Exception as exc:
            timings.append(f"fails: {str(exc)[:70]}")
    print(f"{name}: {correct}/{len(EXPRESSIONS)} answers right; attribute: {timings[0]}; quantity: {timings[1]}")


if __name__ == "__main__":
    measure("common-expression-language (Rust)", rust_backed)
    measure("cel-expr-python (Google C++)", google_runtime)
    measure("cel-python (pure Python)", pure_python)
